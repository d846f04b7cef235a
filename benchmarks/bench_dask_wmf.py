"""WMF on a dask.distributed LocalCluster (1 and 2 worker processes) against the in-memory fit.

Synthetic corpus (scale runs only, never quality): ``--rows`` sentences over ``--words`` words,
Zipf(1.05) columns, a lognormal number of distinct words per row (median ``--median-nnz``),
positive tf-idf-like float32 values. Each row block is made by a task from its own seed, on the
workers (``dask.array.from_delayed``): the corpus never passes through the client. The
in-memory peer stacks the same blocks made locally.

Fits, one after the other on the same matrix, same initial factors (``random_state``):

* ``memory``: ``WMF.fit(csr)`` in this process (numba on all cores);
* ``dask-1``: ``WMF.fit(dask_array, client=...)`` on ``LocalCluster(n_workers=1, threads_per_worker=T)``;
* ``dask-2``: the same on 2 workers (``threads_per_worker=T`` each, T = ``--threads``).

Reported: seconds per iteration (median of iterations 2..; the first includes the numba cache
load in the workers; from the end of one callback to the start of the next, so that the
callback's own readings below, ``callback_s``, are not charged to the fit), CPU seconds per
iteration of all processes (client + workers + scheduler, ``time.process_time`` read in each;
the callback's readings included), the time to persist the row blocks of X and Xᵀ (setup), the
bytes sent per iteration (two counts: ``payload`` = nbytes of the arrays the fit scatters times
the workers that receive them plus the solved blocks gathered, as recorded in ``dask_info_``;
``measured`` = the bytes every process wrote to its TCP comms, :class:`linxling._dask.CommMeter`,
which also counts task messages, heartbeats and the meter's own reads), the persisted data's
bytes, the load average, and the largest relative difference of the factors to the in-memory fit.

Usage::

    .venv/bin/python benchmarks/bench_dask_wmf.py --rows 200000 --words 50000 --k 32 --iterations 4
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

RESULTS = ROOT / "benchmarks" / "results" / "dask_wmf.json"


def make_block(i: int, n_rows: int, n_cols: int, median_nnz: int, seed: int) -> sp.csr_matrix:
    """Row block ``i`` (``n_rows`` rows) of the synthetic corpus, from its own seed (float32 CSR)."""
    rng = np.random.default_rng([seed, i])
    cdf = np.cumsum(1.0 / np.arange(1, n_cols + 1) ** 1.05)
    cdf /= cdf[-1]
    draws = np.clip(rng.lognormal(np.log(median_nnz), 0.6, n_rows).astype(np.int64), 5, 20 * median_nnz)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), draws)
    cols = np.searchsorted(cdf, rng.random(rows.size))
    key = np.unique(rows * n_cols + cols)
    r, c = key // n_cols, key % n_cols
    vals = (rng.random(key.size) + 0.1).astype(np.float32)
    return sp.csr_matrix((vals, (r, c)), shape=(n_rows, n_cols))


def block_sizes(n_rows: int, block: int) -> list[int]:
    return [min(block, n_rows - s) for s in range(0, n_rows, block)]


def _cpu() -> float:
    return time.process_time()


def _stats(stamps: list[float], ends: list[float] | None = None) -> dict:
    """Per-iteration seconds from the callback's stamps: iteration i runs from the end of the
    callback after iteration i - 1 (``ends``; the callback's own readings are not the fit's
    time) to the start of the one after it (``stamps``)."""
    its = np.diff(stamps).tolist() if ends is None else [b - a for a, b in zip(ends[:-1], stamps[1:], strict=True)]
    return {"s_per_iteration": statistics.median(its[1:]) if len(its) > 1 else its[0],
            "iterations_s": its}


def fit_memory(args, X) -> tuple[dict, object]:
    from linxling import WMF
    stamps, cpu = [], []

    def cb(model, it, loss):
        stamps.append(time.perf_counter())
        cpu.append(time.process_time())

    model = WMF(n_components=args.k, alpha=1.0, max_iter=args.iterations, random_state=0,
                show_progress=False, callback=cb)
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(X)
    out = _stats([t0, *stamps])
    out["cpu_s_per_iteration"] = statistics.median(np.diff(cpu).tolist())
    out["load"] = os.getloadavg()
    out["loss"] = model.loss_curve_
    out["total_s"] = time.perf_counter() - t0
    out["cpu_total_s"] = time.process_time() - c0
    return out, model


def fit_dask(args, n_workers: int, ref) -> dict:
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    from linxling import WMF
    from linxling._dask import CommMeter
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=args.threads, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(cluster, set_as_default=False)
    try:
        sizes = block_sizes(args.rows, args.block)
        parts = [da.from_delayed(dask.delayed(make_block, pure=True)(i, b, args.words, args.median_nnz,
                                                                    args.seed),
                                 shape=(b, args.words), dtype=np.float32,
                                 meta=sp.csr_matrix((0, 0), dtype=np.float32))
                 for i, b in enumerate(sizes)]
        Xd = da.concatenate(parts, axis=0)
        meter = CommMeter(client)
        client.run(lambda: __import__("linxling.models.wmf"))        # imports out of the timings

        def cpu_all() -> float:
            return (time.process_time() + sum(client.run(_cpu).values())
                    + client.run_on_scheduler(_cpu))

        stamps, ends, wire, cpu = [], [], [], []

        def cb(model, it, loss):
            # the readings cost round trips to every process (5 ms on 2 cores): stamped apart, so
            # that an iteration's time is the fit's alone, as in the in-memory fit (whose callback
            # reads two clocks)
            stamps.append(time.perf_counter())
            wire.append(meter.read())
            cpu.append(cpu_all())
            ends.append(time.perf_counter())

        model = WMF(n_components=args.k, alpha=1.0, max_iter=args.iterations, random_state=0,
                    show_progress=False, callback=cb)
        w0, t0, c0 = meter.read(), time.perf_counter(), cpu_all()
        model.fit(Xd, client=client)
        out = _stats(stamps, ends)               # iterations 2..: the first stamp ends iteration 1
        out["s_per_iteration"] = statistics.median(out["iterations_s"])
        out["callback_s"] = statistics.median([b - a for a, b in zip(stamps, ends, strict=True)])
        out["setup_and_first_iteration_s"] = stamps[0] - t0
        out["cpu_s_per_iteration"] = statistics.median(np.diff(cpu).tolist())
        out["measured_bytes_per_iteration"] = np.diff(wire).tolist()
        out["setup_and_first_iteration_bytes"] = wire[0] - w0
        out["cpu_setup_and_first_iteration_s"] = cpu[0] - c0
        out["payload_bytes_per_iteration"] = model.dask_info_["payload_bytes_per_iteration"]
        out["info"] = {k: v for k, v in model.dask_info_.items() if k != "payload_bytes_per_iteration"}
        out["load"] = os.getloadavg()
        out["loss"] = model.loss_curve_
        out["max_rel_diff_embedding"] = float(np.linalg.norm(model.embedding_ - ref.embedding_)
                                              / np.linalg.norm(ref.embedding_))
        out["max_rel_diff_components"] = float(np.linalg.norm(model.components_ - ref.components_)
                                               / np.linalg.norm(ref.components_))
        return out
    finally:
        client.close()
        cluster.close()


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--words", type=int, default=50_000)
    p.add_argument("--median-nnz", type=int, default=50)
    p.add_argument("--block", type=int, default=20_000, help="rows per dask chunk")
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--threads", type=int, default=1, help="threads per worker")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--seed", type=int, default=0)
    from benchmarks._cli import show_defaults
    args = show_defaults(p).parse_args(argv)
    from benchmarks._machine import machine
    X = sp.vstack([make_block(i, b, args.words, args.median_nnz, args.seed)
                   for i, b in enumerate(block_sizes(args.rows, args.block))], format="csr")
    res: dict = {"args": vars(args), "machine": machine(), "shape": X.shape, "nnz": int(X.nnz),
                 "csr_bytes": int(X.data.nbytes + X.indices.nbytes + 8 * (X.shape[0] + 1)),
                 "factor_bytes": (X.shape[0] + X.shape[1]) * args.k * 4}
    print(f"X {X.shape} nnz {X.nnz:,} ({res['csr_bytes'] / 2**20:.0f} MiB CSR), "
          f"factors {res['factor_bytes'] / 2**20:.1f} MiB; load {os.getloadavg()}", flush=True)
    res["memory"], ref = fit_memory(args, X)
    print("memory", json.dumps({k: v for k, v in res["memory"].items() if k != "loss"}), flush=True)
    for w in args.workers:
        res[f"dask-{w}"] = fit_dask(args, w, ref)
        print(f"dask-{w}", json.dumps({k: v for k, v in res[f"dask-{w}"].items() if k != "loss"}),
              flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
