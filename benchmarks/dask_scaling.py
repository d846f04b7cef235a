"""A scaling model of Cr5 on a Dask cluster (issue #30 item 4), validated on measured runs.

**What it models.** A Cr5 fit on dask arrays is a client-side eigen-solve whose products run on
the workers (:class:`linxling.operators._dask.DaskSource`). Every product is one of

* ``gram``, ``matmat``, ``rmatmat`` computed **chunk by chunk** over the ``W`` workers holding a
  language's chunks: the client sends the dense block (``V``, or the row blocks of ``W``), each
  worker computes on its chunks, the partial sums are added pairwise on the workers, and the
  client receives the sum;
* the same products, or a whole Jacobi block-CG **solve**, run as one task on the worker that
  holds every chunk of the language (``local``): the client sends the right-hand sides and
  receives the solutions.

The time of one product is modelled as ::

    t = rounds · latency + (bytes + levels · crossing) · seconds_per_byte
        + work · seconds_per_nnz_column / cores + result · add_seconds(levels)

* ``work`` = nonzeros × columns × passes (2 passes for ``gram``, 1 for ``matmat``/``rmatmat``;
  a solve's iterations × 2), over the nonzeros of the language the product reads;
* ``cores`` = the workers' cores that share the work: all ``W × threads`` chunk by chunk, one
  worker's ``threads`` for a local task;
* ``bytes`` = what the client sends and receives (the product log's counts); chunk by chunk on
  ``W > 1`` workers, ``crossing`` = the bytes that also travel between workers, ``levels`` =
  ⌈log₂ W⌉ times each (a tree over the workers): the block every chunk needs (``V`` of ``X V``
  and ``XᵀX V``; the row blocks of ``Xᵀ W`` go straight to their chunks) and the partial sums
  (``Xᵀ W``, ``XᵀX V``; the row blocks of ``X V`` come straight back), each copy at the cost of
  a client↔worker transfer (one process serialises, another receives into fresh memory);
* ``result`` = the bytes of a summed product's result (``Xᵀ W``, ``XᵀX V``: one p_l × b block);
  at each level of the tree two partials of that size are added into a new one on a worker
  (each worker first sums its own chunks in one task, in place, which the model leaves out):
  ``add_seconds(levels)`` = the first level's seconds per byte (fresh memory) + (levels - 1) ×
  the upper levels' (memory the level below just freed: 8x faster here);
* ``rounds`` = 1 + ⌈log₂ W⌉ message rounds (scatter, tasks, reduction levels, gather);
* ``seconds_per_byte`` = the host's end-to-end cost of a transfer (serialisation, copies, this
  machine's loopback), or over a network link the slower of that and the link's own time
  (:meth:`Machine.seconds_per_byte`).

A corpus the workers read from files (:class:`linxling.operators._dask.DaskDiskSource`) adds
``reads · file_bytes · read_seconds_per_byte`` to a product: one pass over the language's file
per product (each worker its share, chunk by chunk), one per CG iteration of a whole solve, read
by one thread and not overlapped with the products; its Gram products and solves, summed read
by read, run at the streamed kernel's own rate (:func:`read_constants` measures both).

Languages placed whole on different workers run side by side: their work divides by the
languages running at once, their transfers do not (every block starts or ends at the client,
through its one network link: :func:`side_by_side`).

The fit's time is the client's own work (the eigen-solver's dense algebra, the Woodbury
correction, Φ), measured as the fit's wall time minus the time inside products and taken as
independent of ``W``, plus the sum over the fit's products. The machine's constants are
measured here (:func:`calibrate`): the gram kernel's seconds per nonzero and column on one and on
all cores (at the fits' width), the latency of a task round trip, the bandwidth of a
client↔worker transfer, the addition of two partial sums into a new block on a worker
(:func:`cross_worker_add`) and, for fits from files, a pass of reads and the streamed Gram
kernel (:func:`read_constants`). From the 1-worker run come the bandwidth end to end
(:func:`effective_bandwidth`, from its products other than whole solves) and a whole solve's
own cost beyond its products (:func:`solve_constants`: a fixed cost per solve and the block
CG's work per iteration and block element). The addition and the transfers
include first touches of fresh memory, which on this virtual machine cost about 10x a touch
of memory freed moments before (freed memory goes back to the host after about a second: free
page reporting), so the addition is measured after pauses from none to two seconds, and a
product's first-level additions are charged the rate after a pause of that product's own time
(:meth:`Machine.add_rate`): fast products add in memory the last one freed moments before.

**Validation.** :func:`validate` predicts, from the product log that ``bench_dask_cr5.py``
records for each run (``fit_info_["dask"]["product_log"]``), every run's time inside products
and whole fit, and compares them with the measurements. The network term is validated on runs
whose loopback was shaped to a known rate (``bench_dask_cr5.py --links``, :mod:`benchmarks._netshape`),
with the constants of the unshaped runs: nothing is fitted to the shaped runs.

**Prediction.** :func:`predict_job` gives a job of ``L`` languages on ``M`` machines with a
given network bandwidth, as the code runs it today (each language's products spread over every
machine, languages one after the other: ``placement="spread"``) and with every language's
solves run whole on the machine that holds it, languages side by side (``placement="auto"``,
:meth:`DaskSource.solve_local` on the worker :func:`place_sources` gives the language), the
corpus in the workers' memory or read from files (``file_bytes_per_language``).

    python benchmarks/dask_scaling.py --runs benchmarks/results/dask_cr5_60k.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PASSES = {"gram": 2, "matmat": 1, "rmatmat": 1}


@dataclass
class Machine:
    """The constants of the model (seconds, bytes/s)."""

    s_per_nnz_col_1: float      # gram kernel, one core: seconds per nonzero per column per pass
    s_per_nnz_col_all: float    # the same on all the machine's cores (per machine, not per core)
    cores: int                  # cores per machine
    latency: float              # one task round trip (submit, run nothing, gather)
    bandwidth: float            # bytes per second of one client <-> worker transfer, end to end
    #: seconds per byte of the sum of two blocks into a new one on a worker (the partial sums of a
    #: chunk-by-chunk product crossing between workers, :func:`linxling.operators._dask._add`), at
    #: the tree's first level (fresh memory) and at the levels above (in memory the level below
    #: just freed; 0: the first level's rate)
    add_seconds_per_byte: float = 0.0
    add_warm_seconds_per_byte: float = 0.0
    #: the first level's seconds per byte after the memory freed before it lay unused for each of
    #: ``add_idle_s`` seconds (:func:`cross_worker_add`; empty: ``add_seconds_per_byte`` whatever
    #: the pause). On a host that takes freed memory back after a delay (free page reporting) the
    #: rate climbs from the warm one to the cold one across that delay; :meth:`add_rate` reads the
    #: curve at a product's own time
    add_idle_s: tuple = ()
    add_after_idle_seconds_per_byte: tuple = ()
    #: a corpus read from its file (:class:`linxling.operators._dask.DaskDiskSource`, the
    #: out-of-core fit): seconds per byte of one pass over the file by the one thread that reads
    #: (HDF5 from the page cache, the values cast to the fit's dtype, the indices checked), and
    #: the kernel that sums ``X_iᵀ (X_i V)`` read by read (:meth:`ChunkedSource.gram_matmat`: each
    #: read transposed, then two row gathers) per nonzero, column and pass on one and on all
    #: cores (0: the in-memory kernel's rate)
    read_seconds_per_byte: float = 0.0
    s_per_nnz_col_stream_1: float = 0.0
    s_per_nnz_col_stream_all: float = 0.0
    #: a whole solve on a worker beyond its products: a fixed cost per solve task (in the fits
    #: measured, each language's 1-column solve is also its first on the worker, which builds
    #: the worker's copies or opens the file) and the block CG's own work per iteration and
    #: element of its p_l × m blocks (vector updates, preconditioner, dots), from the 1-worker
    #: run's solves (:func:`solve_constants`; 0: not modelled)
    solve_seconds: float = 0.0
    cg_seconds_per_element: float = 0.0

    def seconds_per_byte(self, link: float | None = None) -> float:
        """Seconds per byte moved between the client and a worker: the host's end-to-end cost
        (``1 / bandwidth``: serialisation, copies, the loopback), or over a network link of
        ``link`` bytes/s the slower of that and the link (the host's work streams alongside the
        link's, as the runs over a shaped loopback showed)."""
        return max(1.0 / self.bandwidth, 1.0 / link) if link else 1.0 / self.bandwidth

    def add_rate(self, pause: float) -> float:
        """Seconds per byte of a first-level addition of partial sums whose memory was freed
        ``pause`` seconds before (the curve :func:`cross_worker_add` measured, linear between its
        pauses and flat beyond them; without a curve, ``add_seconds_per_byte``)."""
        if len(self.add_idle_s) >= 2:
            return float(np.interp(pause, self.add_idle_s, self.add_after_idle_seconds_per_byte))
        return self.add_seconds_per_byte

    def rate(self, cores: int, streamed: bool = False) -> float:
        """Seconds per nonzero-column pass on ``cores`` cores of one machine (linear between the
        one-core and all-core measurements, never better than all cores); ``streamed``: of the
        Gram product summed read by read from a file (when measured)."""
        one, allc = self.s_per_nnz_col_1, self.s_per_nnz_col_all
        if streamed and self.s_per_nnz_col_stream_1 > 0:
            one, allc = self.s_per_nnz_col_stream_1, self.s_per_nnz_col_stream_all or self.s_per_nnz_col_stream_1
        cores = max(1, min(int(cores), self.cores))
        if cores == 1 or self.cores == 1:
            return one
        return one / (1 + (one / allc - 1) * (cores - 1) / (self.cores - 1))


#: the chunk-by-chunk products whose partial results are summed on the workers
SUMMED = ("gram", "rmatmat")
#: the chunk-by-chunk products whose one input block every worker needs (the others' blocks go
#: straight to the chunk holding their rows)
BROADCAST = ("gram", "matmat")


def product_seconds(m: Machine, kind: str, where: str, columns: int, iterations: int, nnz: float,
                    bytes_moved: float, workers: int, threads: int, *, link: float | None = None,
                    shared_cores: int | None = None, received: float = 0.0, shared_link: bool = False,
                    file_bytes: float = 0.0, block_rows: float = 0.0) -> float:
    """Modelled seconds of one product (see the module docstring). ``link``: the network's
    bandwidth in bytes/s (None: this machine's loopback, as measured). ``shared_cores``: the
    workers share one machine of that many cores (a LocalCluster): their aggregate speed is
    capped. ``received``: the bytes of the result (of ``bytes_moved``; the rest was sent); chunk by
    chunk, a broadcast block is copied to the other workers and a summed product's partials of
    the result's size are copied and added, at each of the tree's levels. ``shared_link``: every
    copy crosses the same link (a LocalCluster on a shaped loopback), so the ``W - 1`` copies of
    each crossing block follow one another; on a cluster each machine has its own link and the
    copies of one level run side by side. ``file_bytes``: the bytes of one pass over the
    language's file when the workers read it (:class:`linxling.operators._dask.DaskDiskSource`;
    0: the corpus held in their memory): one read per product, or per CG iteration of a solve, by
    one thread (chunk by chunk: each worker reads its share), the reads and the products one
    after the other; Gram products and solves at the streamed kernel's rate. ``block_rows``: the
    rows (p_l) of a whole solve's blocks, whose own work per iteration is charged
    (:attr:`Machine.cg_seconds_per_element`) with the solve's fixed cost."""
    per_byte = m.seconds_per_byte(link)
    streamed = file_bytes > 0 and kind in ("gram", "solve")
    reads = max(1, iterations) if kind == "solve" else 1
    read = reads * file_bytes * m.read_seconds_per_byte
    if where == "local":
        passes = 2 * max(1, iterations) if kind == "solve" else PASSES.get(kind, 2)
        own = m.solve_seconds + reads * block_rows * columns * m.cg_seconds_per_element if kind == "solve" else 0.0
        return (m.latency + bytes_moved * per_byte + nnz * columns * passes * m.rate(threads, streamed) + read
                + own)
    levels = math.ceil(math.log2(workers)) if workers > 1 else 0
    passes = PASSES.get(kind, 2)
    # each worker computes its share on its own cores (or all share one machine's cores)
    work = nnz * columns * passes
    if shared_cores is not None and workers * threads > shared_cores:
        compute = work * m.rate(shared_cores, streamed)
    else:
        compute = work / workers * m.rate(threads, streamed)
    compute += read / workers
    crossing = (bytes_moved - received if kind in BROADCAST else 0.0) + (received if kind in SUMMED else 0.0)
    copies = workers - 1 if shared_link and link else levels
    before_adds = (1 + levels) * m.latency + (bytes_moved + copies * crossing) * per_byte + compute
    adds = 0.0
    if kind in SUMMED and levels:
        # the first level adds in memory the last product freed: that product ended about this
        # one's own time before (the client's work between products is not counted)
        first = m.add_rate(before_adds)
        adds = received * (first + (levels - 1) * (m.add_warm_seconds_per_byte or first))
    return before_adds + adds


def side_by_side(total_s: float, transfer_s: float, side: int, cap: float = 1.0) -> float:
    """Seconds of products that run ``side`` at a time on different workers (whole languages
    placed), ``total_s`` their modelled sum of which ``transfer_s`` moves their bytes: the work
    runs side by side (``cap``: how much slower each runs for sharing cores), the transfers one
    after the other (every block starts or ends at the client, through its one link)."""
    return (total_s - transfer_s) / max(1, side) * cap + transfer_s


def calibrate(n_rows: int = 60_000, columns: int = 330, seed: int = 0, record: dict | None = None,
              file_dtype: str | None = None) -> Machine:
    """Measure the model's constants on this machine (a Wikipedia-shaped block, a 1-worker
    LocalCluster for latency and bandwidth, a 2-worker one for :func:`cross_worker_add`, whose
    whole measurement goes into ``record["cross_worker_add"]``). The kernels are timed on
    ``columns`` columns, the width of the fits' products and solves (r = 300 and its 10 %
    oversampling): per column a product of 64 columns costs more (at 1 thread 3.6e-10 against
    3.0e-10 s per nonzero and column on the AMD EPYC, 2026-11-29), and the streamed product's
    transposes cost the same at any width. With ``file_dtype`` the block is also written to a
    file of that dtype and :func:`read_constants` measured on it; the measurement goes into
    ``record["reads"]``."""
    import numba

    from benchmarks.wiki_synth import wiki_corpus
    from linxling.kernels.spmm import csr_matmat
    from linxling.operators.gram import Gram
    blocks, _ = wiki_corpus(n_rows, vocab_size=200_000, seed=seed)
    X = blocks["l0"].astype(np.float32).tocsr()
    XT = Gram(X, 1.0).transposed()
    V = np.random.default_rng(seed).standard_normal((X.shape[1], columns)).astype(np.float32)

    def per_pass(threads: int) -> float:
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            csr_matmat(XT, csr_matmat(X, V))
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                csr_matmat(XT, csr_matmat(X, V))
                best = min(best, time.perf_counter() - t0)
        finally:
            numba.set_num_threads(before)
        return best / (2 * X.nnz * columns)

    cores = numba.config.NUMBA_NUM_THREADS
    one, allc = per_pass(1), per_pass(cores)
    from distributed import Client, LocalCluster

    from linxling._dask import worker_list
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            Client(cl) as client:
        w = worker_list(client)[0]
        lat = []
        for _ in range(30):
            t0 = time.perf_counter()
            client.submit(int, 1, workers=[w], pure=False).result()
            lat.append(time.perf_counter() - t0)
        # a block of the size the products move (p_l x 360 float32 at K = 60,000: 268 MiB)
        block = np.ones(32 * 2 ** 20, dtype=np.float64)               # 256 MiB
        bw = []
        for _ in range(3):
            t0 = time.perf_counter()
            f = client.scatter(block, workers=[w], hash=False, direct=True)
            client.gather(f, direct=True)
            bw.append(2 * block.nbytes / (time.perf_counter() - t0))
            del f
    added = cross_worker_add()
    reads: dict = {}
    if file_dtype:
        reads = read_constants(blocks["l0"], V, file_dtype)
    if record is not None:
        record["cross_worker_add"] = added
        if reads:
            record["reads"] = reads
    return Machine(s_per_nnz_col_1=one, s_per_nnz_col_all=allc, cores=cores,
                   latency=float(np.median(lat)), bandwidth=float(np.median(bw)),
                   add_seconds_per_byte=added["add_seconds_per_byte"],
                   add_warm_seconds_per_byte=added["add_warm_seconds_per_byte"],
                   add_idle_s=tuple(added["add_idle_s"]),
                   add_after_idle_seconds_per_byte=tuple(added["add_after_idle_seconds_per_byte"]),
                   **{k: reads[k] for k in ("read_seconds_per_byte", "s_per_nnz_col_stream_1",
                                            "s_per_nnz_col_stream_all") if k in reads})


def read_constants(X, V, file_dtype: str = "float64", chunk_rows: int = 2048, repeats: int = 3) -> dict:
    """The constants of a corpus read from its file, measured on ``X`` written to a temporary
    HDF5 file of ``file_dtype`` (:func:`linxling.io.write_chunks`, ``chunk_rows`` a chunk, as
    ``bench_dask_cr5.py --source disk`` writes it) and read into ``V``'s dtype by a
    :class:`~linxling.operators._source.ChunkedSource` (its default reads of up to 64 MiB), the
    file in the page cache (read once first): a pass of reads alone (one thread: HDF5, the cast,
    the index check), ``read_seconds_per_byte`` per byte of the file's ``X``
    (:attr:`ChunkedCSR.nbytes`); and :meth:`ChunkedSource.gram_matmat` ``Xᵀ (X V)`` on one and
    on all numba threads, its time less the reads per nonzero, column and pass (2 passes):
    ``s_per_nnz_col_stream_1`` / ``_all``. Best of ``repeats`` each."""
    import tempfile

    import numba

    from benchmarks.floor import best_seconds
    from linxling.io import write_chunks
    from linxling.operators._source import ChunkedSource
    V = np.ascontiguousarray(V)
    cores = numba.config.NUMBA_NUM_THREADS

    def best(fn, threads: int) -> float:
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            return best_seconds(fn, repeats)
        finally:
            numba.set_num_threads(before)

    with tempfile.TemporaryDirectory(prefix="linxling_calibrate_") as d:
        f = write_chunks(Path(d) / "calibrate.h5", X.astype(file_dtype), chunk_rows=chunk_rows)
        src = ChunkedSource(f, dtype=V.dtype)
        out = np.zeros((X.shape[1], V.shape[1]), dtype=V.dtype)
        read = best(lambda: [None for _ in src._chunks(V.dtype)], 1)
        one = best(lambda: src.gram_matmat(V, out=out), 1)
        allc = best(lambda: src.gram_matmat(V, out=out), cores)
        nbytes = f.nbytes
    work = 2.0 * X.nnz * V.shape[1]
    return {"read_seconds_per_byte": read / nbytes, "s_per_nnz_col_stream_1": max(one - read, 0.0) / work,
            "s_per_nnz_col_stream_all": max(allc - read, 0.0) / work, "file_bytes": nbytes,
            "file_dtype": str(np.dtype(file_dtype)), "columns": int(V.shape[1]), "read_s": read,
            "gram_1_s": one, "gram_all_s": allc, "reads_per_pass": len(src._row_ranges)}


#: the pauses (seconds) after which :func:`cross_worker_add` measures the first level's addition:
#: from none to past the delay (about a second) after which this virtual machine's host takes
#: freed memory back
ADD_IDLES = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def cross_worker_add(nbytes: int = 256 * 2 ** 20, idles: tuple = ADD_IDLES, repeats: int = 5) -> dict:
    """Two levels of a chunk-by-chunk product's tree of partial sums, measured on a 2-worker
    LocalCluster. Worker A makes a block of ``nbytes``, worker B two; after a pause (one of
    ``idles`` seconds: the memory the last product freed lies unused meanwhile) A fetches B's first
    block and adds the two into a new one (:func:`linxling.operators._dask._add`: the first
    level), the inputs are released, and A fetches B's second block and adds it to that sum (a
    level above, in the memory the first level just freed). Every pause is measured ``repeats``
    times, the pauses in a new order each time. From the task stream: the first level's seconds
    per byte after each pause, the mean of the repeats (``add_after_idle_mean_seconds_per_byte``),
    made non-decreasing in the pause (``add_after_idle_seconds_per_byte``, with ``add_idle_s``:
    scikit-learn's isotonic regression; ``add_seconds_per_byte`` is its value at the longest
    pause), the second level's median over all (``add_warm_seconds_per_byte``), and the bytes per
    second of each level's copy after the longest pause, medians (``copy_bandwidth``,
    ``copy_warm_bandwidth``: for the record; the model charges a copy between workers what a
    client↔worker transfer costs in a fit). After a long pause the first level touches fresh
    memory, slow on this virtual machine (its freed memory goes back to the host: about 0.5 GB/s
    against 6 GB/s for memory just freed; module docstring). Between the two the outcome is
    either, by chance (on the Zen 5 VM, 2026-11-30, 3 repeats: 0.13-1.35 ns a byte after no pause,
    0.14-2.43 ns after 1 s): the host hands memory back in periodic sweeps. So the curve is the
    mean, the expected cost of the additions of many products, and the chance that memory is
    gone only grows with the pause, hence the monotone fit."""
    import distributed
    from distributed import Client, LocalCluster

    from linxling._dask import worker_list
    from linxling.operators._dask import _add
    idles = tuple(sorted(float(t) for t in idles))
    if not idles or idles[0] < 0:
        raise ValueError(f"idles must be pauses of 0 seconds or more, got {idles!r}")
    n = nbytes // 4
    one = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    spent: dict = {t: [] for t in idles}      # per pause, per repeat, per level: (copy s, addition s)

    def level(client, *args, where):
        with distributed.get_task_stream(client=client) as ts:
            out = client.submit(_add, *args, workers=[where], pure=False)
            distributed.wait(out)
        took: dict = {}
        for rec in ts.data:
            for st in rec["startstops"]:
                took[st["action"]] = took.get(st["action"], 0.0) + st["stop"] - st["start"]
        return out, (took.get("transfer", 0.0), took.get("compute", 0.0))

    order = np.random.default_rng(0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      env=one) as cl, Client(cl) as client:
        wa, wb = worker_list(client)
        # each measurement starts as a fit's product does, right after the last one freed its
        # blocks (the first, not recorded, makes that state for the second)
        for k, idle in enumerate([idles[0], *(t for _ in range(repeats) for t in order.permutation(idles))]):
            a = client.submit(np.ones, n, np.float32, workers=[wa], pure=False)
            b, c = (client.submit(np.ones, n, np.float32, workers=[wb], pure=False) for _ in range(2))
            distributed.wait([a, b, c])
            time.sleep(float(idle))
            first, t1 = level(client, a, b, where=wa)
            del a, b                  # released: their memory free for the level above
            top, t2 = level(client, first, c, where=wa)
            if k:
                spent[float(idle)].append((t1, t2))
            del first, c, top
    from sklearn.isotonic import isotonic_regression
    mean = [float(np.mean([lv[0][1] for lv in spent[t]])) / nbytes for t in idles]
    curve = [float(c) for c in isotonic_regression(mean, increasing=True)]
    warm = float(np.median([lv[1][1] for v in spent.values() for lv in v])) / nbytes
    last = np.median(np.array(spent[idles[-1]]), axis=0)       # (level, (copy, addition))
    return {"add_seconds_per_byte": curve[-1], "add_warm_seconds_per_byte": warm,
            "add_idle_s": list(idles), "add_after_idle_seconds_per_byte": curve,
            "add_after_idle_mean_seconds_per_byte": mean,
            "copy_bandwidth": nbytes / max(float(last[0, 0]), 1e-9),
            "copy_warm_bandwidth": nbytes / max(float(last[1, 0]), 1e-9),
            "levels_s": {str(t): v for t, v in spent.items()}}


def _log(run: dict) -> list[dict]:
    rec = run["dask"]
    fields = rec.get("product_log_fields") or ["kind", "where", "columns", "cg_iterations", "seconds",
                                               "bytes_sent", "bytes_received"]
    return [dict(zip(fields, e, strict=False)) for e in rec.get("product_log", [])]


def effective_bandwidth(run: dict, m: Machine, nnz_lang: float, threads: int, file_bytes: float = 0.0) -> float:
    """The bandwidth that explains a 1-worker run's products other than whole solves (every one
    on the one worker): their measured seconds less the modelled latency, compute and reads, per
    byte moved (serialisation and copies on both ends included, which a bare transfer test does
    not see). The solves, where the blocks moved are a few percent of the time, calibrate their
    own constants (:func:`solve_constants`); a run with no other product takes all of them."""
    rest, moved = 0.0, 0.0
    log = _log(run)
    others = any(e["kind"] != "solve" for e in log)
    for e in log:
        if e["kind"] == "solve" and others:
            continue
        b = e["bytes_sent"] + e["bytes_received"]
        rest += e["seconds"] - product_seconds(m, e["kind"], "local", e["columns"], e.get("cg_iterations", 1),
                                               nnz_lang, 0.0, 1, threads, file_bytes=file_bytes)
        moved += b
    return moved / rest if rest > 0 else m.bandwidth


def solve_constants(run: dict, m: Machine, nnz_lang: float, p_lang: float, threads: int,
                    file_bytes: float = 0.0) -> tuple[float, float]:
    """``(solve_seconds, cg_seconds_per_element)`` that explain a 1-worker run's whole solves:
    what their measured seconds leave beyond the modelled round trip, transfers, Gram products
    and reads, fitted (least squares, both at least 0) as a fixed cost per solve plus a cost per
    iteration and element of the solve's p_l × m blocks."""
    rows, rest = [], []
    for e in _log(run):
        if e["kind"] != "solve" or e["where"] != "local":
            continue
        iters = max(1, e.get("cg_iterations", 1) or 1)
        modelled = product_seconds(m, "solve", "local", e["columns"], iters, nnz_lang,
                                   e["bytes_sent"] + e["bytes_received"], 1, threads, file_bytes=file_bytes)
        rows.append((1.0, iters * p_lang * e["columns"]))
        rest.append(e["seconds"] - modelled)
    if not rows:
        return 0.0, 0.0
    A, b = np.array(rows), np.array(rest)
    coef = np.linalg.lstsq(A, b, rcond=None)[0] if len(rows) > 1 else np.array([b[0], 0.0])
    if coef[0] < 0:
        coef = np.array([0.0, max(0.0, float(A[:, 1] @ b / (A[:, 1] @ A[:, 1])))])
    elif coef[1] < 0:
        coef = np.array([max(0.0, float(b.mean())), 0.0])
    return float(coef[0]), float(coef[1])


def file_bytes(runs: dict, n_languages: int) -> float:
    """Bytes of one pass over a language's file in runs whose workers read the corpus from files
    (``runs["source"] == "disk"``; 0 otherwise): the mean of the files' ``nbytes`` as recorded,
    else (runs recorded before the files were) that of the float64 files ``bench_dask_cr5.py``
    writes, ``8 (n + 1) + 12 nnz_l``."""
    if runs.get("source") != "disk":
        return 0.0
    files = runs.get("files")
    if files:
        return float(np.mean([f["nbytes"] for f in files.values()]))
    return 8.0 * (runs["concepts"] + 1) + 12.0 * runs["nnz"] / n_languages


def validate(runs: dict, m: Machine, n_languages: int, link_gbit: float = 0.0) -> list[dict]:
    """Predicted against measured time inside products and whole fit, per run of
    ``bench_dask_cr5.py`` (its JSON). The languages are taken as equal in size (as the
    generator makes them): each product reads ``nnz / n_languages`` nonzeros, from the language's
    file in runs from files (:func:`file_bytes`). ``link_gbit``: validate the runs over the
    loopback shaped to that rate (``runs["links"]``; 0: the unshaped runs, ``runs["dask"]``)."""
    cores = m.cores
    nnz_lang = runs["nnz"] / n_languages
    p_lang = runs["p"] / n_languages
    per_file = file_bytes(runs, n_languages)
    link = link_gbit * 1e9 / 8 if link_gbit else None
    chosen = runs["links"][f"{link_gbit:g}"] if link_gbit else runs["dask"]
    rows = []
    for w, run in sorted(chosen.items(), key=lambda kv: int(kv[0])):
        w = int(w)
        threads = max(1, cores // w)
        log = _log(run)
        # languages placed on different workers run side by side: their products overlap
        placed = [v for v in (run["dask"].get("placed_on") or {}).values() if v]
        side = max(1, len(set(placed)))
        measured_products = sum(e["seconds"] for e in log) / side
        moved = sum(e["bytes_sent"] + e["bytes_received"] for e in log)
        predicted = sum(product_seconds(m, e["kind"], e["where"], e["columns"], e.get("cg_iterations", 1),
                                        nnz_lang, e["bytes_sent"] + e["bytes_received"], w, threads,
                                        link=link, shared_cores=cores, received=e["bytes_received"],
                                        shared_link=True, file_bytes=per_file, block_rows=p_lang)
                        for e in log)
        if side > 1:      # side by side (on shared cores: capped), the transfers one after the other
            predicted = side_by_side(predicted, moved * m.seconds_per_byte(link), side,
                                     max(1.0, side * threads / cores))
        client = run["fit_s"] - measured_products
        rows.append({"workers": w, "link_gbit": link_gbit, "threads_per_worker": threads,
                     "languages_side_by_side": side, "n_products": len(log),
                     "local": sum(e["where"] == "local" for e in log), "bytes": moved,
                     "products_measured_s": measured_products, "products_predicted_s": predicted,
                     "client_s": client, "fit_measured_s": run["fit_s"],
                     "fit_predicted_s": client + predicted,
                     "ratio": (client + predicted) / run["fit_s"]})
    return rows


def predict_job(m: Machine, run: dict, n_languages_run: int, *, languages: int, nnz_per_language: float,
                concepts_scale: float, machines: int, cores_per_machine: int, network: float,
                file_bytes_per_language: float = 0.0, disk_bandwidth: float | None = None) -> dict:
    """Seconds for a job of ``languages`` languages of ``nnz_per_language`` nonzeros each, whose
    per-language products are those of the measured 1-worker ``run`` (same count, columns and
    CG iterations per language: the solves' conditioning is assumed alike), with dense blocks
    ``concepts_scale`` times as long (the concepts and vocabularies grow with the corpus), on
    ``machines`` machines of ``cores_per_machine`` cores and a network of ``network`` bytes/s
    (each transfer at :meth:`Machine.seconds_per_byte` over that link).

    ``client_s`` (the client's own work) is scaled by ``concepts_scale · languages /
    n_languages_run`` (its dense blocks have K rows and p = Σ p_l). Two layouts:
    ``spread``: every language's chunks over all machines, products chunk by chunk, languages one
    after the other (what linxling does on a cluster whose workers share every language);
    ``local``: each machine holds whole languages and runs their products and solves as one task
    each, languages side by side on different machines (``placement="auto"``).

    ``file_bytes_per_language``: the workers read each language from its file (bytes of one pass;
    0: the corpus held in their memory), at the calibrated rate from the page cache or, with
    ``disk_bandwidth`` (bytes/s), at most that (a file no machine's memory caches).
    """
    log = _log(run)
    p_lang = run["p"] / n_languages_run            # the vocabulary rows of a solve's blocks (kept)
    read = m.read_seconds_per_byte
    if disk_bandwidth:
        read = max(read, 1.0 / disk_bandwidth)
    fm = Machine(**{**asdict(m), "cores": cores_per_machine, "read_seconds_per_byte": read})
    client_s = (run["fit_s"] - sum(e["seconds"] for e in log)) * concepts_scale * languages / n_languages_run

    def moved(e: dict) -> tuple[float, float]:
        """The entry's bytes sent and received for the job: blocks of vocabulary rows (p_l) keep
        their length, blocks of document rows (n_l = concepts) grow with ``concepts_scale``: the
        result of ``X V`` and the input of ``Xᵀ W``."""
        sent, received = float(e["bytes_sent"]), float(e["bytes_received"])
        if e["kind"] == "matmat":
            received *= concepts_scale
        elif e["kind"] == "rmatmat":
            sent *= concepts_scale
        return sent, received

    def total(layout: str) -> float:
        s, b = 0.0, 0.0
        for e in log:
            sent, received = moved(e)
            b += sent + received
            iters = e.get("cg_iterations", 1) or 1
            if layout == "spread":
                # chunk by chunk: a whole solve becomes one gram product per CG iteration, each
                # moving one block each way (as the solve's right-hand sides and solutions do)
                kind, n = ("gram", iters) if e["kind"] == "solve" else (e["kind"], 1)
                s += n * product_seconds(fm, kind, "chunks", e["columns"], 1, nnz_per_language, sent + received,
                                         machines, cores_per_machine, link=network, received=received,
                                         file_bytes=file_bytes_per_language)
            else:
                s += product_seconds(fm, e["kind"], "local", e["columns"], iters, nnz_per_language,
                                     sent + received, 1, cores_per_machine, link=network,
                                     file_bytes=file_bytes_per_language, block_rows=p_lang)
        s *= languages / n_languages_run           # the run's products cover its languages
        b *= languages / n_languages_run
        if layout == "local":                      # languages side by side on different machines
            s = side_by_side(s, b * fm.seconds_per_byte(network), min(machines, languages))
        return s

    spread, local = total("spread"), total("local")
    return {"machines": machines, "bandwidth_GBps": network / 1e9, "client_s": client_s,
            "spread_s": client_s + spread, "local_s": client_s + local,
            "memory_per_machine_GiB": languages * nnz_per_language * 28 / machines / 2 ** 30}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default=str(ROOT / "benchmarks" / "results" / "dask_cr5_60k.json"))
    ap.add_argument("--languages-in-runs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dask_scaling.json"))
    ap.add_argument("--constants", default=None,
                    help="reuse the machine constants of an earlier output (its machine_constants) "
                         "instead of measuring them (e.g. while the machine is busy)")
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    runs = json.loads(Path(args.runs).read_text())
    per_file = file_bytes(runs, args.languages_in_runs)
    measured: dict = {}
    if args.constants:
        known = json.loads(Path(args.constants).read_text())["machine_constants"]
        m = Machine(**{k: v for k, v in known.items() if k in Machine.__dataclass_fields__})
        print(f"machine constants from {args.constants}: {json.dumps(asdict(m))}", flush=True)
    else:
        print(f"calibrating on this machine (load {os.getloadavg()})", flush=True)
        # runs from files: the reads measured on a file of their dtype (float64 unless recorded)
        dtypes = {f.get("dtype", "float64") for f in (runs.get("files") or {}).values()} or {"float64"}
        m = calibrate(record=measured, file_dtype=sorted(dtypes)[0])
        print(json.dumps(asdict(m)), flush=True)
        print(f"bare transfer test: {m.bandwidth / 1e9:.2f} GB/s", flush=True)
    if "1" in runs["dask"] and not args.constants:   # calibrated on the 1-worker run, validated on the others
        nnz_l, p_l = runs["nnz"] / args.languages_in_runs, runs["p"] / args.languages_in_runs
        m = Machine(**{**asdict(m), "bandwidth": effective_bandwidth(runs["dask"]["1"], m, nnz_l, m.cores, per_file)})
        fixed, per_element = solve_constants(runs["dask"]["1"], m, nnz_l, p_l, m.cores, per_file)
        m = Machine(**{**asdict(m), "solve_seconds": fixed, "cg_seconds_per_element": per_element})
        print(f"effective bandwidth from the 1-worker run's products other than whole solves: "
              f"{m.bandwidth / 1e9:.2f} GB/s", flush=True)
        print(f"a whole solve beyond its products (the 1-worker run's): {fixed:.2f} s each and "
              f"{per_element * 1e9:.2f} ns per iteration and block element", flush=True)
    # the runs over a shaped loopback (bench_dask_cr5.py --links): validated with these constants
    links = sorted((float(g) for g in runs.get("links", {})), reverse=True)
    rows = [r for g in [0.0, *links] for r in validate(runs, m, args.languages_in_runs, g)]
    for r in rows:
        link = f", link {r['link_gbit']:g} Gbit/s" if r["link_gbit"] else ""
        print(f"W={r['workers']} x {r['threads_per_worker']} threads{link}: products measured "
              f"{r['products_measured_s']:.1f} s, predicted {r['products_predicted_s']:.1f} s; fit measured "
              f"{r['fit_measured_s']:.1f} s, predicted {r['fit_predicted_s']:.1f} s (x{r['ratio']:.2f}); "
              f"{r['n_products']} products ({r['local']} local), {r['bytes'] / 2**30:.2f} GiB", flush=True)
    # the paper's 28-language job: 28 languages shaped like the K = 485,000 Wikipedia pair's
    # languages (82.4M nonzeros, p_l = 200,000 each); the concepts grow 485,000 / 60,000 from the run
    one = dict(runs["dask"].get("1") or runs["dask"][min(runs["dask"], key=int)],
               concepts=runs["concepts"], p=runs["p"])
    # held in the workers' memory, and (with the reads measured) read from float32 files of
    # 8 (K + 1) + 8 nnz_l bytes, from the page cache or from disks of 0.5 GB/s
    sources = [("memory", 0.0, None)]
    if m.read_seconds_per_byte > 0:
        f32 = 8.0 * (485_000 + 1) + 8.0 * 82.4e6
        sources += [("files", f32, None), ("files at 0.5 GB/s", f32, 0.5e9)]
    preds = [{**predict_job(m, one, args.languages_in_runs, languages=28, nnz_per_language=82.4e6,
                            concepts_scale=485_000 / runs["concepts"], machines=M, cores_per_machine=cpm,
                            network=bw, file_bytes_per_language=fb, disk_bandwidth=disk), "source": src}
             for src, fb, disk in sources for M in (8, 64) for cpm in (16,) for bw in (0.125e9, 1.25e9, 12.5e9)]
    for p in preds:
        print(f"28 languages ({p['source']}) on {p['machines']} machines x 16 cores, {p['bandwidth_GBps']:.2f} "
              f"GB/s: spread {p['spread_s'] / 3600:.2f} h, whole-language solves {p['local_s'] / 3600:.2f} h "
              f"(client {p['client_s'] / 3600:.2f} h), {p['memory_per_machine_GiB']:.1f} GiB per machine",
              flush=True)
    res = {"machine_constants": asdict(m), "validation": rows, "prediction_28_languages": preds,
           "loadavg": os.getloadavg(), **measured}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
