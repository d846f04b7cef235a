"""How the linear models' defaults are checked: a validation split of the leaderboard's training verses.

The leaderboard trains on the Bible verses of six languages (en, es, ru, ar, zh, vi) outside its
150 held-out test chapters (``BibleCorpus.split(n_test=150, by="chapter", random_state=0)``).
Here those training verses are split again by chapter (150 chapters, ``random_state=1``): the
models are fitted on the rest and scored on the validation chapters' verses; no test verse is
read. Score: verse retrieval as the leaderboard's (CSLS P@1, 1,000 query verses against up to
4,000 candidate verses, seed 0), the mean over the ten directions en->X and X->en.

    python -m benchmarks.concept_defaults --model Cr5 --grid alpha n_components scale min_df
    python -m benchmarks.concept_defaults --model CrossWMF --grid solver missing_weight alpha n_components
    python -m benchmarks.concept_defaults --model BilingualWMF --grid missing_weight alpha
    python -m benchmarks.concept_defaults --model Cr5 --grid min_df_sizes --sizes 1000 3000   # min_df 1/2/3
    python -m benchmarks.concept_defaults --model Cr5 --grid sublinear_tf --unit chapter      # long documents

Each row: the parameters changed from the model's defaults (``{}``: the defaults), the
validation score, each direction's P@1 and the fit's seconds. Raw rows:
benchmarks/results/concept_defaults.jsonl (git-ignored), one JSON object per fit.
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

LANGS = ("en", "es", "ru", "ar", "zh", "vi")

#: per model, named grids of parameter changes from the defaults (each grid includes the defaults)
GRIDS: dict[str, dict[str, list[dict]]] = {
    "Cr5": {
        "alpha": [dict(alpha=a) for a in (0.1, 0.3, 0.6, 1.0, 2.0, 3.0, 10.0)],
        "n_components": [dict(n_components=r) for r in (100, 200, 300, 400)],
        "scale": [dict(), dict(scale="singular")],
        "min_df": [dict(min_df=m) for m in (1, 2, 3, 5)],
        "min_df_sizes": [dict(min_df=m) for m in (1, 2, 3)],
        "sublinear_tf": [dict(sublinear_tf=False), dict(sublinear_tf=True)],
    },
    "CLLSI": {
        "n_components": [dict(n_components=r) for r in (100, 200, 300, 400)],
        "scale": [dict(), dict(scale="fold_in")],
        "min_df": [dict(min_df=m) for m in (1, 3)],
        "sublinear_tf": [dict(sublinear_tf=False), dict(sublinear_tf=True)],
    },
    "CrossWMF": {
        "solver": [dict(), dict(solver="cholesky"), dict(cg_steps=6)],
        "missing_weight": [dict(missing_weight=w) for w in (0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 1.0)],
        # λ ("auto": min(20, n / 300) was chosen at w_m = 0.01) against w_m
        "alpha": [dict(missing_weight=w, alpha=lam) for w in (0.1, 0.3) for lam in (2.0, 20.0, 80.0)],
        "n_components": [dict(n_components=k) for k in (100, 200, 300)],
        "max_iter": [dict(), dict(max_iter=40)],
        "min_df": [dict(min_df=m) for m in (1, 3, 5)],
        "min_df_sizes": [dict(min_df=m) for m in (1, 2, 3)],
        "sublinear_tf": [dict(sublinear_tf=False), dict(sublinear_tf=True)],
        # "auto" λ (min(20, n / 300)) against the λ that a pivot_model fitted at WMF's own
        # defaults brings: min(1, n / 3000), 1 from 3,000 pivot sentences on
        "pivot_alpha": [dict(), dict(alpha=1.0)],
    },
    "BilingualWMF": {
        "missing_weight": [dict(missing_weight=w) for w in (0.01, 0.03, 0.1, 0.3)],
        "alpha": [dict(missing_weight=w, alpha=lam) for w in (0.1, 0.3) for lam in (2.0, 20.0, 80.0)],
        # "auto" λ = min(20, n / 300) against fixed ones at w_m 0.01 and 0.1 (with --sizes)
        "alpha_size": [dict(missing_weight=w, alpha=lam) for w in (0.01, 0.1)
                       for lam in ("auto", 0.3, 1.0, 3.0, 10.0, 20.0)],
        "min_df": [dict(min_df=m) for m in (1, 3)],
        "sublinear_tf": [dict(sublinear_tf=False), dict(sublinear_tf=True)],
    },
}


def split(languages=LANGS):
    """``(fit, val)``: the leaderboard's training verses, split again by chapter (seed 1)."""
    from linxling.datasets import load_bible
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        corpus = load_bible(list(languages), unit="verse")
    train, _test = corpus.split(n_test=150, by="chapter", random_state=0)
    return train.split(n_test=150, by="chapter", random_state=1)


