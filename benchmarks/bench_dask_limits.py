"""Cr5 on a Dask cluster none of whose workers could hold the corpus (issue #30 item 3).

A Wikipedia-shaped corpus (:mod:`benchmarks.wiki_synth`, scale only) of ``--languages``
languages is fitted (1) in memory, the reference, and (2) on a ``LocalCluster`` of
``--workers`` worker processes, each with a memory limit of ``--limit-fraction`` of the corpus
(its float64 CSR bytes: values, column indices, row pointers), so that no worker could hold it;
(3) the same again with one worker process killed (SIGKILL) during the eigen-solve. Tight
tolerances (``eig_tol`` and dense block factors): the Dask fits must equal the reference to
1e-6. The peak RSS of every worker process is sampled during each fit.

Where the corpus lives (``--source``):

* ``disk`` (default): every language written once with :func:`linxling.io.write_chunks` (float64,
  its transpose too) under ``--workdir``, and given to the fit as a ``ChunkedCSR`` with
  ``client=``: each product's tasks read their rows from the file
  (:class:`linxling.operators._dask.DaskDiskSource`, ``--read-mib`` per task), so no worker keeps
  any of the corpus and a killed worker costs the product it was in;
* ``persist``: dask arrays of the in-memory chunks, persisted on the workers
  (:class:`~linxling.operators._dask.DaskSource`); a language that fits no worker stays spread,
  and a worker over its memory thresholds spills persisted chunks to its local disk (Dask's
  memory management, ``--spill`` / ``--pause``). With limits of a third of the corpus this
  failed (docs/scale.md): four workers hold a quarter each plus their baseline.

    # the run of benchmarks/README.md (1.54 GiB corpus, workers limited to 0.51 GiB, one killed)
    python benchmarks/bench_dask_limits.py --languages 4 --docs 220000 --vocab 1500 \
        --median-unique 150 --workers 4 --runs killed --workdir /tmp/linxling_dask_limits
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

TIGHT = dict(eig_tol=1e-10, eig_maxiter=2000, cg_rtol=1e-12, cg_maxiter=5000)


def _corpus_bytes(blocks) -> int:
    return int(sum(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes for X in blocks.values()))


class _PeakRSS:
    """Sample the RSS of the cluster's worker processes every 0.2 s (their peak, per pid)."""

    def __init__(self, pids):
        import psutil
        self.procs = {p: psutil.Process(p) for p in pids}
        self.peak = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            for pid, pr in self.procs.items():
                try:
                    self.peak[pid] = max(self.peak[pid], pr.memory_info().rss)
                except Exception:      # noqa: BLE001 - a killed worker
                    pass
            time.sleep(0.2)

    def stop(self) -> dict:
        self._stop.set()
        self._t.join()
        return self.peak


