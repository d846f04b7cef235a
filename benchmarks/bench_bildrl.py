"""BilDRL benchmarks: the word space and Table 2 on Wikt3l (both directions), the validation runs
behind the defaults, paraphrase identification (Table 3), GRU kernel speed.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_bildrl --split test

``--ridge-alpha`` / ``--ridge-min-df`` (comma-separated values) fit each ridge model of
``--models`` once per combination: the validation grid behind the ridge encoder's defaults.

``--split test`` trains on every Wikt3l training row and scores the 500 held-out test targets per
direction; ``--split val`` carves 500 *training* targets per direction with all their rows
(:func:`linxling.datasets.wikt3l_validation_split`, ``random_state=0``), trains on the rest and
scores one definition of each: the split the defaults were chosen on (the test split is not read,
except by ``--split test``). A held-out target is ranked among its direction's candidates that
have a vector; **a gold target without a vector is a miss** (it counts in the denominators).

Word space (``--space``): ``gloss`` (default; :func:`linxling.models.gloss_space.wikt3l_gloss_space`:
each word's vector is the Cr5 embedding of its own glosses, Cr5 fitted on the Wikt3l training
translation pairs + MUSE en-fr training pairs), ``mapped`` (monolingual skip-gram per language
on Bible + glosses + training definitions, rotated en -> fr by Procrustes on the MUSE en-fr
training pairs), ``bilbowa`` (skip-gram + Bible alignment), or a Cr5 word space (``bible``,
``bible+wikt3l``, ``bible+wikt3l+glosses``). In every space the glosses that copy a held-out
definition (token-set Jaccard >= 0.5, :func:`linxling.models.gloss_space.overlap_mask`) are
dropped first. Per space the bench reports the coverage of the held-out golds, the *headword
oracle* (the held-out row's headword vector as the query: how well the space aligns
translations) and, for the gloss space, the *direct* query (the definition's own Cr5 document
embedding, no encoder), then every model of ``--models``. Raw JSON goes to benchmarks/results/.

The leaderboard's BilDRL entry calls :func:`fit_wikt3l` (the gloss space, then default BilDRL on
every training row; ``quick=True`` for the quick suite).
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

DIRECTIONS = ("en-fr", "fr-en")

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


# ----------------------------------------------------------------------------- data
def load_split(split: str, n_val: int = 500, seed: int = 0):
    """``(train, heldout)``: dicts direction -> :class:`linxling.datasets.Wikt3l`."""
    from linxling.datasets import load_wikt3l, wikt3l_validation_split
    train = {d: load_wikt3l(d, "train") for d in DIRECTIONS}
    if split == "test":
        return train, {d: load_wikt3l(d, "test") for d in DIRECTIONS}
    if split != "val":
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    parts = {d: wikt3l_validation_split(train[d], n_val, random_state=seed) for d in DIRECTIONS}
    return {d: p[0] for d, p in parts.items()}, {d: p[1] for d, p in parts.items()}


def excluded_definitions(split: str, heldout: dict):
    """What no gloss may copy: the held-out definitions by language (``"test"`` for the test split)."""
    if split == "test":
        return "test"
    out: dict = {}
    for h in heldout.values():
        out.setdefault(h.definition_language, []).extend(h.definitions)
    return out


def _excluded_texts(exclude) -> dict:
    from linxling.models.gloss_space import _excluded_definitions
    return _excluded_definitions(exclude, None)


def clean_glosses(lang: str, exclude, max_words: int | None = None, threshold: float = 0.5):
    """denckring glosses of ``lang`` minus those overlapping an excluded definition: ``(words, glosses)``."""
    from linxling.datasets import load_glosses
    from linxling.models.gloss_space import overlap_mask
    words, glosses = load_glosses(lang, max_words=max_words)
    refs = _excluded_texts(exclude).get(lang, [])
    bad = overlap_mask(glosses, refs, threshold) if refs else np.zeros(len(glosses), dtype=bool)
    return ([w for w, b in zip(words, bad, strict=True) if not b],
            [g for g, b in zip(glosses, bad, strict=True) if not b])


def word_space_corpus(space: str, train: dict, exclude, fr_gloss_words: int):
    """Documents for a Cr5 *word* space: ``(texts, languages, concepts)``.

    ``"bible"``: the aligned en-fr Bible verses (a concept per verse).
    ``"bible+wikt3l"``: plus one concept per *training* translation pair of Wikt3l
    (the English definitions of French word f with English headword e, and the French
    definitions of English word e with French headword f, each prefixed by the defined word).
    ``"bible+wikt3l+glosses"``: plus one monolingual concept per denckring headword
    (``"word gloss | gloss ..."``: English WordNet, French Wiktionary limited to
    ``fr_gloss_words`` headwords), decontaminated. No held-out row is used.
    """
    from linxling.datasets import load_bible
    corpus = load_bible(["en", "fr"], unit="verse")
    texts, langs, concepts = (list(x) for x in corpus.concept_documents())
    concepts = [f"verse {c}" for c in concepts]
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
                concepts.append(f"pair {key[0]}|{key[1]}")
    if space == "bible+wikt3l":
        return texts, langs, concepts
    for lang, limit in (("en", None), ("fr", fr_gloss_words)):
        words, glosses = clean_glosses(lang, exclude, max_words=limit)
        by_word: dict = {}
        for w, g in zip(words, glosses, strict=False):
            by_word.setdefault(w, [w]).append(g)
        for w, gs in by_word.items():
            texts.append(" ".join(gs))
            langs.append(lang)
            concepts.append(f"gloss {lang} {w}")
    return texts, langs, concepts


def bilbowa_corpus(train: dict, exclude, fr_gloss_words: int | None, lexicon: bool = False,
                   lexicon_repeats: int = 3):
    """BilBOWA's text: ``(monolingual, parallel)``.

    Monolingual per language: the Bible verses, the denckring glosses (decontaminated; each
    prefixed by its headword, so a word co-occurs with its definition; French limited to
    ``fr_gloss_words`` headwords) and the Wikt3l *training* definitions written in that language,
    prefixed by their headword. Parallel: the aligned en-fr Bible verses; with ``lexicon`` also
    one single-word pair per distinct Wikt3l *training* translation pair (target, headword),
    repeated ``lexicon_repeats`` times (a seed lexicon; not part of BilBOWA as published).
    """
    from linxling.datasets import load_bible
    corpus = load_bible(["en", "fr"], unit="verse")
    parallel = {lang: list(corpus.texts[lang]) for lang in ("en", "fr")}
    mono = {lang: list(parallel[lang]) for lang in ("en", "fr")}
    for lang, limit in (("en", None), ("fr", fr_gloss_words)):
        words, glosses = clean_glosses(lang, exclude, max_words=limit)
        mono[lang].extend(f"{w} {g}" for w, g in zip(words, glosses, strict=False))
    for tr in train.values():
        q = tr.definition_language
        mono[q].extend(f"{h} {x}" for _, x, h in tr.rows)
    if lexicon:
        for _ in range(lexicon_repeats):
            for e, f in wikt3l_pairs(train):
                parallel["en"].append(e)
                parallel["fr"].append(f)
    return mono, parallel


def wikt3l_pairs(train: dict) -> list:
    """The distinct (English, French) training translation pairs (target, headword) of Wikt3l."""
    return sorted({(h, t) if tr.definition_language == "en" else (t, h)
                   for tr in train.values() for t, _, h in tr.rows})


def muse_check(model) -> dict:
    """Word translation on the MUSE en-fr test split (source words 5,000-6,499), cosine."""
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary, word_translation
    _, test = muse_split(read_muse_dictionary(shared_data_dir() / "muse" / "en-fr.txt"))
    ew, ev = model.word_vectors("en")
    fw, fv = model.word_vectors("fr")
    r = word_translation(ew, ev, fw, fv, test, ks=(1, 10), similarity="cosine", show_progress=False)
    return {"cosine": {k: r[k] for k in ("P@1", "P@10", "n_queries", "n_missing")}}


def muse_train_lexicon() -> list:
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary
    train, _ = muse_split(read_muse_dictionary(shared_data_dir() / "muse" / "en-fr.txt"))
    return list(train)


# ----------------------------------------------------------------------------- word spaces
def build_space(name: str, train: dict, exclude, args):
    """``(space, info)`` for ``--space name``; every space is built from training rows only."""
    from linxling.models.bilbowa import BilBOWA
    from linxling.models.cr5 import Cr5
    from linxling.models.gloss_space import wikt3l_gloss_space
    t = time.perf_counter()
    info: dict = {}
    if name == "gloss":
        space = wikt3l_gloss_space(train, exclude, n_components=args.space_components or 200,
                                   bible=args.space_bible, muse=not args.no_muse, random_state=0)
        info = dict(space.info_)
    elif name in ("mapped", "bilbowa"):
        mono, par = bilbowa_corpus(train, exclude, args.fr_gloss_words,
                                   lexicon=args.lexicon and name == "bilbowa")
        d = args.space_components or 100
        if name == "mapped":
            model = BilBOWA(n_components=d, n_epochs=args.bilbowa_epochs, min_count=2,
                            learning_rate=args.bilbowa_learning_rate, alignment_weight=0.0,
                            mapping="procrustes", random_state=0, show_progress=False)
            seed = muse_train_lexicon() + (wikt3l_pairs(train) if args.lexicon else [])
            model.fit(mono, None, seed_lexicon={("en", "fr"): seed})
            info["n_seed_pairs"] = model.n_seed_pairs_
        else:
            model = BilBOWA(n_components=d, n_epochs=args.bilbowa_epochs, min_count=2,
                            learning_rate=args.bilbowa_learning_rate,
                            alignment_weight=args.alignment_weight, random_state=0, show_progress=False)
            model.fit(mono, par)
        info["tokens"] = {lang: sum(len(x.split()) for x in v) for lang, v in mono.items()}
        space = model
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            texts, langs, concepts = word_space_corpus(name, train, exclude, args.fr_gloss_words)
            space = Cr5(n_components=args.space_components or 100, min_df=2, random_state=0,
                        show_progress=False).fit(texts, langs, concepts)
    info["fit_s"] = time.perf_counter() - t
    info["loadavg"] = os.getloadavg()
    if name != "gloss":
        info["muse_en_fr_test"] = muse_check(space)
    return space, info


def _unit(V):
    V = np.asarray(V, dtype=np.float64)
    n = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(n > 0, n, 1.0)


def space_report(space, heldout: dict) -> dict:
    """Per direction: held-out golds with a vector, the headword oracle and (gloss space) the
    direct document query, each ranked among the direction's candidates with a vector."""
    from linxling.evaluate import reverse_dictionary
    out = {}
    for d, h in heldout.items():
        q, t = h.definition_language, h.target_language
        tw, tv = space.word_vectors(t)
        index = {w: i for i, w in enumerate(tw)}
        cands = [c for c in h.candidates if c in index]
        C = _unit(tv[[index[c] for c in cands]])
        qw, qv = space.word_vectors(q)
        qi = {w: i for i, w in enumerate(qw)}
        Qh = np.stack([qv[qi[x]] if x in qi else np.zeros(tv.shape[1]) for x in h.headwords])
        r = reverse_dictionary(Qh, h.targets, cands, C)
        entry = {"gold_with_vector": sum(x in index for x in h.targets), "n": len(h),
                 "headword_with_vector": sum(x in qi for x in h.headwords),
                 "candidates_with_vector": len(cands), "candidates": len(h.candidates),
                 "oracle": {k: r[k] for k in ("p@1", "p@10", "mrr")}}
        if hasattr(space, "document_model_"):
            r = reverse_dictionary(space.transform(h.definitions, q), h.targets, cands, C)
            entry["direct"] = {k: r[k] for k in ("p@1", "p@10", "mrr")}
        out[d] = entry
    return out