class _Subset:
    """``n`` verses of a corpus (a random sample, seed 2), with the attributes the fits read."""

    def __init__(self, corpus, n: int):
        keep = np.sort(np.random.default_rng(2).permutation(len(corpus.keys))[:n])
        self.languages = list(corpus.languages)
        self.keys = [corpus.keys[i] for i in keep]
        self.texts = {lang: [corpus.texts[lang][i] for i in keep] for lang in self.languages}

    def concept_documents(self):
        texts, langs, concepts = [], [], []
        for lang in self.languages:
            texts += self.texts[lang]
            langs += [lang] * len(self.keys)
            concepts += list(range(len(self.keys)))
        return texts, langs, concepts


def parse_unit(value: str) -> str | int:
    """``--unit``: "verse", "chapter" or a number N of consecutive verses per document."""
    if value in ("verse", "chapter"):
        return value
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 'verse', 'chapter' or a positive number of verses, got {value!r}")
    return "verse" if n == 1 else n


class _Chapters(_Subset):
    """The fit split's chapters as documents (each chapter's verses joined by a space, in order):
    long documents, about 25 verses each, for the models fitted on them; with ``verses=N``,
    blocks of up to N consecutive verses of a chapter instead."""

    def __init__(self, corpus, verses: int | None = None):
        self.languages = list(corpus.languages)
        self.keys: list = []
        self.texts: dict = {lang: [] for lang in self.languages}
        for i, key in enumerate(corpus.keys):
            block = tuple(key[:2]) if verses is None else (*key[:2], (int(key[2]) - 1) // verses)
            if not self.keys or self.keys[-1] != block:
                self.keys.append(block)
                for lang in self.languages:
                    self.texts[lang].append(corpus.texts[lang][i])
            else:
                for lang in self.languages:
                    self.texts[lang][-1] += " " + corpus.texts[lang][i]


def score(embed, val, n_queries: int = 1000, n_candidates: int = 4000) -> tuple[float, dict]:
    """Mean CSLS P@1 of verse retrieval en->X and X->en on the validation verses, and each
    direction's: ``embed(texts, language, other_language) -> vectors`` (the other language
    picks a bilingual model's pair)."""
    from linxling.evaluate import retrieval
    rng = np.random.default_rng(0)
    n = len(val.keys)
    cand = np.sort(rng.choice(n, size=min(n_candidates, n), replace=False))
    qpos = np.sort(rng.choice(len(cand), size=min(n_queries, len(cand)), replace=False))
    per = {}
    for x in val.languages:
        if x == "en":
            continue
        E = {lang: embed([val.texts[lang][i] for i in cand], lang, other) for lang, other in (("en", x), (x, "en"))}
        for a, b in (("en", x), (x, "en")):
            per[f"{a}-{b}"] = float(retrieval(E[a][qpos], E[b], qpos, similarity="csls", show_progress=False)["P@1"])
    return float(np.mean(list(per.values()))), per


def fit_model(name: str, params: dict, fit, seed: int):
    """The model ``name`` at its defaults changed by ``params``, fitted on ``fit`` (BilingualWMF:
    one model per pair en-X, as the leaderboard's), and its ``embed(texts, language, other)``."""
    import linxling
    cls = getattr(linxling, name)
    kw = dict(random_state=seed, **params)
    if "show_progress" in cls().get_params():      # every estimator but SingleBlock (CL-LSI too, now)
        kw["show_progress"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if name in ("Cr5", "CLLSI"):
            texts, langs, concepts = fit.concept_documents()
            m = cls(**kw).fit(texts, langs, concepts)
        elif name == "CrossWMF":
            m = cls(pivot_language="en", **kw).fit(
                {lang: (fit.texts["en"], fit.texts[lang]) for lang in fit.languages if lang != "en"},
                X_pivot=fit.texts["en"])
        else:
            pairs = {x: cls(**kw).fit({"en": fit.texts["en"], x: fit.texts[x]}) for x in fit.languages if x != "en"}
            return lambda texts, lang, other: pairs[lang if lang != "en" else other].transform(texts, lang)
    return lambda texts, lang, other: m.transform(texts, lang)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.concept_defaults", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="Cr5", choices=sorted(GRIDS))
    ap.add_argument("--grid", nargs="+", default=["alpha"], metavar="GRID",
                    help="named grids of the model (Cr5: " + ", ".join(GRIDS["Cr5"]) + "; CLLSI: "
                         + ", ".join(GRIDS["CLLSI"]) + "; CrossWMF: " + ", ".join(GRIDS["CrossWMF"])
                         + "; BilingualWMF: " + ", ".join(GRIDS["BilingualWMF"]) + ")")
    ap.add_argument("--seed", type=int, default=0, help="random_state of the models")
    ap.add_argument("--languages", nargs="+", default=list(LANGS), metavar="LANG",
                    help="English and the languages paired with it")
    ap.add_argument("--sizes", nargs="+", type=int, metavar="N",
                    help="fit on N verses of the fit split (a random sample, seed 2) for each N, "
                         "instead of all of them (the validation verses stay the same)")
    ap.add_argument("--unit", type=parse_unit, default="verse", metavar="{verse,chapter,N}",
                    help="the documents the models are fitted on: the fit split's verses, its "
                         "chapters (long documents, about 25 verses each) or blocks of N "
                         "consecutive verses of a chapter; scored on the validation verses either way")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "concept_defaults.jsonl"))
    from benchmarks._cli import show_defaults
    a = show_defaults(ap).parse_args(argv)
    unknown = [g for g in a.grid if g not in GRIDS[a.model]]
    if unknown:
        ap.error(f"argument --grid: {a.model} has no grid {', '.join(map(repr, unknown))}; its grids: "
                 f"{', '.join(GRIDS[a.model])}")
    if "en" not in a.languages or len(set(a.languages)) < 2:
        ap.error("argument --languages: give en and at least one other language")
    fit_all, val = split(tuple(dict.fromkeys(a.languages)))
    if a.unit != "verse":
        if a.sizes:
            ap.error(f"argument --sizes: samples verses; not with --unit {a.unit}")
        fit_all = _Chapters(fit_all, None if a.unit == "chapter" else a.unit)
    what = {"verse": "verses", "chapter": "chapters"}.get(a.unit, f"blocks of {a.unit} verses")
    print(f"fit: {len(fit_all.keys)} {what}; validation: {len(val.keys)} verses of 150 training chapters",
          flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    for size in a.sizes or [None]:
        _run_grids(a, fit_all if size is None else _Subset(fit_all, size), val)
    return 0


def _run_grids(a, fit, val) -> None:
    """Every setting of the grids ``a.grid`` (each once) fitted on ``fit``, scored on ``val``."""
    done: list[dict] = []
    for grid in a.grid:
        for params in GRIDS[a.model][grid]:
            if params in done:
                continue
            done.append(params)
            t = time.perf_counter()
            embed = fit_model(a.model, params, fit, a.seed)
            seconds = time.perf_counter() - t
            s, per = score(embed, val)
            row = {"model": a.model, "params": params, "seed": a.seed, "val_csls_p1": round(s, 4),
                   "per_direction": {k: round(v, 3) for k, v in per.items()}, "fit_s": round(seconds, 1),
                   "n_fit": len(fit.keys), "n_val": len(val.keys), "languages": list(val.languages),
                   "unit": a.unit}
            print(json.dumps(row), flush=True)
            with open(a.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
