"""CSLS against cosine retrieval on the same data (run by hand, not by the tests).

``linxling.evaluate.retrieval`` with ``similarity="csls"`` needs two blocked GEMM passes (the
neighbourhood radii r_q/r_c, then the ranks) where cosine needs one; the goal of issue #11 is
CSLS ≤ 2.5x cosine. Synthetic embeddings (Gaussian queries, candidates = queries + noise, so
the gold candidates are the nearest ones): this measures time only, never quality.

Usage::

    .venv/bin/python benchmarks/bench_retrieval.py [--n 40000 200000] [--d 300] [--dtype float32]
        [--repeats 2]

Each size runs cosine and CSLS interleaved ``--repeats`` times (machine load hits both alike)
and prints the medians, their ratio and ``os.getloadavg()``; writes
benchmarks/results/retrieval.json (git-ignored).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

from benchmarks._machine import machine  # noqa: E402
from linxling.evaluate import retrieval  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "retrieval.json"


def data(n: int, d: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((n, d), dtype=np.float32).astype(dtype)
    C = Q + rng.standard_normal((n, d), dtype=np.float32).astype(dtype)
    return Q, C


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[40_000])
    ap.add_argument("--d", type=int, default=300)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--repeats", type=int, default=2)
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    retrieval(*data(500, 8, args.dtype), similarity="csls")       # compile the kernels first
    out = {"machine": machine(), "d": args.d, "dtype": args.dtype, "runs": []}
    for n in args.n:
        Q, C = data(n, args.d, args.dtype)
        times: dict[str, list] = {"cosine": [], "csls": []}
        cpu: dict[str, list] = {"cosine": [], "csls": []}   # CPU seconds: less load-sensitive
        loads = []
        res = {}
        for rep in range(args.repeats):
            for sim in ("cosine", "csls"):
                t, c = time.perf_counter(), time.process_time()
                res[sim] = retrieval(Q, C, similarity=sim, ks=(1, 10))
                times[sim].append(time.perf_counter() - t)
                cpu[sim].append(time.process_time() - c)
                loads.append(os.getloadavg())
                print(f"n={n} {sim:6s} rep {rep}: {times[sim][-1]:.2f} s ({cpu[sim][-1]:.2f} CPU s), "
                      f"P@1 {res[sim]['P@1']:.4f}, "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)
        med = {sim: statistics.median(v) for sim, v in times.items()}
        med_cpu = {sim: statistics.median(v) for sim, v in cpu.items()}
        run = {"n_queries": n, "n_candidates": n, "seconds": times, "median_s": med,
               "ratio_csls_over_cosine": med["csls"] / med["cosine"], "loadavg": loads,
               "cpu_seconds": cpu, "median_cpu_s": med_cpu,
               "cpu_ratio_csls_over_cosine": med_cpu["csls"] / med_cpu["cosine"],
               "P@1": {sim: r["P@1"] for sim, r in res.items()}}
        print(f"n={n}: cosine {med['cosine']:.2f} s, CSLS {med['csls']:.2f} s, "
              f"ratio {run['ratio_csls_over_cosine']:.2f} (CPU time ratio "
              f"{run['cpu_ratio_csls_over_cosine']:.2f})", flush=True)
        out["runs"].append(run)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
