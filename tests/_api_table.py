"""The parameter tables of docs/api.md ("One vocabulary"), rendered from the estimators' own
signatures so that the page cannot drift from the code (tests/test_api_table.py compares them).

    python -m tests._api_table      # prints the block to paste between the markers
"""
from __future__ import annotations

import inspect
from typing import Any

START = "<!-- params:start -->"
END = "<!-- params:end -->"

#: what each parameter name that two or more estimators share means (one name, one meaning;
#: where models read it differently the entry says how)
MEANING = {
    "n_components": "dimension of the embedding (Cr5/CL-LSI: r; WMF family: k; neural models: d)",
    "n_epochs": "passes over the training data (SGD models and BilDRL/BilBOWA)",
    "hidden_size": "width of the hidden layer (BilDRL's encoder; CompressTree's h, 0: linear)",
    "max_iter": "ALS iterations (WMF family)",
    "min_df": "a word must occur in at least this many documents (sentences) to enter the vocabulary",
    "max_features": "keep at most this many words per language (most frequent first)",
    "norm": "the vectoriser's row normalisation of tf-idf (\"l2\", or None: raw tf-idf)",
    "sublinear_tf": "term frequencies of the vectoriser made from texts: 1 + ln(count) (True) or the "
                    "papers' raw counts (False)",
    "alpha": "regularisation weight: the ridge λ (Cr5, GlossSpace, BilDRL's ridge encoder), the "
             "ALS λ (WMF family, \"auto\": scaled to the corpus), the L2 weight on updated rows (BiCVM, "
             "RankingEmbedding)",
    "learning_rate": "SGD / AdaGrad / AMSGrad step size",
    "word_learning_rate": "step size of the word vectors when it differs from `learning_rate`",
    "batch_size": "training pairs (rows) per minibatch",
    "init_scale": "standard deviation of the random initialisation",
    "margin": "hinge-loss margin (None: the model's rule, e.g. d/2 for BiCVM, d/32 for RankingEmbedding)",
    "random_state": "seed (int, 0 or more), None, or a NumPy Generator (not a legacy RandomState): initialisation, "
                    "sampling, order; what a seed guarantees: reliability.md, section Reproducibility",
    "show_progress": "progress bars of `fit`, the vectorisers' included (None follows "
                     "`linxling.set_show_progress`, False: none; see \"Progress bars, callbacks and interruption\")",
    "callback": "called as `callback(model, iteration, loss)` after each iteration or epoch, from 0 (Cr5: "
                "each eigen-solver iteration, loss = the largest relative Ritz residual); what the model is "
                "inside it: \"Progress bars, callbacks and interruption\"",
    "dtype": "floating type of the fitted arrays and of every output (float32 or float64)",
    "device": "\"cpu\", \"cuda\" or None (CuPy inputs imply \"cuda\")",
    "n_threads": "numba threads during fit (None: numba's setting)",
    "center": "subtract each language's mean training sentence vector in transform (sentence-pair SGD "
              "models; False: the papers' raw compositions)",
    "tokenizer": "callable text -> tokens (None: `linxling.text.tokenize`)",
    "language": "the language of a monolingual model (checked by `transform`)",
    "scale": "how documents are scaled into the space (Cr5: feature scaling; CL-LSI: `V_lᵀx` or folding-in)",
    "solver": ("linear solver: \"cg\" / \"cholesky\" (WMF family), \"auto\" / \"propack\" / \"arpack\" / "
               "\"randomized\" (CL-LSI)"),
    "cg_steps": "conjugate-gradient steps per ALS row solve",
    "cg_rtol": "relative tolerance of the conjugate-gradient solves",
    "missing_weight": "confidence weight of the zero entries (WMF's w_m)",
    "alignment_weight": "weight of the crosslingual alignment loss",
    "window": "context window (skip-gram) or training window of tokens (CompressTree)",
    "negative": "negative samples per (word, context) pair",
    "sample": "subsampling threshold of frequent words",
    "n_blocks": "blocks per epoch of the interleaved monolingual / parallel schedule",
}


def _estimators() -> list[tuple[str, type]]:
    import linxling
    from linxling._registry import names
    return [(n, getattr(linxling, n)) for n in names()]


def _params(cls: type) -> dict[str, Any]:
    renamed = getattr(cls, "_renamed_params", {})
    return {p: par.default for p, par in inspect.signature(cls).parameters.items()
            if p not in renamed and par.kind not in (par.VAR_POSITIONAL, par.VAR_KEYWORD)}


def _fmt(v: Any) -> str:
    if v is inspect.Parameter.empty:
        return "required"
    if isinstance(v, type):
        return v.__name__
    return repr(v).replace("|", "/")


def render() -> str:
    est = _estimators()
    params = {n: _params(c) for n, c in est}
    uses: dict[str, list[str]] = {}
    for n, ps in params.items():
        for p in ps:
            uses.setdefault(p, []).append(n)
    shared = [p for p in MEANING if p in uses and len(uses[p]) >= 2]
    lines = [START, "", "| parameter | meaning | default per estimator |", "|---|---|---|"]
    for p in shared:
        per = " · ".join(f"{n} `{_fmt(params[n][p])}`" for n in uses[p])
        lines.append(f"| `{p}` | {MEANING[p]} | {per} |")
    lines += ["", "Parameters one estimator has (defaults; their meaning is in the class docstring):", "",
              "| estimator | parameters |", "|---|---|"]
    for n, ps in params.items():
        own = [f"`{p}={_fmt(v)}`" for p, v in ps.items() if p not in shared]
        lines.append(f"| `{n}` | {', '.join(own) if own else '—'} |")
    renamed = [(n, old, new) for n, c in est for old, new in getattr(c, "_renamed_params", {}).items()]
    if renamed:
        lines += ["", "Old names, accepted until the next release with a FutureWarning: "
                  + "; ".join(f"`{n}({old}=)` → `{new}`" for n, old, new in renamed) + ".", ""]
    lines.append(END)
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
