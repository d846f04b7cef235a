"""Cr5 on a dask.distributed cluster: 1 vs 2 workers against the same fit in memory.

The problem comes from :mod:`benchmarks.wiki_synth` (scale runs only, never quality). Each
language becomes a dask array with scipy.sparse row chunks (``da.from_array(csr, chunks=(rows, -1),
asarray=False)``); ``Cr5.fit_matrices`` persists the chunks once on the workers and ships only
dense blocks per product. For ``n_workers`` in ``--workers`` a ``LocalCluster`` of processes
(``threads_per_worker`` = this machine's cores // workers, numba kernels with as many threads,
BLAS one thread) is started, the fit
timed, and ``fit_info_["dask"]`` read: bytes sent and received by the client (NumPy ``nbytes`` of
the dense blocks; worker-to-worker copies and headers not counted), per eigen-solver iteration;
and every byte written to the cluster's TCP comms during the fit by any process
(:class:`linxling._dask.CommMeter`: the one-time persist, worker-to-worker copies, headers).
The in-memory fit (the peer, numba on all cores of this process) runs in the same script.

``--links`` runs the Dask fits again with the loopback interface limited to each rate in Gbit/s
(:mod:`benchmarks._netshape`: needs root and ``tc``): a network of known bandwidth between the
client and the workers, to test the scaling model's network term (:mod:`benchmarks.dask_scaling`).
The unshaped runs are under ``"dask"`` in the JSON, the shaped ones under ``"links"``, by rate.

``--source disk`` writes each language once with :func:`linxling.io.write_chunks` (with its
transpose) under ``--workdir`` and gives the Dask fits ``ChunkedCSR`` files that the workers read
(:class:`linxling.operators._dask.DaskDiskSource`: nothing kept on the workers, whole block-CG
solves as one task on a language's worker); the same files are also fitted out of core in this
process (no cluster), a second peer under ``"out_of_core"``.

Usage::

    python benchmarks/bench_dask_cr5.py --concepts 4000 --vocab 30000 --r 24 --chunks 4
    sudo python benchmarks/bench_dask_cr5.py --concepts 60000 --vocab 200000 --r 300 --workers 1,2 --links 0,2,1
    python benchmarks/bench_dask_cr5.py --concepts 60000 --vocab 200000 --r 300 --workers 2,1 --source disk
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")


def _fit(blocks, concepts, r, client=None, placement="auto"):
    from linxling import Cr5
    model = Cr5(n_components=r, alpha=1.0, random_state=0, eig_method="subspace")
    c0, t0 = time.process_time(), time.perf_counter()
    model.fit_matrices(blocks, concepts, client=client, placement=placement)
    return model, time.perf_counter() - t0, time.process_time() - c0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concepts", type=int, default=4000)
    ap.add_argument("--vocab", type=int, default=30_000)
    ap.add_argument("--r", type=int, default=24)
    ap.add_argument("--chunks", type=int, default=4, help="row chunks per language (--source array)")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--kernel-threads", type=int, default=0,
                    help="numba threads per worker (default: this machine's cores // workers, so that "
                         "every fit uses the same cores)")
    ap.add_argument("--links", default="0",
                    help="comma-separated link rates in Gbit/s for the Dask fits; 0 = the loopback unshaped "
                         "(shaping needs root and tc)")
    ap.add_argument("--placement", choices=["auto", "spread"], default="auto",
                    help="Cr5.fit_matrices(placement=...): whole languages on workers (auto) or every "
                         "language's chunks over all of them, products chunk by chunk (spread)")
    ap.add_argument("--source", choices=["array", "disk"], default="array",
                    help="dask arrays persisted on the workers, or ChunkedCSR files the workers read")
    ap.add_argument("--workdir", default="/tmp/linxling_dask_cr5", help="HDF5 corpus files (--source disk)")
    ap.add_argument("--chunk-rows", type=int, default=2048, help="rows per stored chunk (--source disk)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dask_cr5.json"))
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    # the in-memory corpus travels once inside the graph (da.from_array; docs/scale.md says why):
    # distributed's "Sending large graph" warning, twice per fit, is expected here
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
    import dask.array as da
    from distributed import Client, LocalCluster

    from benchmarks._machine import machine
    from benchmarks._netshape import shaped_loopback
    from benchmarks.wiki_synth import wiki_corpus
    from linxling._dask import CommMeter
    blocks, concepts = wiki_corpus(args.concepts, vocab_size=args.vocab)
    nnz = sum(X.nnz for X in blocks.values())
    p = sum(X.shape[1] for X in blocks.values())
    print(f"problem: {args.concepts} concepts x {len(blocks)} languages, p = {p:,}, nnz = {nnz:,}; "
          f"r = {args.r}; load {os.getloadavg()}", flush=True)
    _fit({k: X[:200] for k, X in blocks.items()}, {k: c[:200] for k, c in concepts.items()}, 5)   # compile
    ref, t_mem, cpu_mem = _fit(blocks, concepts, args.r)
    res: dict = {"machine": machine(), "concepts": args.concepts, "p": p, "nnz": nnz, "r": args.r,
                 "memory": {"fit_s": t_mem, "fit_cpu_s": cpu_mem, "eig": ref.convergence_["eig"],
                            "block_methods": ref.fit_info_["block_methods"], "loadavg": os.getloadavg()},
                 "placement": args.placement, "dask": {}}
    print(f"in memory: {t_mem:.1f} s (CPU {cpu_mem:.1f} s), eig {ref.convergence_['eig']}, "
          f"blocks {ref.fit_info_['block_methods']}", flush=True)
    files = None
    if args.source == "disk":
        from linxling.io import ChunkedCSR, write_chunks
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        files = {}
        for lang, X in blocks.items():
            path = Path(args.workdir) / f"{lang}.h5"
            write_chunks(path, X, chunk_rows=args.chunk_rows, overwrite=True)
            files[lang] = ChunkedCSR(path)
        # what a pass over each file reads (benchmarks/dask_scaling.py models the reads)
        res["files"] = {lang: {"nbytes": f.nbytes, "nbytes_T": f.T.nbytes, "dtype": str(f.dtype),
                               "chunk_rows": args.chunk_rows} for lang, f in files.items()}
        ooc, t_ooc, cpu_ooc = _fit(files, concepts, args.r)
        diff = float(np.max(np.abs(ooc.singular_values_ / ref.singular_values_ - 1)))
        res["out_of_core"] = {"fit_s": t_ooc, "fit_cpu_s": cpu_ooc, "sv_max_rel_diff_vs_memory": diff,
                              "loadavg": os.getloadavg()}
        print(f"out of core in this process: {t_ooc:.1f} s (CPU {cpu_ooc:.1f} s), singular values vs memory "
              f"{diff:.1e}", flush=True)
    res["source"] = args.source
    links = [float(g) for g in args.links.split(",")]
    runs = [(g, int(w)) for g in links for w in args.workers.split(",")]
    for gbit, n_workers in runs:
        kt = args.kernel_threads or max(1, (os.cpu_count() or 1) // n_workers)
        one = {"NUMBA_NUM_THREADS": str(kt), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "LINXLING_NO_PROGRESS": "1", "PYTHONPATH": str(ROOT)}
        with shaped_loopback(gbit), \
                LocalCluster(n_workers=n_workers, threads_per_worker=kt, processes=True, dashboard_address=None,
                             env=one) as cluster, Client(cluster) as client:
            client.run(lambda: __import__("linxling.models.cr5"))
            dblocks = files or {lang: da.from_array(X, chunks=(-(-X.shape[0] // args.chunks), -1), asarray=False)
                                for lang, X in blocks.items()}
            meter = CommMeter(client)
            load0 = os.getloadavg()
            wire0 = meter.read()
            model, t, cpu = _fit(dblocks, concepts, args.r, client, args.placement)
            wire = meter.read() - wire0
            rec = model.fit_info_["dask"]
            diff = float(np.max(np.abs(model.singular_values_ / ref.singular_values_ - 1)))
            into = res["dask"] if not gbit else res.setdefault("links", {}).setdefault(f"{gbit:g}", {})
            into[n_workers] = {"link_gbit": gbit, "fit_s": t, "client_cpu_s": cpu, "dask": rec, "wire_bytes": wire,
                               "eig": model.convergence_["eig"],
                               "sv_max_rel_diff_vs_memory": diff, "loadavg": [load0, os.getloadavg()]}
            link = f", link {gbit:g} Gbit/s" if gbit else ""
            print(f"{n_workers} worker(s){link}: {t:.1f} s (client CPU {cpu:.1f} s), {rec['n_products']} products, "
                  f"sent {rec['bytes_sent'] / 2**20:.1f} MiB, received {rec['bytes_received'] / 2**20:.1f} MiB, "
                  f"on the wire (all processes, persist included) {wire / 2**20:.1f} MiB, "
                  f"per eig iteration {rec.get('bytes_per_eig_iteration', 0) / 2**20:.1f} MiB over "
                  f"{rec.get('eig_iterations')} iterations; eig {model.convergence_['eig']}; singular values "
                  f"vs memory {diff:.1e}; load {os.getloadavg()}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