def _chunked(X, n_chunks: int):
    """A dask array of ``X``'s row chunks, each its own piece of data in the graph (not slices of
    one array: ``da.from_array`` would make every chunk task load the whole matrix on a worker)."""
    import dask
    import dask.array as da
    import scipy.sparse as sp
    rows = -(-X.shape[0] // n_chunks)
    parts = [da.from_delayed(dask.delayed(X[a:a + rows].copy()), shape=(min(rows, X.shape[0] - a), X.shape[1]),
                             dtype=X.dtype, meta=sp.csr_matrix((0, 0), dtype=X.dtype))
             for a in range(0, X.shape[0], rows)]
    return da.concatenate(parts, axis=0)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--languages", type=int, default=4)
    ap.add_argument("--docs", type=int, default=60_000, help="documents (= concepts) per language")
    ap.add_argument("--vocab", type=int, default=3000)
    ap.add_argument("--median-unique", type=float, default=400)
    ap.add_argument("--r", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--chunks", type=int, default=8, help="row chunks per language")
    ap.add_argument("--limit-fraction", type=float, default=1 / 3)
    ap.add_argument("--spill", type=float, default=0.7)
    ap.add_argument("--pause", type=float, default=0.95)
    ap.add_argument("--terminate", type=float, default=0.99,
                    help="share of the limit at which the nanny restarts a worker (Dask's setting)")
    ap.add_argument("--ref-cache", default=None, help="save / reuse the in-memory reference model here")
    ap.add_argument("--runs", default="plain,killed",
                    help="which Dask fits: plain, killed (a worker killed at the 2nd eigen-solver iteration)")
    ap.add_argument("--source", choices=["disk", "persist"], default="disk",
                    help="the corpus read from HDF5 by the workers per product, or persisted on them")
    ap.add_argument("--workdir", default="/tmp/linxling_dask_limits", help="HDF5 corpus files (--source disk)")
    ap.add_argument("--read-mib", type=float, default=16, help="MiB of stored chunks a task reads (--source disk)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dask_limits.json"))
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    import dask
    from distributed import Client, LocalCluster

    from benchmarks._machine import machine
    from benchmarks.wiki_synth import wiki_corpus
    from linxling import Cr5
    t0 = time.perf_counter()
    blocks, concepts = wiki_corpus(args.docs, n_languages=args.languages, vocab_size=args.vocab,
                                   median_unique=args.median_unique, max_unique=min(1000, args.vocab), min_df=1)
    C = _corpus_bytes(blocks)
    nnz = sum(X.nnz for X in blocks.values())
    limit = int(args.limit_fraction * C)
    res: dict = {"machine": machine(), "source": args.source, "languages": args.languages, "docs": args.docs,
                 "p": {k: X.shape[1] for k, X in blocks.items()}, "nnz": nnz, "corpus_bytes": C,
                 "worker_memory_limit": limit, "workers": args.workers, "r": args.r, "tolerances": TIGHT}
    print(f"corpus: {args.languages} languages x {args.docs} documents, nnz {nnz:,}, {C / 2**30:.2f} GiB "
          f"(float64 CSR), generated in {time.perf_counter() - t0:.0f} s; worker limit {limit / 2**30:.2f} GiB; "
          f"load {os.getloadavg()}", flush=True)
    kw = dict(n_components=args.r, alpha=1.0, block_method="dense", eig_method="subspace", random_state=0, **TIGHT)
    cache = Path(args.ref_cache) if args.ref_cache else None
    if cache is not None and cache.exists():        # the reference of an earlier run with the same arguments
        ref = Cr5.load(cache)
        res["memory"] = json.loads(cache.with_suffix(".json").read_text())
    else:
        t0 = time.perf_counter()
        ref = Cr5(**kw).fit_matrices(blocks, concepts)
        res["memory"] = {"fit_s": time.perf_counter() - t0, "eig": ref.convergence_["eig"],
                         "loadavg": os.getloadavg()}
        if cache is not None:
            ref.save(cache)
            cache.with_suffix(".json").write_text(json.dumps(res["memory"]))
    print(f"in memory: {res['memory']['fit_s']:.1f} s, eig {res['memory']['eig']}", flush=True)
    files = {}
    if args.source == "disk":
        from linxling.io import ChunkedCSR, write_chunks
        work = Path(args.workdir)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        for lang, X in blocks.items():
            write_chunks(work / f"{lang}.h5", X, overwrite=True)
            files[lang] = ChunkedCSR(work / f"{lang}.h5")
        res["disk"] = {"write_s": time.perf_counter() - t0, "workdir": str(work),
                       "file_bytes": {lang: (work / f"{lang}.h5").stat().st_size for lang in blocks},
                       "read_bytes_per_task": int(args.read_mib * 2 ** 20)}
        print(f"written to {work} in {res['disk']['write_s']:.0f} s", flush=True)
    env = {"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "LINXLING_NO_PROGRESS": "1", "PYTHONPATH": str(ROOT)}
    runs = [name == "killed" for name in args.runs.split(",") if name]
    res["dask"] = {}
    for kill in runs:
        with dask.config.set({"distributed.worker.memory.spill": args.spill,
                              "distributed.worker.memory.pause": args.pause,
                              "distributed.worker.memory.terminate": args.terminate}), \
                LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, memory_limit=limit,
                             dashboard_address=None, env=env) as cluster, Client(cluster) as client:
            client.run(lambda: __import__("linxling.models.cr5"))
            pids = client.run(os.getpid)
            meter = _PeakRSS(list(pids.values()))
            killed: list = []

            def kill_one(model, iteration, loss, _pids=pids, _killed=killed, _kill=kill):
                # at the 2nd eigen-solver iteration, 0.5 s later: inside the next products
                if _kill and not _killed and iteration >= 2:
                    addr, pid = sorted(_pids.items())[0]
                    threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
                    _killed.append(addr)

            if args.source == "disk":
                from linxling.operators._dask import DaskDiskSource
                dblocks = {lang: DaskDiskSource(files[lang], client=client, name=f"blocks[{lang!r}]",
                                                read_bytes=int(args.read_mib * 2 ** 20)) for lang in blocks}
            else:
                dblocks = {lang: _chunked(X, args.chunks) for lang, X in blocks.items()}
            t0 = time.perf_counter()
            got = Cr5(callback=kill_one, **kw).fit_matrices(dblocks, concepts, client=client)
            fit_s = time.perf_counter() - t0
            peaks = meter.stop()

            def spilled(dask_worker):
                total = getattr(dask_worker.data, "spilled_total", None)
                return None if total is None else int(getattr(total, "disk", 0))
            try:
                spill = client.run(spilled)
            except Exception:      # noqa: BLE001 - an older distributed
                spill = {}
            diff_ev = float(np.max(np.abs(got.eigenvalues_ / ref.eigenvalues_ - 1)))
            diff_c = max(float(np.max(np.abs(got.components_[k] - ref.components_[k]))) for k in blocks)
            rec = got.fit_info_["dask"]
            key = "killed" if kill else "plain"
            res["dask"][key] = {"fit_s": fit_s, "killed": killed, "eig": got.convergence_["eig"],
                                "eigenvalues_max_rel_diff": diff_ev, "components_max_abs_diff": diff_c,
                                "peak_rss_per_worker": {str(k): int(v) for k, v in peaks.items()},
                                "spilled_to_disk_bytes": spill,
                                "n_products": rec["n_products"], "n_local": rec["n_local"],
                                "n_retries": rec["n_retries"], "bytes_sent": rec["bytes_sent"],
                                "bytes_received": rec["bytes_received"], "placed_on": rec.get("placed_on"),
                                "loadavg": os.getloadavg()}
            print(f"dask ({key}): {fit_s:.1f} s, killed {killed}, retries {rec['n_retries']}; eigenvalues vs memory "
                  f"{diff_ev:.1e}, components {diff_c:.1e}; peak worker RSS "
                  f"{max(peaks.values()) / 2**30:.2f} GiB (limit {limit / 2**30:.2f}); spilled {spill}; "
                  f"placed {rec.get('placed_on')}; "
                  f"load {os.getloadavg()}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