def evaluate(model, heldout: dict) -> dict:
    from linxling.evaluate import reverse_dictionary
    out = {}
    for d, h in heldout.items():
        q, t = h.definition_language, h.target_language
        vocab = set(model.word_vectors(t)[0])
        cw, cv = model.candidate_space(t, [c for c in h.candidates if c in vocab])
        Q = model.transform(h.definitions, language=q, target_language=t)
        r = reverse_dictionary(Q, h.targets, cw, cv, metric="cosine")
        out[d] = {"p@1": r["p@1"], "p@10": r["p@10"], "mrr": r["mrr"], "n_gold_missing": r["n_gold_missing"]}
    return out


def paraphrase_data(train: dict, space, n_pairs: int):
    """Paraphrase pairs (Sec. 4.2) from ``n_pairs`` Wikt3l training translation pairs, negatives
    among the 6th-15th neighbours in the space's English vectors; their definitions are removed
    from the dictionary the models are trained on."""
    from linxling.evaluate import paraphrase_pairs
    ew, ev = space.word_vectors("en")
    pairs = paraphrase_pairs(train["fr-en"], train["en-fr"], ew, ev, max_pairs=n_pairs, random_state=0)
    held = set(pairs["en"]) | set(pairs["fr"])
    return pairs, held


#: model name -> BilDRL keyword arguments on top of the defaults
SPECS = {"ridge": {"encoder": "ridge", "multitask": False}, "ridge-MTL": {"encoder": "ridge"},
         "BOW": {"encoder": "bow", "multitask": False}, "CNN": {"encoder": "cnn", "multitask": False},
         "GRU": {"encoder": "gru", "multitask": False}, "ATT": {"encoder": "att", "multitask": False},
         "BOW-MTL": {"encoder": "bow"}, "CNN-MTL": {"encoder": "cnn"}, "GRU-MTL": {"encoder": "gru"},
         "ATT-MTL": {"encoder": "att"}, "joint": {"encoder": "att", "joint": True}}


