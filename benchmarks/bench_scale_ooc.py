"""Out-of-core WMF: a corpus larger than the fit's memory budget, streamed from HDF5 chunks.

Synthetic corpus (scale runs only, never quality): ``--rows`` sentences over ``--words`` words,
Zipf(1.05) columns, a lognormal number of distinct words per row (median ``--median-nnz``),
tf-idf-like positive values, float32. It is generated block by block straight into
:func:`linxling.io.write_chunks` (never whole in memory) with its transpose.

Then, each in a fresh process (so peak RSS belongs to one fit):

* ``stream``: ``WMF(...).fit(ChunkedCSR, memory_budget=B)``;
* ``memory``: the same WMF fitted on the same matrix loaded whole into memory (the peer).

Reported: corpus bytes (in-memory CSR) against the budget, time per ALS iteration of both
(median of iterations 2..), their ratio (goal ≤ 1.5), the process's peak RSS (``ru_maxrss``),
the RSS before the fit and the peak added by the fit, the load average, and whether both fits
gave the same factors.

Usage::

    .venv/bin/python benchmarks/bench_scale_ooc.py --rows 1000000 --words 100000 --budget 384M
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
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

from linxling._memory import current_rss  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "scale_ooc.json"


def blocks(n_rows: int, n_cols: int, median_nnz: int, block: int = 50_000, seed: int = 0):
    """Row blocks of the synthetic corpus (float32 CSR), deterministic given ``seed``."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, n_cols + 1) ** 1.05)
    cdf /= cdf[-1]
    for start in range(0, n_rows, block):
        b = min(block, n_rows - start)
        draws = np.clip(rng.lognormal(np.log(median_nnz), 0.6, b).astype(np.int64), 5, 20 * median_nnz)
        rows = np.repeat(np.arange(b, dtype=np.int64), draws)
        cols = np.searchsorted(cdf, rng.random(rows.size))
        key = np.unique(rows * n_cols + cols)                # distinct (row, word) pairs
        r, c = key // n_cols, key % n_cols
        vals = (rng.random(key.size) + 0.1).astype(np.float32)
        yield sp.csr_matrix((vals, (r, c)), shape=(b, n_cols))


def child(mode: str, path: str, k: int, n_iter: int, budget: str | None, out: str) -> None:
    from linxling.io import ChunkedCSR
    from linxling.models.wmf import WMF
    src = ChunkedCSR(path)
    warm = sp.random(300, 200, density=0.05, random_state=0, format="csr", dtype=src.dtype)
    WMF(n_components=k, max_iter=1).fit(warm)           # load the kernels outside the timings
    X = src.to_csr() if mode == "memory" else src
    rss0 = current_rss()
    stamps: list = []
    cpu: list = []   # CPU seconds per iteration: the two fits run one after the other, so
    #                  wall time sees different loads; CPU time much less so
    model = WMF(n_components=k, alpha=1.0, max_iter=n_iter, random_state=0,
                callback=lambda m, it, loss: (stamps.append(time.perf_counter()),
                                              cpu.append(time.process_time())))
    stamps.append(time.perf_counter())
    cpu.append(time.process_time())
    t0 = time.perf_counter()
    if mode == "memory":
        model.fit(X)
    else:
        model.fit(X, memory_budget=budget)
    fit_s = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    np.save(out + ".npy", model.embedding_[:2000])
    Path(out).write_text(json.dumps({
        "mode": mode, "fit_s": fit_s, "s_per_iter": np.diff(stamps).tolist(),
        "cpu_s_per_iter": np.diff(cpu).tolist(), "rss_before_fit": rss0,
        "peak_rss": peak, "peak_added": peak - rss0, "loss_curve": model.loss_curve_,
        "memory_plan": getattr(model, "memory_plan_", None), "loadavg": os.getloadavg()}, default=int))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--words", type=int, default=100_000)
    ap.add_argument("--median-nnz", type=int, default=50)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--budget", default="384M")
    ap.add_argument("--file", default="/tmp/linxling_ooc.h5")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "OUT"), help=argparse.SUPPRESS)
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    if args.child:
        child(args.child[0], args.file, args.k, args.iterations, args.budget, args.child[1])
        return {}
    from benchmarks._machine import machine
    from linxling._memory import parse_budget
    from linxling.io import ChunkedCSR, write_chunks
    t = time.perf_counter()
    if not Path(args.file).exists():
        write_chunks(args.file, blocks(args.rows, args.words, args.median_nnz), chunk_rows=50_000,
                     memory_budget=256 * 2 ** 20)
    src = ChunkedCSR(args.file)
    write_s = time.perf_counter() - t
    budget = parse_budget(args.budget)
    print(f"corpus {src.shape}, nnz {src.nnz:,}, {src.nbytes / 2**20:.0f} MiB as CSR "
          f"(budget {budget / 2**20:.0f} MiB); written in {write_s:.0f} s", flush=True)
    res = {"machine": machine(), "shape": list(src.shape), "nnz": src.nnz, "corpus_bytes": src.nbytes,
           "budget_bytes": budget, "k": args.k, "iterations": args.iterations, "write_s": write_s,
           "runs": {}}
    for mode in ("stream", "memory"):
        out = f"/tmp/linxling_ooc_{mode}.json"
        subprocess.run([sys.executable, __file__, "--file", args.file, "--k", str(args.k),
                        "--iterations", str(args.iterations), "--budget", args.budget,
                        "--child", mode, out], check=True)
        r = json.loads(Path(out).read_text())
        res["runs"][mode] = r
        print(f"{mode}: {np.round(r['s_per_iter'], 2).tolist()} s/it, peak RSS "
              f"{r['peak_rss'] / 2**20:.0f} MiB (before fit {r['rss_before_fit'] / 2**20:.0f} MiB, "
              f"added {r['peak_added'] / 2**20:.0f} MiB), load {r['loadavg']}", flush=True)
    s, m = res["runs"]["stream"], res["runs"]["memory"]
    med = {key: statistics.median(r["s_per_iter"][1:] or r["s_per_iter"]) for key, r in res["runs"].items()}
    res["ratio_stream_over_memory"] = med["stream"] / med["memory"]
    med_cpu = {key: statistics.median(r["cpu_s_per_iter"][1:] or r["cpu_s_per_iter"])
               for key, r in res["runs"].items()}
    res["cpu_ratio_stream_over_memory"] = med_cpu["stream"] / med_cpu["memory"]
    print(f"CPU s per iteration: stream {med_cpu['stream']:.2f}, memory {med_cpu['memory']:.2f}, "
          f"ratio {res['cpu_ratio_stream_over_memory']:.2f}", flush=True)
    a, b = np.load("/tmp/linxling_ooc_stream.json.npy"), np.load("/tmp/linxling_ooc_memory.json.npy")
    rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
    same = f"rel. difference {rel:.1e}"                   # equal up to rounding (see docs/scale.md)
    res["factor_rel_difference_first_2000_rows"] = rel
    res["loss_rel_diff"] = abs(s["loss_curve"][-1] - m["loss_curve"][-1]) / abs(m["loss_curve"][-1])
    print(f"time per iteration: stream {med['stream']:.2f} s, memory {med['memory']:.2f} s, ratio "
          f"{res['ratio_stream_over_memory']:.2f}; same factors: {same}; corpus/budget "
          f"{src.nbytes / budget:.2f}; stream peak RSS / budget {s['peak_rss'] / budget:.2f}", flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(res, indent=1, default=float))
    return res


if __name__ == "__main__":
    main()
