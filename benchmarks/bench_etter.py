"""CompressTree ranks (Etter Fig. 5.13: greedy vs left-to-right vs random trees) and CLDC.

    python -m benchmarks.bench_etter rank   [--n-train 20000 --n-test 300 --epochs 5 --seeds 0 1 2]
    python -m benchmarks.bench_etter cldc   [--methods majority,cr5,cllsi]

Embeddings for CLDC are trained on Bible en-de verse pairs of the chapters NOT held out by
:func:`linxling.datasets.load_bible_genres` (so no tested Bible chapter is seen); the averaged
perceptron is trained on one language and tested on the other: SIB-200 (train split -> test
split, 7 topics) and Bible chapters by genre (train chapters -> held-out chapters, a chapter =
average of its verse vectors). Add a method by adding one entry to ``METHODS``: a function
``(corpus, d) -> embed(texts, language)``. Raw JSON goes to benchmarks/results/.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")   # see bench_bicvm.py

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
LANGS = ("en", "de")


# --------------------------------------------------------------------------- methods
def _fit_concept_model(cls, corpus, d, **kw):
    texts, langs, concepts = corpus.concept_documents(list(LANGS))
    model = cls(n_components=d, random_state=0, **kw)
    if hasattr(model, "show_progress"):
        model.show_progress = False
    model.fit(texts, langs, concepts)
    return lambda X, lang: model.transform(X, language=lang)


def _cr5(corpus, d):
    from linxling import Cr5
    # verses are short: no unique-word document filter (Cr5's default [50, 1000] is for articles)
    return _fit_concept_model(Cr5, corpus, d)


def _cllsi(corpus, d):
    from linxling import CLLSI
    return _fit_concept_model(CLLSI, corpus, d)


#: BiCVM settings of the speed benchmark (benchmarks/README.md "BiCVM"): margin 128, batch 500.
BICVM = {"noise": 10, "margin": 128.0, "batch_size": 500, "n_epochs": 10, "n_threads": 2}


def _sentence_model(model, pairs):
    model.set_params(random_state=0, show_progress=False)
    model.fit(pairs)
    return lambda X, lang: model.transform(X, language=lang)


def _bicvm(composition):
    def fit(corpus, d):
        from linxling import BiCVM
        return _sentence_model(BiCVM(n_components=d, composition=composition, **BICVM),
                               {lang: corpus.texts[lang] for lang in LANGS})
    return fit


def _bicvm_plus(corpus, d):
    """BiCVM+ (Sec. 4.1): the en-de pairs plus the en-fr pairs of the same training verses."""
    from linxling import BiCVM
    from linxling.datasets import load_bible_genres
    fr = load_bible_genres(["en", "fr"], test_fraction=0.2, random_state=0)
    de = load_bible_genres(list(LANGS), test_fraction=0.2, random_state=0)
    if set(fr.test.keys) != set(de.test.keys):   # no tested chapter may be seen by the embeddings
        raise RuntimeError("the en-fr split holds out other chapters than the en-de split")
    enfr = fr.embedding_corpus
    return _sentence_model(BiCVM(n_components=d, composition="add", **BICVM),
                           [{lang: corpus.texts[lang] for lang in LANGS},
                            {"en": enfr.texts["en"], "fr": enfr.texts["fr"]}])


def _ranking(corpus, d):
    from linxling import RankingEmbedding
    # L1 score and lr 0.5: the best setting of the en-fr rank curves (dot: see README)
    return _sentence_model(RankingEmbedding(n_components=d, score="l1", n_epochs=5, batch_size=10,
                                            learning_rate=0.5, n_threads=2),
                           {lang: corpus.texts[lang] for lang in LANGS})


#: name -> (corpus, d) -> embed(texts, language); "majority" is handled separately.
METHODS = {"cr5": _cr5, "cllsi": _cllsi, "bicvm_add": _bicvm("add"), "bicvm_bi": _bicvm("bi"),
           "bicvm_plus": _bicvm_plus, "ranking": _ranking}


def _doc_vectors(embed, chapters, lang):
    from linxling.evaluate import document_vectors
    verses, idx = chapters.flat(lang)
    return document_vectors(embed(verses, lang), idx, len(chapters))


def _unit(X):
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(n > 0, n, 1.0)


def run_cldc(methods, d, out):
    from linxling.datasets import load_bible_genres, load_sib200
    from linxling.evaluate import cldc
    split = load_bible_genres(list(LANGS), test_fraction=0.2, random_state=0)
    sib = {(lang, part): load_sib200(lang, part) for lang in LANGS for part in ("train", "test")}
    rows = []
    for name in methods:
        t0 = time.perf_counter()
        embed = None if name == "majority" else METHODS[name](split.embedding_corpus, d)
        fit_s = time.perf_counter() - t0
        for src, tgt in (("en", "de"), ("de", "en")):
            for task in ("sib200", "bible_genres"):
                if task == "sib200":
                    ytr, yte = sib[(src, "train")][1], sib[(tgt, "test")][1]
                    Xtr = None if embed is None else embed(sib[(src, "train")][2], src)
                    Xte = None if embed is None else embed(sib[(tgt, "test")][2], tgt)
                else:
                    ytr, yte = split.train.labels, split.test.labels
                    Xtr = None if embed is None else _doc_vectors(embed, split.train, src)
                    Xte = None if embed is None else _doc_vectors(embed, split.test, tgt)
                if embed is None:   # majority class of the training labels
                    Xtr, Xte = np.ones((len(ytr), 1)), np.ones((len(yte), 1))
                else:               # unit length: the perceptron's bias must not swamp tiny vectors
                    Xtr, Xte = _unit(Xtr), _unit(Xte)
                res = cldc(Xtr, ytr, Xte, yte, n_epochs=10, random_state=0)
                acc = res["majority_accuracy"] if embed is None else res["accuracy"]
                rows.append({"method": name, "task": task, "direction": f"{src}->{tgt}",
                             "accuracy": acc, "n_train": res["n_train"], "n_test": res["n_test"],
                             "fit_seconds": fit_s})
                print(json.dumps(rows[-1]), flush=True)
    out.write_text(json.dumps({"rows": rows, "d": d, "n_embedding_verses": len(split.embedding_corpus),
                               "n_train_chapters": len(split.train), "n_test_chapters": len(split.test)},
                              indent=1))


# --------------------------------------------------------------------------- CompressTree rank
def _windows(texts, length, rng):
    from linxling.text import tokenize
    out = []
    for t in texts:
        toks = tokenize(t)
        if len(toks) >= length:
            s = int(rng.integers(0, len(toks) - length + 1))
            out.append(" ".join(toks[s:s + length]))
    return out


def run_rank(n_train, n_test, epochs, overrides, out, seeds=(0,), n_whole=0):
    """Fig. 5.13: mean / median rank of held-out true windows (5 tokens, every word in the
    dictionary) among their corruptions after every epoch, for the three trees, CompressTree at
    its defaults but for ``overrides``; ``seeds`` are CompressTree random_states (initialisation,
    order, corruptions, windows, random trees); data and test windows stay the same. Training
    data: the first ``n_train`` (None: all) of the shuffled verses of the chapters not held out by
    ``load_bible_genres(test_fraction=0.2, random_state=0)``; ``n_whole`` > 0 also ranks that
    many whole held-out verses."""
    from linxling import CompressTree
    from linxling.datasets import load_bible_genres
    from linxling.text import tokenize
    split = load_bible_genres(["en"], test_fraction=0.2, random_state=0)
    rng = np.random.default_rng(0)
    train = [t for t in split.embedding_corpus.texts["en"] if len(tokenize(t)) >= 2]
    rng.shuffle(train)
    train = train[:n_train]
    held = [v for ch in split.test.sentences["en"] for v in ch]
    test_all = _windows(held, 5, rng)
    whole_all = [v for v in held if len(tokenize(v)) >= 2]
    whole_all = [whole_all[i] for i in np.random.default_rng(3).permutation(len(whole_all))[:n_whole]]
    rows = []
    for seed in seeds:
        for tree in ("greedy", "left", "random"):
            t0 = time.perf_counter()
            c0 = time.process_time()
            test: list[str] = []

            def cb(m, epoch, loss, tree=tree, seed=seed, t0=t0, c0=c0, test=test):
                if not test:    # test n-grams fully inside the dictionary (as the thesis' n-grams)
                    test.extend([t for t in test_all
                                 if all(w in m.vocabulary_index_ for w in tokenize(t))][:n_test])
                fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
                r = m.corrupted_rank(test, position="random", random_state=0)
                row = {"tree": tree, "seed": seed, "epoch": epoch + 1,
                       "mean_rank": float(r.mean()), "median_rank": float(np.median(r)),
                       "n_test": len(test), "vocabulary": len(m.vocabulary_), "loss": loss,
                       "seconds": fit_s, "cpu_seconds": fit_cpu, "loadavg": os.getloadavg()}
                if whole_all:
                    rw = m.corrupted_rank(whole_all, position="random", random_state=0)
                    row.update(mean_rank_whole=float(rw.mean()), median_rank_whole=float(np.median(rw)),
                               n_whole=len(whole_all))
                rows.append(row)
                print(json.dumps(rows[-1]), flush=True)

            params = dict(tree=tree, random_state=seed, callback=cb, show_progress=False)
            params.update(overrides)
            if epochs is not None:
                params["n_epochs"] = epochs
            CompressTree(**params).fit(train)
    out.write_text(json.dumps({"rows": rows, "overrides": overrides, "n_train": len(train),
                               "machine": _machine()}, indent=1))


def ct_validation_split(n_val=500):
    """English training verses of the leaderboard's split (``BibleCorpus.split(n_test=150,
    by="chapter", random_state=0)``; its 150 test chapters are never used here); ``n_val`` of them
    (seed 1) are the validation verses, the rest train."""
    from linxling.datasets import load_bible
    from linxling.text import tokenize
    c = load_bible(["en"], unit="verse")
    train, _ = c.split(n_test=150, by="chapter", random_state=0)
    texts = [t for t in train.texts["en"] if len(tokenize(t)) >= 2]
    perm = np.random.default_rng(1).permutation(len(texts))
    return [texts[i] for i in perm[n_val:]], [texts[i] for i in perm[:n_val]]


def run_ct_defaults(specs, epochs, n_whole, n_windows, out):
    """CompressTree validation runs: after every epoch, the mean training loss (margin 1) and the
    mean corrupted rank (a random position, every other vocabulary word) of ``n_windows`` random
    5-token windows and of ``n_whole`` whole validation verses."""
    from linxling import CompressTree
    from linxling.text import tokenize
    fit, val = ct_validation_split()
    rng = np.random.default_rng(2)
    win = _windows(val, 5, rng)[:n_windows]
    whole = val[:n_whole]
    for spec in specs:
        kw = json.loads(spec)
        rows: list = []
        clock = [time.perf_counter(), 0.0]      # start, seconds spent evaluating

        def cb(m, epoch, loss, rows=rows, kw=kw, clock=clock):
            t = time.perf_counter()
            rw = m.corrupted_rank(win, random_state=0)
            rf = m.corrupted_rank(whole, random_state=0)
            rows.append({"epoch": epoch + 1, "loss": round(loss, 4),
                         "rank_windows": round(float(rw.mean()), 1),
                         "rank_whole": round(float(rf.mean()), 1),
                         "median_whole": float(np.median(rf)),
                         "fit_seconds": round(t - clock[0] - clock[1], 1)})
            if m.hidden_size_ == 0:    # linear h: spectral radii of its left / right halves
                d = m.A1_.shape[0]
                rows[-1]["rho"] = [round(float(np.max(np.abs(np.linalg.eigvals(m.A1_[:, h:h + d])))), 3)
                                   for h in (0, d)]
            clock[1] += time.perf_counter() - t
            print(json.dumps({"params": kw, **rows[-1]}), flush=True)

        params = dict(n_components=50, max_features=5000, n_epochs=epochs, random_state=0,
                      show_progress=False, callback=cb)
        params.update(kw)
        err = None
        try:
            CompressTree(**params).fit(fit)
        except FloatingPointError as e:
            err = str(e)
        res = {"params": kw, "epochs": rows, "error": err, "n_fit": len(fit),
               "mean_len_fit": float(np.mean([len(tokenize(t)) for t in fit[:2000]])),
               "n_whole": len(whole), "n_windows": len(win), "loadavg": os.getloadavg()}
        print(json.dumps(res), flush=True)
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(res) + "\n")


def _machine():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks._machine import machine
    return machine()


# --------------------------------------------------------------------------- Etter Figs. 4.3-4.10
#: (label, figure, RankingEmbedding params) against a base; base "defaults": the class defaults
#: (d = 50, L1, margin d/32, SGD lr 1.0, batch 10); base "paper" (the thesis' Chapter 4 start and
#: the earlier runs of this benchmark): dot score, margin sqrt(d), batch 10, lr from --lr.
CURVES = {
    "defaults": [
        ("defaults: L1, margin d/32, d=50", ("score", "margin", "dim", "pairs"), {}),
        ("dot", ("score",), {"score": "dot"}),
        ("margin sqrt(d)", ("margin",), {"margin": float(np.sqrt(50))}),
        ("margin 1", ("margin",), {"margin": 1.0}),
        ("d=25", ("dim",), {"n_components": 25}),
        ("d=150", ("dim",), {"n_components": 150}),
        ("words + pairs", ("pairs",), {"word_pairs": True}),
    ],
    "paper": [
        ("dot, margin sqrt(d), d=50", ("score", "margin", "dim", "pairs"), {}),
        ("L1", ("score",), {"score": "l1"}),
        ("margin 1", ("margin",), {"margin": 1.0}),
        ("d=25", ("dim",), {"n_components": 25}),
        ("d=150", ("dim",), {"n_components": 150}),
        ("words + pairs", ("pairs",), {"word_pairs": True}),
    ],
}


def _curve_base(base, lr, epochs):
    params = {"n_components": 50, "n_epochs": epochs, "random_state": 0, "n_threads": 2,
              "show_progress": False}
    if base == "paper":
        params.update(score="dot", margin=None, learning_rate=0.05 if lr is None else lr, batch_size=10)
    elif lr is not None:
        params["learning_rate"] = lr
    return params


def run_curves(n_train, n_test, epochs, lr, base, results, publish=False):
    """Estimated rank (Algorithm 2, M = 10) of held-out Bible en-fr verse pairs after every epoch;
    one JSON per (base, learning rate) under ``results``; the plot of every such JSON goes to
    ``results`` too, and to benchmarks/etter_rank_curves.png (tracked) only when ``publish``."""
    from linxling import RankingEmbedding
    from linxling.datasets import load_bible
    from linxling.evaluate import estimated_rank
    c = load_bible(["en", "fr"])
    perm = np.random.default_rng(0).permutation(len(c.texts["en"]))
    test, train = perm[:n_test], perm[n_test:n_test + n_train]
    tr = {lang: [c.texts[lang][i] for i in train] for lang in ("en", "fr")}
    te = {lang: [c.texts[lang][i] for i in test] for lang in ("en", "fr")}
    curves = {}
    base_params = _curve_base(base, lr, epochs)
    for label, _, kw in CURVES[base]:
        params = dict(base_params)
        if "margin" not in kw and base == "paper":
            # the paper's margin sqrt(d) follows d (margin=None was sqrt(d) before the new defaults)
            params["margin"] = float(np.sqrt(kw.get("n_components", 50)))
        params.update(kw)
        ranks: list[float] = []

        def cb(model, epoch, loss, ranks=ranks):
            Q = model.transform(te["en"], language="en")
            T = model.transform(te["fr"], language="fr")
            ranks.append(estimated_rank(Q, T, score=model.score, n_candidates=10,
                                        random_state=0).mean_rank)

        t0 = time.perf_counter()
        RankingEmbedding(callback=cb, **params).fit(tr)
        curves[label] = {"mean_rank": ranks, "seconds": time.perf_counter() - t0, "params": kw}
        print(json.dumps({label: curves[label]}), flush=True)
    lr_used = base_params.get("learning_rate", 1.0)
    out = results / f"etter_curves_{base}_lr{lr_used:g}.json"
    out.write_text(json.dumps({"n_train": n_train, "n_test": n_test, "epochs": epochs, "lr": lr_used,
                               "base": base, "params": base_params, "curves": curves,
                               "loadavg": os.getloadavg()}, indent=1))
    files = sorted(results.glob("etter_curves_*_lr*.json"))
    plot_curves(files, results / "etter_rank_curves.png")
    if publish:
        plot_curves(files, Path(__file__).resolve().parent / "etter_rank_curves.png")


def plot_curves(files, target):
    """One row of four panels per (base, learning rate) run (results/etter_curves_*_lr*.json)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [json.loads(f.read_text()) for f in files]
    runs.sort(key=lambda r: (r.get("base") != "defaults", r["lr"]))
    figs = {"score": "dot vs L1 (Fig. 4.3)", "margin": "margin (Figs. 4.4-4.5)",
            "dim": "d in {25, 50, 150} (Fig. 4.6)", "pairs": "words vs words + pairs (Fig. 4.10)"}
    fig, axes = plt.subplots(len(runs), 4, figsize=(16, 3.6 * len(runs)), squeeze=False)
    for row, run in zip(axes, runs, strict=True):
        base = run.get("base", "paper")
        for ax, (key, title) in zip(row, figs.items(), strict=True):
            for label, keys, _ in CURVES[base]:
                if key in keys and label in run["curves"]:
                    r = run["curves"][label]["mean_rank"]
                    ax.plot(range(1, len(r) + 1), r, marker="o", label=label)
            ax.set_title(f"{title}\nbase: {base}, lr {run['lr']:g}", fontsize=9)
            ax.set_xlabel("epoch")
            ax.set_yscale("log")
            ax.legend(fontsize=7)
        row[0].set_ylabel(f"mean rank, {runs[0]['n_test']} held-out (M=10)")
    fig.tight_layout()
    fig.savefig(target, dpi=80)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["rank", "cldc", "curves", "ct-defaults"])
    ap.add_argument("--spec", nargs="+", default=["{}"],
                    help="ct-defaults: CompressTree parameters as JSON, one run each")
    ap.add_argument("--n-whole", type=int, default=None,
                    help="whole held-out verses to rank (ct-defaults: default 60; rank: 0)")
    ap.add_argument("--n-windows", type=int, default=300)
    ap.add_argument("--methods", default="majority,cr5,cllsi")
    ap.add_argument("--d", type=int, default=None)
    ap.add_argument("--n-train", type=int, default=None,
                    help="training verses (rank: all; curves: 20000)")
    ap.add_argument("--n-test", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=None,
                    help="rank: CompressTree's default; curves: 5; ct-defaults: 3")
    ap.add_argument("--hidden-size", type=int, default=None, help="rank: CompressTree's default")
    ap.add_argument("--vocab", type=int, default=None, help="rank: CompressTree's max_features")
    ap.add_argument("--lr", type=float, default=None,
                    help="SGD learning rate (curves: the base's; rank: CompressTree's default)")
    ap.add_argument("--base", choices=sorted(CURVES), default="defaults",
                    help="curves: RankingEmbedding's defaults or the thesis' dot/margin sqrt(d) start")
    ap.add_argument("--publish", action="store_true",
                    help="curves: also write benchmarks/etter_rank_curves.png (tracked)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="rank: CompressTree seeds")
    from benchmarks._cli import show_defaults
    a = show_defaults(ap).parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    if a.what == "curves":
        run_curves(a.n_train or 20000, a.n_test, a.epochs or 5, a.lr, a.base, RESULTS,
                   publish=a.publish)
    elif a.what == "ct-defaults":
        run_ct_defaults(a.spec, a.epochs or 3, 60 if a.n_whole is None else a.n_whole, a.n_windows,
                        RESULTS / "ct_defaults.jsonl")
    elif a.what == "cldc":
        run_cldc(a.methods.split(","), a.d or 128, RESULTS / "etter_cldc.json")
    else:
        over = {k: v for k, v in (("n_components", a.d), ("hidden_size", a.hidden_size),
                                  ("max_features", a.vocab), ("learning_rate", a.lr)) if v is not None}
        over.update(json.loads(a.spec[0]))
        run_rank(a.n_train, a.n_test, a.epochs, over, RESULTS / "etter_rank.json", seeds=a.seeds,
                 n_whole=a.n_whole or 0)


if __name__ == "__main__":
    main()