# ----------------------------------------------------------------------------- leaderboard entry
#: the quick suite's variant: a 100-dimensional gloss space and one epoch
QUICK = {"n_components": 100, "epochs": 1}


def fit_wikt3l(quick: bool = False, encoder: str | None = None, epochs: int | None = None,
               n_components: int | None = None, random_state: int = 0, show_progress: bool = False):
    """The leaderboard's BilDRL: the Wikt3l gloss space (glosses decontaminated against the test
    definitions) and BilDRL with its defaults (multi-task ATT) on every Wikt3l training row of
    both directions. Returns ``(model, info)``; ``model.transform`` / ``model.word_vectors``
    are what the reverse-dictionary task needs. ``quick``: ``QUICK`` (r = 100, one epoch).
    ``encoder`` / ``epochs`` / ``n_components`` override the defaults."""
    from linxling.datasets import load_wikt3l
    from linxling.models.bildrl import BilDRL
    from linxling.models.gloss_space import wikt3l_gloss_space
    train = {d: load_wikt3l(d, "train") for d in DIRECTIONS}
    r = n_components or (QUICK["n_components"] if quick else 200)
    t = time.perf_counter()
    space = wikt3l_gloss_space(train, "test", n_components=r, random_state=random_state,
                               show_progress=show_progress)
    space_s = time.perf_counter() - t
    kw = {}
    if encoder is not None:
        kw["encoder"] = encoder
    if epochs is not None or quick:
        kw["n_epochs"] = epochs or QUICK["epochs"]
    model = BilDRL(random_state=random_state, show_progress=show_progress, **kw)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(train["fr-en"].dictionary() + train["en-fr"].dictionary(), space)
    info = {"space_s": space_s, "fit_s": time.perf_counter() - t, "space": space.info_,
            "n_components": r, "n_excluded": model.n_excluded_,
            "params": {k: v for k, v in model.get_params().items() if k != "show_progress"}}
    return model, info


