"""BilDRL benchmarks: Table 2 on Wikt3l (both directions), paraphrase identification (Table 3),
training throughput, GRU kernel speed.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_bildrl [--epochs 5]

Word space (``--space``): ``mapped`` (monolingual skip-gram per language on glosses + Bible +
Wikt3l training definitions, then an orthogonal Procrustes map en -> fr learnt from the MUSE en-fr
*training* dictionary), ``bilbowa`` (skip-gram + Bible alignment), or Cr5 on Bible verses.
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
PAPER_PARAPHRASE_EN_FR = {"BiBOW": 54.53, "BiATT": 59.80, "GRU-MTL": 61.20, "ATT-MTL": 63.87,
                          "joint": 63.87 + 2.66}   # Table 3 (accuracy %), joint = ATT-MTL + 2.66
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
    except ImportError:
        out["torch"] = "not installed (pip install 'linxling[torch-peer]' --index-url https://download.pytorch.org/whl/cpu)"
        return out
    out["torch"] = torch_gru_peer(repeats, batch, length, hidden, layers, d_in)
    return out


def torch_gru_peer(repeats: int = 5, batch: int = 64, length: int = 15, hidden: int = 200, layers: int = 5,
                   d_in: int = 200) -> dict:
    """torch.nn.GRU (CPU, same sizes, same reset-after variant) vs the numba GRU stack, float32,
    interleaved in one process; both compute the input gradient too. torch uses
    ``torch.get_num_threads()`` threads; ours numba + BLAS threads as set by the environment."""
    import torch

    from linxling.kernels import encoders as K
    from linxling.kernels import encoders_reference as R
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    p = R.init_params("gru", d_in, hidden, hidden=hidden, n_layers=layers, rng=0, dtype=np.float32)
    X = rng.standard_normal((batch, length, d_in)).astype(np.float32)
    L = np.full(batch, length)
    G = rng.standard_normal((batch, hidden)).astype(np.float32)
    gru = torch.nn.GRU(d_in, hidden, num_layers=layers, batch_first=True)
    Xt = torch.from_numpy(X).requires_grad_(True)
    Gt = torch.from_numpy(G)

    def run_torch():
        gru.zero_grad(set_to_none=True)
        Xt.grad = None
        _, h = gru(Xt)
        (h[-1] * Gt).sum().backward()

    def run_ours():
        K.backward("gru", p, K.forward("gru", p, X, L)[1], G)

    for f in (run_torch, run_ours, run_torch, run_ours):
        f()
    times: dict = {"numba": [], "torch": []}
    for _ in range(repeats):
        for f, name in ((run_ours, "numba"), (run_torch, "torch")):
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
            "median_s": med, "ratio_torch_over_numba": med["torch"] / med["numba"],
            "loadavg": os.getloadavg()}


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


def bilbowa_corpus(train: dict, fr_gloss_words: int | None, lexicon: bool = False, lexicon_repeats: int = 3):
    """BilBOWA's text: ``(monolingual, parallel)``.

    Monolingual per language: the Bible verses, the denckring glosses (each prefixed by its
    headword, so a word co-occurs with its definition; French limited to ``fr_gloss_words``
    headwords) and the Wikt3l *training* definitions written in that language, prefixed by their
    headword (no test row is used). Parallel: the aligned en-fr Bible verses; with ``lexicon``
    also one single-word pair per distinct Wikt3l *training* translation pair (target, headword),
    repeated ``lexicon_repeats`` times (a seed lexicon; not part of BilBOWA as published).
    """
    from linxling.datasets import load_bible, load_glosses
    corpus = load_bible(["en", "fr"], unit="verse")
    parallel = {lang: list(corpus.texts[lang]) for lang in ("en", "fr")}
    mono = {lang: list(parallel[lang]) for lang in ("en", "fr")}
    for lang, limit in (("en", None), ("fr", fr_gloss_words)):
        words, glosses = load_glosses(lang, max_words=limit)
        mono[lang].extend(f"{w} {g}" for w, g in zip(words, glosses, strict=False))
    for tr in train.values():
        q = tr.definition_language
        mono[q].extend(f"{h} {x}" for _, x, h in tr.rows)
    if lexicon:
        pairs = sorted({(h, t) if tr.definition_language == "en" else (t, h)
                        for tr in train.values() for t, _, h in tr.rows})
        for _ in range(lexicon_repeats):
            parallel["en"].extend(e for e, _ in pairs)
            parallel["fr"].extend(f for _, f in pairs)
    return mono, parallel


def muse_check(model) -> dict:
    """Word translation on the MUSE en-fr test split (source words 5,000-6,499), cosine."""
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary, word_translation
    _, test = muse_split(read_muse_dictionary(shared_data_dir() / "muse" / "en-fr.txt"))
    ew, ev = model.word_vectors("en")
    fw, fv = model.word_vectors("fr")
    out = {}
    for sim in ("cosine",):
        r = word_translation(ew, ev, fw, fv, test, ks=(1, 10), similarity=sim, show_progress=False)
        out[sim] = {k: r[k] for k in ("P@1", "P@10", "n_queries", "n_missing")}
    return out


def fit_bilbowa(train: dict, args, cache: Path):
    import linxling
    from linxling.models.bilbowa import BilBOWA
    if cache.exists():
        return linxling.load(cache), None
    t = time.perf_counter()
    mono, par = bilbowa_corpus(train, args.fr_gloss_words, lexicon=args.lexicon)
    t_read = time.perf_counter() - t
    model = BilBOWA(n_components=args.bilbowa_components, epochs=args.bilbowa_epochs, min_count=2,
                    alignment_weight=args.alignment_weight, random_state=0, show_progress=False)
    t = time.perf_counter()
    model.fit(mono, par)
    info = {"read_s": t_read, "fit_s": time.perf_counter() - t,
            "tokens": {lang: sum(len(x.split()) for x in v) for lang, v in mono.items()},
            "vocab": {lang: len(model.words_[lang]) for lang in model.languages_},
            "parallel_pairs": len(par["en"]), "loadavg": os.getloadavg()}
    model.save(cache)
    return model, info


def muse_train_lexicon() -> list:
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary
    train, _ = muse_split(read_muse_dictionary(shared_data_dir() / "muse" / "en-fr.txt"))
    return list(train)


def fit_mapped(train: dict, args, cache: Path):
    """Monolingual skip-gram per language (BilBOWA, no alignment) + Procrustes en -> fr on the
    MUSE en-fr training pairs (the MUSE test split stays untouched)."""
    import linxling
    from linxling.models.bilbowa import BilBOWA
    if cache.exists():
        return linxling.load(cache), None
    t = time.perf_counter()
    mono, _ = bilbowa_corpus(train, args.fr_gloss_words)
    t_read = time.perf_counter() - t
    model = BilBOWA(n_components=args.bilbowa_components, epochs=args.bilbowa_epochs, min_count=2,
                    alignment_weight=0.0, mapping="procrustes", random_state=0, show_progress=False)
    t = time.perf_counter()
    model.fit(mono, None, seed_lexicon={("en", "fr"): muse_train_lexicon()})
    info = {"read_s": t_read, "fit_s": time.perf_counter() - t, "n_seed_pairs": model.n_seed_pairs_,
            "vocab": {lang: len(model.words_[lang]) for lang in model.languages_},
            "loadavg": os.getloadavg()}
    model.save(cache)
    return model, info


def paraphrase_data(train: dict, space, n_pairs: int):
    """Paraphrase pairs (Sec. 4.2) from ``n_pairs`` Wikt3l training translation pairs, negatives
    among the 6th-15th neighbours in the space's English vectors; their definitions are removed
    from the dictionary the models are trained on."""
    from linxling.evaluate import paraphrase_pairs
    ew, ev = space.word_vectors("en")
    pairs = paraphrase_pairs(train["fr-en"], train["en-fr"], ew, ev, max_pairs=n_pairs, random_state=0)
    held = set(pairs["en"]) | set(pairs["fr"])
    return pairs, held


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--cr5-components", type=int, default=100)
    ap.add_argument("--models", default="ridge,BOW,CNN,GRU,ATT,GRU-MTL,ATT-MTL,joint")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--speed-only", action="store_true", help="only the GRU kernel speed (vs torch if installed)")
    ap.add_argument("--space", choices=("bible", "bible+wikt3l", "bible+wikt3l+glosses", "bilbowa", "mapped"),
                    default="mapped")
    ap.add_argument("--paraphrase-pairs", type=int, default=3000,
                    help="translation pairs for paraphrase identification (0: skip); their "
                         "definitions are left out of the training dictionary")
    ap.add_argument("--joint-epochs", type=int, default=None, help="epochs of the joint model (default --epochs)")
    ap.add_argument("--joint-word-lr", type=float, default=0.025, help="word_learning_rate of the joint model")
    ap.add_argument("--out-name", default="bildrl.json", help="raw JSON file name in benchmarks/results/")
    ap.add_argument("--bilbowa-components", type=int, default=50)
    ap.add_argument("--bilbowa-epochs", type=int, default=3)
    ap.add_argument("--alignment-weight", type=float, default=10.0)
    ap.add_argument("--lexicon", action="store_true",
                    help="BilBOWA: also align the Wikt3l training translation pairs (seed lexicon)")
    ap.add_argument("--fr-gloss-words", type=int, default=50_000)
    args = ap.parse_args(argv)

    import linxling
    from linxling.datasets import load_wikt3l
    from linxling.evaluate import reverse_dictionary
    from linxling.models.bildrl import BilDRL
    from linxling.models.cr5 import Cr5

    res: dict = {"machine": machine(), "args": vars(args)}
    if args.speed_only:
        res["gru_speed"] = gru_speed()
        print(json.dumps(res, indent=1, default=str))
        return res
    train = {d: load_wikt3l(d, "train") for d in ("fr-en", "en-fr")}
    t0 = time.perf_counter()
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    if args.space == "mapped":
        cache = out / (f"bildrl_mapped_{args.bilbowa_components}_{args.bilbowa_epochs}_{args.fr_gloss_words}.h5")
        space, info = fit_mapped(train, args, cache)
        res["mapped"] = {"fit": info, "muse_en_fr_test": muse_check(space)}
        print(f"mapped space ({args.bilbowa_components} dims): {time.perf_counter() - t0:.1f}s (cached in "
              f"{cache.name}); MUSE en-fr test: {json.dumps(res['mapped']['muse_en_fr_test'])}", flush=True)
    elif args.space == "bilbowa":
        cache = out / (f"bildrl_bilbowa_{args.bilbowa_components}_{args.bilbowa_epochs}_"
                       f"{args.alignment_weight}_{args.fr_gloss_words}{'_lex' if args.lexicon else ''}.h5")
        space, info = fit_bilbowa(train, args, cache)
        res["bilbowa"] = {"fit": info, "muse_en_fr_test": muse_check(space)}
        print(f"BilBOWA ({args.bilbowa_components} dims): {time.perf_counter() - t0:.1f}s (cached in "
              f"{cache.name}); MUSE en-fr test: {json.dumps(res['bilbowa']['muse_en_fr_test'])}", flush=True)
    else:
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
        space = cr5
    test = {d: load_wikt3l(d, "test") for d in ("fr-en", "en-fr")}
    vocab = {l: set(space.word_vectors(l)[0]) for l in ("en", "fr")}
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

    from linxling.evaluate import paraphrase_identification
    para = None
    rows = train["fr-en"].dictionary() + train["en-fr"].dictionary()
    if args.paraphrase_pairs:
        para, held = paraphrase_data(train, space, args.paraphrase_pairs)
        n0 = len(rows)
        rows = [r for r in rows if r[2] not in held]
        res["paraphrase_data"] = {"pairs": len(para["label"]), "positives": int(para["label"].sum()),
                                  "train_rows_removed": n0 - len(rows)}
        print("paraphrase data:", json.dumps(res["paraphrase_data"]), flush=True)

        def run_paraphrase(A, B):
            """The paper's MLP on a - b, and on |a - b| of unit vectors (symmetric)."""
            out = {}
            for feat, norm in (("difference", False), ("abs_difference", True)):
                r = paraphrase_identification(A, B, para["label"], random_state=0, hidden=64, epochs=300,
                                              patience=30, features=feat, normalize=norm)
                out[feat] = {k: r[k] for k in ("accuracy", "validation_accuracy", "majority", "n_test",
                                               "best_epoch")}
            out["accuracy"] = out["difference"]["accuracy"]
            out["accuracy_abs"] = out["abs_difference"]["accuracy"]
            return out
        if hasattr(space, "transform"):     # BilBOWA's sentence vector: the mean of the word vectors
            res["paraphrase_mean_of_word_vectors"] = run_paraphrase(space.transform(para["en"], language="en"),
                                                                    space.transform(para["fr"], language="fr"))
            print("paraphrase, mean of word vectors:", json.dumps(res["paraphrase_mean_of_word_vectors"]), flush=True)
    joint_text = None
    specs = {"ridge": ("ridge", False), "ridge-MTL": ("ridge", True), "BOW": ("bow", False),
             "CNN": ("cnn", False), "GRU": ("gru", False), "ATT": ("att", False),
             "GRU-MTL": ("gru", True), "ATT-MTL": ("att", True), "BOW-MTL": ("bow", True),
             "joint": ("att", True)}
    res["models"] = {}
    for name in args.models.split(","):
        enc, mtl = specs[name]
        joint = name == "joint"
        epochs = args.joint_epochs if joint and args.joint_epochs else args.epochs
        model = BilDRL(encoder=enc, multitask=mtl, hidden_size=args.hidden, n_layers=args.layers,
                       epochs=epochs, learning_rate=1e-3, alpha=1.0, joint=joint,
                       word_learning_rate=args.joint_word_lr, random_state=0, show_progress=False)
        fit_kw = {}
        if joint:
            if joint_text is None:
                joint_text = bilbowa_corpus(train, args.fr_gloss_words)
            fit_kw = {"monolingual": joint_text[0], "parallel": joint_text[1]}
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(rows, space, **fit_kw)
        fit_s = time.perf_counter() - t
        n_used = len(rows) - sum(model.n_excluded_.values())
        entry = {"fit_s": fit_s, "rows_used": n_used, "n_excluded": model.n_excluded_,
                 "metrics": evaluate(model, mtl)}
        entry["loadavg_after"] = os.getloadavg()
        if enc != "ridge":
            entry["definitions_per_s"] = n_used * epochs / fit_s
            entry["loss_history"] = model.loss_history_
        if joint:
            entry["joint_history"] = model.joint_history_
            entry["muse_en_fr_test_after_joint"] = muse_check(model)
        if para is not None:
            entry["paraphrase"] = run_paraphrase(model.transform(para["en"], language="en", target_language="fr"),
                                                 model.transform(para["fr"], language="fr", target_language="en"))
        res["models"][name] = entry
        (out / args.out_name).write_text(json.dumps(res, indent=1, default=str))
        m = entry["metrics"]
        print(f"{name:<10} fit {fit_s:7.1f}s  " + "  ".join(
            f"{d}: P@1 {100 * m[d + '/cosine']['p@1']:.1f} P@10 {100 * m[d + '/cosine']['p@10']:.1f} "
            f"MRR {m[d + '/cosine']['mrr']:.3f}" for d in ("en-fr", "fr-en"))
            + (f"  {entry['definitions_per_s']:.0f} defs/s" if "definitions_per_s" in entry else "")
            + (f"  paraphrase {100 * entry['paraphrase']['accuracy']:.1f}% / |a-b| "
               f"{100 * entry['paraphrase']['accuracy_abs']:.1f}%" if "paraphrase" in entry else ""),
            flush=True)

    if not args.skip_speed:
        res["gru_speed"] = gru_speed()
        print("GRU fwd+bwd (batch 64, len 15, hidden 200, 5 layers):", json.dumps(res["gru_speed"]))
    (out / args.out_name).write_text(json.dumps(res, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
