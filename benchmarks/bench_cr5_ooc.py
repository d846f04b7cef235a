"""Cr5 out of core: a Wikipedia-shaped corpus larger than the fit's memory budget, streamed from HDF5.

The corpus comes from :mod:`benchmarks.wiki_synth` (scale runs only, never quality) and is written
once per language with :func:`linxling.io.write_chunks` (row chunks and the transpose; the paper's
languages streamed by :func:`benchmarks.wiki_synth.write_multilingual_corpus`, so the corpus may
be larger than memory). Then, each
in a fresh process (so the peak RSS belongs to one fit):

* ``stream``: ``Cr5(..., memory_budget=B).fit_matrices({lang: ChunkedCSR}, concepts)``;
* ``stream-nobudget``: the same without a budget (same plan as in memory, minus the copies);
* ``memory``: the same Cr5 (no budget) on the blocks loaded whole into memory (the peer);
* ``stream-pass``: for a corpus larger than memory, no fit: two streamed float32 passes, their
  peak RSS, and the memory plan Cr5 would choose under the budget (or its MemoryError).

Reported: corpus bytes (in-memory CSR) against the budget, the process's peak RSS (``ru_maxrss``),
the RSS before the fit and the peak added by the fit (VmHWM reset at the fit's start), the fit's
wall and CPU time, and the time of one *pass* over the data (``Xᵀ(X V)`` for every language on a
block of b = r + max(10, 20 %) columns, float64 and float32: the product block CG repeats),
streamed against in memory, interleaved in one process (median of 5). The load average is
recorded with every run.

Usage::

    python benchmarks/bench_cr5_ooc.py --concepts 20000 --vocab 50000 --median-unique 1000 \\
        --max-unique 2500 --r 24 --budget 300M
    # the paper's 4-language job, shaped like it (issue #30): en, it, vi, da of different sizes
    python benchmarks/bench_cr5_ooc.py --paper-languages 1200000 --vocab 200000 --median-unique 150 \
        --max-unique 1000 --r 300 --budget 12G --modes stream,memory,passes --n-jobs 2 \
        --corpus-dtype float32 --workdir /tmp/linxling_cr5_4lang
    # larger than this machine's memory (2.22 billion nonzeros; 36 GB of disk)
    python benchmarks/bench_cr5_ooc.py --paper-languages 22500000 --vocab 200000 --median-unique 150 \
        --max-unique 1000 --r 300 --budget 12G --modes stream-pass --n-jobs 2 --transpose-budget 5G \
        --corpus-dtype float32 --workdir /tmp/linxling_cr5_4lang_big
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

from linxling._memory import current_rss  # noqa: E402


def _hwm() -> int:
    """The process's peak RSS since the last :func:`_reset_hwm` (VmHWM)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux ``clear_refs`` 5); ru_maxrss would also keep the
    parent's peak (it survives fork and exec)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def passes(workdir: Path, langs: list, b: int, repeats: int = 5, memory_too: bool = True,
           dtypes: tuple = (np.float64, np.float32)) -> dict:
    """One pass ``Xᵀ(X V)`` over every language (V of b columns), streamed and in memory,
    interleaved ``repeats`` times (so both see the same load); medians of wall and CPU seconds.
    Without ``memory_too`` (a corpus larger than memory) only the streamed pass is timed."""
    from linxling.io import ChunkedCSR
    from linxling.operators._source import ChunkedSource
    from linxling.operators.gram import Gram, SourceGram
    files = [ChunkedCSR(workdir / f"{lang}.h5") for lang in langs]
    out: dict = {}
    for dtype in dtypes:
        stream = [SourceGram(ChunkedSource(C), 1.0, dtype=dtype) for C in files]
        memory = [Gram(C.to_csr().astype(dtype), 1.0) for C in files] if memory_too else []
        rng = np.random.default_rng(0)
        Vs = [rng.standard_normal((op.shape[0], b)).astype(dtype) for op in stream]
        for op, V in zip(memory, Vs[:len(memory)], strict=True):     # builds the transposed copies (not timed)
            op.matmat(V[:, :2])
        t: dict = {"stream": [], "memory": [], "stream_cpu": [], "memory_cpu": []}
        for _ in range(repeats):
            for name, ops in (("stream", stream), ("memory", memory)):
                if not ops:
                    continue
                w, c = time.perf_counter(), time.process_time()
                for op, V in zip(ops, Vs, strict=True):
                    op.matmat(V)
                t[name].append(time.perf_counter() - w)
                t[name + "_cpu"].append(time.process_time() - c)
        med = {k: statistics.median(v) for k, v in t.items() if v}
        if memory_too:
            med["ratio_wall"] = med["stream"] / med["memory"]
            med["ratio_cpu"] = med["stream_cpu"] / med["memory_cpu"]
        med["all_stream"] = t["stream"]
        out[np.dtype(dtype).name] = med
        del memory
    out["loadavg"] = os.getloadavg()
    return out