# ----------------------------------------------------------------------------- main
def _fmt(m: dict) -> str:
    return f"P@1 {100 * m['p@1']:.1f} P@10 {100 * m['p@10']:.1f} MRR {m['mrr']:.3f}"


def _values(text: str | None, kind) -> list:
    """``"0.1,1"`` -> ``[0.1, 1.0]``; None -> ``[None]`` (the model's default)."""
    return [None] if text is None else [kind(x) for x in text.split(",")]


def model_runs(models: str, ridge_alpha: str | None = None, ridge_min_df: str | None = None) -> list:
    """``(label, SPECS name, extra BilDRL keywords)`` per fit of ``--models``: a ridge model once
    per combination of the ``--ridge-alpha`` and ``--ridge-min-df`` values (labelled by them)."""
    runs = []
    for name in models.split(","):
        if SPECS[name]["encoder"] != "ridge" or not (ridge_alpha or ridge_min_df):
            runs.append((name, name, {}))
            continue
        for a in _values(ridge_alpha, float):
            for m in _values(ridge_min_df, int):
                kw = {k: v for k, v in (("alpha", a), ("min_df", m)) if v is not None}
                runs.append((" ".join([name, *(f"{k}={v}" for k, v in kw.items())]), name, kw))
    return runs


def direct_weight_grid(model, heldout: dict, weights) -> dict:
    """The fitted ``model``'s held-out metrics with each ``direct_weight`` (the encoder is the
    same: only the weight of the definition's own embedding at query time changes). Needs a
    model fitted on a GlossSpace with a weight above 0 (it keeps the space's document model)."""
    if model.document_model_ is None:
        raise ValueError("--direct-weights needs a model fitted on the gloss space with direct_weight > 0 "
                         "(the default 'auto')")
    fitted = model.direct_weight_
    try:
        out = {}
        for w in weights:
            model.direct_weight_ = float(w)
            out[f"{w:g}"] = evaluate(model, heldout)
        return out
    finally:
        model.direct_weight_ = fitted


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=("val", "test"), default="test")
    ap.add_argument("--space", choices=("gloss", "mapped", "bilbowa", "bible", "bible+wikt3l",
                                        "bible+wikt3l+glosses"), default="gloss")
    ap.add_argument("--space-components", type=int, default=None,
                    help="dimension of the word space (gloss: 200, others: 100)")
    ap.add_argument("--space-bible", action="store_true", help="gloss space: add the Bible verses as concepts")
    ap.add_argument("--no-muse", action="store_true", help="gloss space: no MUSE training pairs")
    ap.add_argument("--models", default="ridge,BOW,CNN,GRU,ATT,BOW-MTL,CNN-MTL,GRU-MTL,ATT-MTL")
    ap.add_argument("--epochs", type=int, default=None, help="BilDRL epochs (default: the model's)")
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--ridge-alpha", default=None,
                    help="comma-separated alpha values for the ridge models of --models, one fit per value "
                         "(and per --ridge-min-df value), e.g. 0.1,0.3,1,3,10 (default: the model's, 1.0)")
    ap.add_argument("--ridge-min-df", default=None,
                    help="comma-separated min_df values for the ridge models of --models, one fit per "
                         "value, e.g. 1,2,3,5 (default: the model's, 2)")
    ap.add_argument("--direct-weights", default=None,
                    help="comma-separated direct_weight values at which each fitted model (gloss space) is "
                         "also scored, e.g. 0,1,2,4 (the encoder is fitted once; default: none)")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--speed-only", action="store_true", help="only the GRU kernel speed (vs torch if installed)")
    ap.add_argument("--paraphrase-pairs", type=int, default=0,
                    help="translation pairs for paraphrase identification (0: skip); their "
                         "definitions are left out of the training dictionary")
    ap.add_argument("--joint-epochs", type=int, default=None, help="epochs of the joint model (default --epochs)")
    ap.add_argument("--joint-word-lr", type=float, default=0.025, help="word_learning_rate of the joint model")
    ap.add_argument("--out-name", default=None, help="raw JSON file name in benchmarks/results/")
    ap.add_argument("--bilbowa-epochs", type=int, default=5)
    ap.add_argument("--bilbowa-learning-rate", type=float, default=0.025,
                    help="BilBOWA's step for the mapped and bilbowa spaces (the step of the runs in "
                         "benchmarks/README.md; BilBOWA's own default is 0.05 since 2026-12-01)")
    ap.add_argument("--alignment-weight", type=float, default=10.0)
    ap.add_argument("--lexicon", action="store_true",
                    help="bilbowa: also align the Wikt3l training translation pairs; mapped: add them to the seed")
    ap.add_argument("--fr-gloss-words", type=int, default=100_000)
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    for opt, text, kind in (("--ridge-alpha", args.ridge_alpha, float), ("--ridge-min-df", args.ridge_min_df, int),
                            ("--direct-weights", args.direct_weights, float)):
        try:
            _values(text, kind)
        except ValueError:
            ap.error(f"{opt}: comma-separated {kind.__name__} values, got {text!r}")

    from linxling.models.bildrl import BilDRL

    res: dict = {"machine": machine(), "args": vars(args)}
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    out_file = out / (args.out_name or f"bildrl_{args.split}_{args.space.replace('+', '_')}.json")
    if args.speed_only:
        res["gru_speed"] = gru_speed()
        print(json.dumps(res, indent=1, default=str))
        return res
    train, heldout = load_split(args.split)
    exclude = excluded_definitions(args.split, heldout)
    space, info = build_space(args.space, train, exclude, args)
    res["space"] = {"info": info, "report": space_report(space, heldout)}
    print(f"space {args.space}: {info['fit_s']:.1f} s (load {info['loadavg'][0]:.1f})", flush=True)
    for d, e in res["space"]["report"].items():
        print(f"  {d}: gold with vector {e['gold_with_vector']}/{e['n']}, headword with vector "
              f"{e['headword_with_vector']}; oracle {_fmt(e['oracle'])}"
              + (f"; direct {_fmt(e['direct'])}" if "direct" in e else ""), flush=True)
    out_file.write_text(json.dumps(res, indent=1, default=str))

    rows = train["fr-en"].dictionary() + train["en-fr"].dictionary()
    para = None
    if args.paraphrase_pairs:
        from linxling.evaluate import paraphrase_identification
        para, held = paraphrase_data(train, space, args.paraphrase_pairs)
        n0 = len(rows)
        rows = [r for r in rows if r[2] not in held]
        res["paraphrase_data"] = {"pairs": len(para["label"]), "positives": int(para["label"].sum()),
                                  "train_rows_removed": n0 - len(rows)}

        def run_paraphrase(A, B):
            """The paper's MLP on a - b, and on |a - b| of unit vectors (symmetric)."""
            r_out = {}
            for feat, norm in (("difference", False), ("abs_difference", True)):
                r = paraphrase_identification(A, B, para["label"], random_state=0, hidden=64, n_epochs=300,
                                              patience=30, features=feat, normalize=norm)
                r_out[feat] = {k: r[k] for k in ("accuracy", "validation_accuracy", "majority", "n_test")}
            return r_out
    joint_text = None
    res["models"] = {}
    overrides = {k: v for k, v in (("n_epochs", args.epochs), ("hidden_size", args.hidden),
                                   ("n_layers", args.layers), ("learning_rate", args.lr)) if v is not None}
    for label, name, ridge_kw in model_runs(args.models, args.ridge_alpha, args.ridge_min_df):
        kw = {**overrides, **SPECS[name], **ridge_kw}
        if name == "joint" and args.joint_epochs:
            kw["n_epochs"] = args.joint_epochs
        if name == "joint":
            kw["word_learning_rate"] = args.joint_word_lr
        model = BilDRL(random_state=0, show_progress=False, **kw)
        fit_kw = {}
        if name == "joint":
            if joint_text is None:
                joint_text = bilbowa_corpus(train, exclude, args.fr_gloss_words)
            fit_kw = {"monolingual": joint_text[0], "parallel": joint_text[1]}
        load0 = os.getloadavg()
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(rows, space, **fit_kw)
        fit_s = time.perf_counter() - t
        n_used = len(rows) - sum(model.n_excluded_.values())
        entry = {"fit_s": fit_s, "rows_used": n_used, "n_excluded": model.n_excluded_,
                 "params": {k: v for k, v in model.get_params().items() if k != "show_progress"},
                 "metrics": evaluate(model, heldout), "loadavg_before": load0, "loadavg_after": os.getloadavg()}
        if model.encoder != "ridge":
            entry["definitions_per_s"] = n_used * model.n_epochs / fit_s
            entry["loss_history"] = model.loss_curve_
        if para is not None:
            entry["paraphrase"] = run_paraphrase(
                model.transform(para["en"], language="en", target_language="fr"),
                model.transform(para["fr"], language="fr", target_language="en"))
        if model.encoder == "ridge":
            entry["cg_iter"] = {u: st["cg_iter"] for u, st in model.units_.items()}
        if args.direct_weights:
            entry["direct_weights"] = direct_weight_grid(model, heldout, _values(args.direct_weights, float))
            for w, mw in entry["direct_weights"].items():
                print(f"{label:<10}   direct_weight {w:<5} " + "  ".join(
                    f"{d}: {_fmt(mw[d])}" for d in DIRECTIONS), flush=True)
        res["models"][label] = entry
        out_file.write_text(json.dumps(res, indent=1, default=str))
        m = entry["metrics"]
        print(f"{label:<10} fit {fit_s:7.1f}s (load {load0[0]:.1f}) " + "  ".join(
            f"{d}: {_fmt(m[d])}" for d in DIRECTIONS), flush=True)
    if not args.skip_speed:
        res["gru_speed"] = gru_speed()
        print("GRU fwd+bwd (batch 64, len 15, hidden 200, 5 layers):", json.dumps(res["gru_speed"]))
    out_file.write_text(json.dumps(res, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