def _plan_only(workdir: Path, langs: list, r: int, budget: str, cr5: dict | None = None) -> dict:
    """The memory plan Cr5 would choose for this corpus under ``budget`` (its problem set-up, one
    pass of column statistics, and the planner; no fit), or the planner's MemoryError."""
    from linxling import Cr5
    from linxling.io import ChunkedCSR
    files = {lang: ChunkedCSR(workdir / f"{lang}.h5") for lang in langs}
    concepts = {lang: _concepts(workdir, lang, C.shape[0]) for lang, C in files.items()}
    model = Cr5(n_components=r, alpha=1.0, random_state=0, memory_budget=budget, **(cr5 or {}))
    t0 = time.perf_counter()
    out: dict = {}
    try:
        out["plan"] = model.plan_memory(files, concepts)
    except MemoryError as exc:
        out["memory_error"] = str(exc)
    out["set_up_s"] = time.perf_counter() - t0
    return out


def _concepts(workdir: Path, lang: str, n: int) -> np.ndarray:
    """A language's concept ids: saved beside its file (several languages), else row i is concept i."""
    f = workdir / f"{lang}.concepts.npy"
    return np.load(f) if f.exists() else np.arange(n)


def child(mode: str, workdir: Path, langs: list, r: int, budget: str | None, out: str,
          cr5: dict | None = None) -> None:
    import scipy.sparse as sp

    from linxling import Cr5
    from linxling.io import ChunkedCSR
    warm = {lang: sp.random(60, 30, density=0.2, random_state=i, format="csr") for i, lang in enumerate("ab")}
    Cr5(n_components=2).fit_matrices(warm, {lang: np.arange(60) for lang in "ab"})   # compile kernels
    from linxling.kernels.spmm import csr_matmat  # and the float32 ones of a mixed-precision CG
    big = sp.random(2000, 500, density=0.2, random_state=0, format="csr")
    for dt in (np.float32, np.float64):
        csr_matmat(big.astype(dt), np.ones((500, 4), dtype=dt))
    files = {lang: ChunkedCSR(workdir / f"{lang}.h5") for lang in langs}
    blocks = {lang: (C.to_csr() if mode == "memory" else C) for lang, C in files.items()}
    concepts = {lang: _concepts(workdir, lang, C.shape[0]) for lang, C in files.items()}
    rss0 = current_rss()
    hwm_ok = _reset_hwm()
    load0 = os.getloadavg()
    model = Cr5(n_components=r, alpha=1.0, random_state=0,
                memory_budget=budget if mode == "stream" else None, **(cr5 or {}))
    c0, t0 = time.process_time(), time.perf_counter()
    model.fit_matrices(blocks, concepts)
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _hwm() if hwm_ok else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    load1 = os.getloadavg()
    np.save(out + ".npy", model.singular_values_)
    Path(out).write_text(json.dumps({
        "mode": mode, "fit_s": fit_s, "fit_cpu_s": fit_cpu, "rss_before_fit": rss0, "peak_rss": peak,
        "peak_added": peak - rss0, "peak_source": "VmHWM" if hwm_ok else "ru_maxrss",
        "fit_info": {k: v for k, v in model.fit_info_.items() if k != "block_methods"},
        "block_methods": model.fit_info_["block_methods"],
        "eig": model.convergence_["eig"], "loadavg": [load0, load1, os.getloadavg()]}, default=str))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concepts", type=int, default=20_000)
    ap.add_argument("--vocab", type=int, default=50_000)
    ap.add_argument("--median-unique", type=float, default=1000.0)
    ap.add_argument("--max-unique", type=int, default=2500)
    ap.add_argument("--r", type=int, default=10)
    ap.add_argument("--budget", default="450M")
    ap.add_argument("--chunk-mib", type=int, default=8, help="MiB of CSR per stored chunk")
    ap.add_argument("--workdir", default="/tmp/linxling_cr5_ooc")
    ap.add_argument("--corpus-dtype", default="float64", choices=["float64", "float32"],
                    help="dtype of the values written to the HDF5 files (float32: 8 bytes per nonzero)")
    ap.add_argument("--modes", default="passes,stream,stream-nobudget,memory",
                    help="comma-separated, run in order: plan (the memory plan only), passes (one pass "
                         "streamed vs in memory), "
                         "stream-pass (streamed only, float32, twice: a corpus larger than memory), "
                         "stream, stream-nobudget, memory")
    ap.add_argument("--paper-languages", type=int, default=0, metavar="N_DOCUMENTS",
                    help="instead of a pair: the paper's 4 languages (en, it, vi, da) of different "
                         "sizes with partially overlapping concepts, N_DOCUMENTS drawn in all "
                         "(benchmarks.wiki_synth.multilingual_corpus)")
    ap.add_argument("--n-jobs", type=int, default=1,
                    help="processes writing the --paper-languages corpus (one language each)")
    ap.add_argument("--transpose-budget", default="2G",
                    help="memory for gathering a language's transpose while writing it")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cr5_ooc.json"))
    ap.add_argument("--cr5", default="{}", help='more Cr5 arguments as JSON, e.g. '
                    '\'{"eig_space": "features", "eig_method": "lobpcg"}\'')
    ap.add_argument("--child", nargs=2, metavar=("MODE", "OUT"), help=argparse.SUPPRESS)
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    cr5 = json.loads(args.cr5)
    workdir = Path(args.workdir)
    from benchmarks.wiki_synth import PAPER_SIZES
    langs = list(PAPER_SIZES) if args.paper_languages else ["l0", "l1"]
    if args.child:
        b = args.r + max(10, int(np.ceil(0.2 * args.r)))
        if args.child[0] == "passes":
            Path(args.child[1]).write_text(json.dumps(passes(workdir, langs, b)))
        elif args.child[0] == "stream-pass":      # larger than memory: streamed, float32, twice
            rss0 = current_rss()
            hwm_ok = _reset_hwm()
            res = passes(workdir, langs, b, repeats=2, memory_too=False, dtypes=(np.float32,))
            peak = _hwm() if hwm_ok else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            res.update(rss_before=rss0, peak_rss=peak, plan=_plan_only(workdir, langs, args.r, args.budget, cr5))
            Path(args.child[1]).write_text(json.dumps(res, default=str))
        elif args.child[0] == "plan":             # the memory plan only (set-up, no fit)
            Path(args.child[1]).write_text(json.dumps(_plan_only(workdir, langs, args.r, args.budget, cr5),
                                                      default=str))
        else:
            child(args.child[0], workdir, langs, args.r, args.budget, args.child[1], cr5)
        return {}
    from benchmarks._machine import machine
    from linxling._memory import parse_budget
    from linxling.io import ChunkedCSR, write_chunks
    workdir.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    if not all((workdir / f"{lang}.h5").exists() for lang in langs):
        from benchmarks.wiki_synth import wiki_corpus, write_multilingual_corpus
        if args.paper_languages:       # streamed: no language is ever held in memory
            done = write_multilingual_corpus(
                workdir, args.paper_languages, vocab_size=args.vocab, median_unique=args.median_unique,
                max_unique=args.max_unique, dtype=np.dtype(args.corpus_dtype), n_jobs=args.n_jobs,
                transpose_budget=args.transpose_budget)
            print(f"written (rows, nnz, seconds) per language: {done}", flush=True)
            blocks = {}
        else:
            blocks, _ = wiki_corpus(args.concepts, vocab_size=args.vocab, median_unique=args.median_unique,
                                    max_unique=args.max_unique)
        for lang in (langs if blocks else []):
            X = blocks.pop(lang).astype(args.corpus_dtype, copy=False)
            rows = max(1, int(args.chunk_mib * 2 ** 20 / (12 * X.nnz / X.shape[0] + 8)))
            # the transpose's chunks bounded alike (a Zipf head word has up to K nonzeros): its
            # column blocks are gathered within memory_budget = 40 bytes per nonzero
            write_chunks(workdir / f"{lang}.h5", X, chunk_rows=rows, overwrite=True,
                         memory_budget=int(args.chunk_mib * 2 ** 20 / 12 * 40))
            del X
        del blocks
    files = {lang: ChunkedCSR(workdir / f"{lang}.h5") for lang in langs}
    write_s = time.perf_counter() - t
    corpus = sum(C.nbytes for C in files.values())
    budget = parse_budget(args.budget, "budget")
    nnz = sum(C.nnz for C in files.values())
    docs = {lang: C.shape[0] for lang, C in files.items()}
    n_concepts = len(np.unique(np.concatenate([_concepts(workdir, lang, n) for lang, n in docs.items()])))
    print(f"corpus: {n_concepts} concepts, documents per language {docs}, p = "
          f"{sum(C.shape[1] for C in files.values()):,}, nnz {nnz:,}, {corpus / 2**20:.0f} MiB as CSR "
          f"(budget {budget / 2**20:.0f} MiB); ready in {write_s:.0f} s", flush=True)
    res: dict = {"machine": machine(), "concepts": n_concepts, "documents": docs, "nnz": nnz, "corpus_bytes": corpus,
                 "budget_bytes": budget, "r": args.r, "cr5": cr5, "runs": {}}
    for mode in [m for m in args.modes.split(",") if m]:
        out = f"/tmp/linxling_cr5_ooc_{mode}.json"
        subprocess.run([sys.executable, __file__, "--workdir", str(workdir), "--r", str(args.r),
                        "--budget", args.budget, "--paper-languages", str(args.paper_languages),
                        "--cr5", args.cr5, "--child", mode, out], check=True)
        run = json.loads(Path(out).read_text())
        res["runs"][mode] = run
        if mode in ("passes", "stream-pass", "plan"):
            print(f"one pass Xᵀ(X V) ({mode}): {run}", flush=True)
            continue
        print(f"{mode}: fit {run['fit_s']:.1f} s (CPU {run['fit_cpu_s']:.1f} s), "
              f"peak RSS {run['peak_rss'] / 2**20:.0f} MiB (before fit {run['rss_before_fit'] / 2**20:.0f} MiB, "
              f"added {run['peak_added'] / 2**20:.0f} MiB), plan {run['fit_info'].get('memory_plan')}, "
              f"eig {run['eig']}, load {run['loadavg']}", flush=True)
    if "memory" in res["runs"]:
        m = res["runs"]["memory"]
        for mode, run in res["runs"].items():
            if mode not in ("memory", "passes", "stream-pass", "plan"):
                sv = np.load(f"/tmp/linxling_cr5_ooc_{mode}.json.npy")
                sv_mem = np.load("/tmp/linxling_cr5_ooc_memory.json.npy")
                run["sv_max_rel_diff_vs_memory"] = float(np.max(np.abs(sv / sv_mem - 1)))
                print(f"{mode} / memory: fit {run['fit_s'] / m['fit_s']:.2f}x wall, "
                      f"{run['fit_cpu_s'] / m['fit_cpu_s']:.2f}x CPU; singular values max rel. diff "
                      f"{run['sv_max_rel_diff_vs_memory']:.1e}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
