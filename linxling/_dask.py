"""Small helpers shared by the fits that run on a ``dask.distributed`` cluster.

- :func:`get_client`: the client a fit runs on (given, or the current default client).
- :func:`is_dask_array`, :func:`sparse_row_blocks`: check a dask array whose chunks are
  scipy.sparse row blocks and return its chunks as delayed objects with their row ranges.
- :func:`persist`: compute delayed objects on the workers and keep them there
  (:func:`on_worker` spreads them evenly).
  The blocks are made by tasks (never ``client.scatter``), so the scheduler can recompute a block
  lost with a worker from its lineage. :func:`holders`: where each block is now, to pin the
  tasks that use a block to its worker (no data moves, no work stealing of those tasks);
  :func:`gather_watching` gathers such tasks and gives up (:class:`WorkerLost`) when a worker
  they depend on is lost, so that the step can be run again.
- :func:`retry_lost`: run one step of a fit again when a worker was lost during it (the step is
  a pure function of data on the client and persisted blocks, so the retry gives the same result).
- :func:`kernel_threads`: inside a task, run a numba kernel with as many threads as the worker
  has, one kernel at a time per worker process.
- :class:`CommMeter`: the bytes each process of the cluster wrote to its TCP comms (a
  measuring tool for benchmarks and tests; it wraps ``distributed.comm.tcp.TCP.write``).

Nothing here imports dask at module import time: linxling works without a cluster.
"""
from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from linxling._warnings import find_stack_level

__all__ = ["get_client", "is_dask_array", "check_not_other_dask", "sparse_row_blocks", "persist", "worker_list",
           "worker_memory_limits",
           "on_worker",
           "holders", "retry_lost",
           "gather_watching", "WorkerLost",
           "kernel_threads", "n_workers", "CommMeter"]

T = TypeVar("T")


def get_client(client: Any = None, name: str = "client"):
    """``client`` when given (checked), else the current default ``dask.distributed`` client.

    Raises ValueError when there is none, or when it is a ``LocalCluster`` without workers that
    will never have one: a fit on row-partitioned data needs a cluster.
    """
    try:
        from distributed import Client, default_client
    except ImportError as exc:
        raise ImportError("fitting on a Dask cluster needs dask and dask.distributed, which linxling "
                          f"does not install by default: pip install 'linxling[dask]' ({exc})") from None
    if client is not None:
        if not isinstance(client, Client):
            raise TypeError(f"{name} must be a dask.distributed.Client or None, got {type(client).__name__}")
        if client.status not in ("running", "connecting", "newly-created"):
            raise ValueError(f"{name} is not running (status {client.status!r}); create a new Client")
    else:
        try:
            client = default_client()
        except ValueError:
            raise ValueError(f"no dask.distributed client: pass {name}=Client(...) or create a Client "
                             "first, e.g. Client(LocalCluster(n_workers=2)) or Client('scheduler:8786') "
                             "(the latest one becomes the default)") from None
    _wait_for_a_worker(client, name)
    _check_workers_run_linxling(client, name)
    return client


def _check_workers_run_linxling(client, name: str) -> None:
    """Every worker must import this linxling: the fit's tasks name its functions. A worker
    without it failed to read the first task and the fit waited forever (the worker's comm broke,
    its nanny restarted it, and it failed again)."""
    from linxling import __version__

    def probe():            # a nested function travels by value: it runs where linxling is missing
        import linxling
        return getattr(linxling, "__version__", None)
    got = client.run(probe, on_error="return")
    missing = {w: r for w, r in got.items() if isinstance(r, BaseException)}
    if missing:
        w, exc = next(iter(missing.items()))
        raise ImportError(f"{name}: {len(missing)} of {len(got)} dask workers cannot import linxling (e.g. "
                          f"{w}: {type(exc).__name__}: {exc}); install linxling {__version__} with its "
                          "dask extra where the workers run") from None
    other = {w: v for w, v in got.items() if v != __version__}
    if other:
        w, v = next(iter(other.items()))
        raise ImportError(f"{name}: {len(other)} of {len(got)} dask workers run another linxling (e.g. {w}: "
                          f"{v!r}) than this process ({__version__!r}); their tasks run this version's "
                          "functions by name: install the same version on the workers")


# how long a fit waits for the first worker of a cluster that has none before it says so (and
# goes on waiting: a batch queue may start the workers much later)
WORKER_WAIT_S = 60.0


def _wait_for_a_worker(client, name: str) -> None:
    """The fit places its blocks on the workers it finds at the start, so it needs one. A
    ``LocalCluster`` with no worker and no adaptive scaling (``LocalCluster(n_workers=0)``), whose
    tasks waited forever, is refused at once; any other cluster is waited on until a worker joins
    (a batch queue, or ``adapt(minimum=1)``, may take a while), with a warning after
    :data:`WORKER_WAIT_S` seconds."""
    if n_workers(client) > 0:
        return
    from distributed import LocalCluster
    cluster = getattr(client, "cluster", None)
    if isinstance(cluster, LocalCluster) and getattr(cluster, "_adaptive", None) is None:
        raise ValueError(f"{name}'s cluster has no workers (a LocalCluster with n_workers=0 and no "
                         "adapt()): start workers, e.g. LocalCluster(n_workers=2) or cluster.scale(2), "
                         "before fitting")
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        return
    except TimeoutError:
        pass
    warnings.warn(f"{name}'s cluster has had no worker for {WORKER_WAIT_S:g} s; the fit waits for one to "
                  "join (it places its blocks on the workers it finds at the start: an adaptive "
                  "cluster needs adapt(minimum=1) or more)", RuntimeWarning, stacklevel=find_stack_level())
    client.wait_for_workers(1)


def wait_on(client, futures) -> None:
    """``distributed.wait(futures)`` on ``client``: ``wait`` itself asks for the default client,
    which need not exist (``Client(..., set_as_default=False)``) or be this one (a later Client)."""
    from distributed import wait
    with client.as_current():
        wait(futures)


def worker_memory_limits(client) -> dict[str, int]:
    """``{address: memory limit in bytes (0: none)}`` of the workers the scheduler knows now,
    asked of the scheduler itself: ``Client.scheduler_info()`` returns a cache that the
    client's periodic refresh can replace with one without the workers (a race seen under load)."""
    def limits(dask_scheduler=None):
        return {w: int(ws.memory_limit or 0) for w, ws in dask_scheduler.workers.items()}
    return dict(client.run_on_scheduler(limits))


def n_workers(client) -> int:
    """Number of workers the scheduler knows now."""
    return len(worker_memory_limits(client))


def is_dask_array(X: Any) -> bool:
    """True for a ``dask.array.Array`` (checked without importing dask)."""
    return type(X).__module__.startswith("dask.array") and hasattr(X, "to_delayed")


def check_not_other_dask(X: Any, name: str) -> None:
    """Refuse a dask collection that is not a dask array (a ``Bag``, a ``DataFrame``, a
    ``Delayed``...), checked without importing dask. Before, such an input went down the
    in-memory paths: with ``client=`` the error said it was in memory, a ``Delayed`` failed with
    "Truth of Delayed objects is not supported" or "Cannot interpret 'Delayed(...)' as a data
    type", and a ``Bag`` of texts was computed on this machine behind the user's back."""
    t = type(X)
    module = t.__module__ or ""
    if not (module == "dask" or module.startswith(("dask.", "dask_expr"))) or is_dask_array(X):
        return
    raise TypeError(f"{name} is a {module}.{t.__qualname__}, not a dask array: the fits on a Dask "
                    "cluster take a dask array whose chunks are scipy.sparse matrices, chunked along "
                    "rows (e.g. dask.array.from_array(csr, chunks=(10_000, -1), asarray=False), or "
                    "dask.array.from_delayed blocks of CSR), or a ChunkedCSR; to fit it in memory, "
                    f"pass {name}.compute() (docs/scale.md)")


def sparse_row_blocks(X: Any, name: str = "X") -> tuple[list, list[tuple[int, int]]]:
    """The row chunks of a dask array with scipy.sparse chunks: ``(delayed_chunks, row_ranges)``.

    The array must be 2-D, of a real dtype, have known chunk sizes, one chunk along the columns, and a
    scipy.sparse ``_meta`` (e.g. ``da.from_array(csr, chunks=(10_000, -1), asarray=False)`` or
    ``X.map_blocks(scipy.sparse.csr_matrix)``). Each chunk is checked again when it is computed.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D dask array, got {X.ndim} dimension(s)")
    if any(np.isnan(c) for axis in X.chunks for c in axis):
        raise ValueError(f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() first")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"{name} must be chunked along rows only (one chunk along the columns), got "
                         f"{len(X.chunks[1])} column chunks; use {name}.rechunk({{1: -1}})")
    meta = getattr(X, "_meta", None)
    if meta is not None and not sp.issparse(meta):
        raise TypeError(f"{name} is a dask array with {type(meta).__module__}.{type(meta).__name__} "
                        "chunks; give scipy.sparse chunks, e.g. "
                        f"{name}.map_blocks(scipy.sparse.csr_matrix) or da.from_array(csr, "
                        "chunks=(rows, -1), asarray=False)")
    kind = np.dtype(X.dtype).kind
    if kind == "c":      # said once here, not by every chunk's task on the workers
        raise ValueError(f"Complex data not supported: {name} has dtype {X.dtype}")
    if kind not in "fiub":
        raise TypeError(f"{name} must hold real numbers, got a dask array of dtype {X.dtype}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} has shape {X.shape}: it needs at least one row and one column")
    bounds = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return list(X.to_delayed()[:, 0]), ranges


def worker_list(client) -> list[str]:
    """The addresses of the workers now, sorted."""
    return sorted(worker_memory_limits(client))


@contextmanager
def on_worker(workers: Sequence[str], i: int) -> Iterator[None]:
    """Annotate the delayed tasks made inside the block to run on worker ``i mod W`` (a loose
    restriction: another worker takes them when that one is gone); no-op without workers.

    Used to spread the blocks evenly over the workers in one :func:`persist` call (one call for
    all blocks: each call would send the user's graph again, e.g. a ``from_array`` matrix)."""
    if not workers:
        yield
        return
    import dask
    with dask.annotate(workers=[workers[i % len(workers)]], allow_other_workers=True):
        yield


def persist(client, delayeds: Sequence) -> list:
    """Compute ``delayeds`` on the cluster in one call and keep the results there; return
    their futures. Raises the first task's error (e.g. a bad chunk) after waiting for all."""
    futures = client.compute(list(delayeds))
    try:
        errors = [f.exception() for f in futures]   # waits for each; the data stays on the workers
    except BaseException:          # Ctrl-C while waiting: the tasks are not left running (a key
        for f in futures:          # no future holds is forgotten, its task not run)
            f.release()
        raise
    for f, e in zip(futures, errors, strict=True):
        if e is not None:
            f.result()                     # re-raises the task's exception with its traceback
    return futures


def direct(client) -> bool:
    """Whether to move blocks straight between this client and the workers (``scatter`` /
    ``gather`` with ``direct=True``) rather than through the scheduler, which would carry every
    block twice: yes unless the client was made with ``direct_to_workers=False`` (workers it
    cannot reach)."""
    return getattr(client, "direct_to_workers", None) is not False


def holders(client, futures: Sequence) -> list[list[str] | None]:
    """For each future, the workers holding its data now (None when none does)."""
    who = client.who_has(list(futures))
    return [list(who.get(f.key, ())) or None for f in futures]


class WorkerLost(ConnectionError):
    """A worker holding data of the current step left the cluster (the step can be run again)."""


def gather_watching(client, futures: Sequence, watch: Sequence, *, direct: bool | None = None,
                    poll_s: float = 0.01) -> list:
    """Gather ``futures``, each as soon as it is done (its transfer overlaps the others'
    work); raise :class:`WorkerLost` (cancelling those not gathered) as soon as one of
    ``watch`` (the data they need) is no longer in memory on the cluster.

    Needed for tasks pinned to the worker that holds their data (``allow_other_workers=False``,
    which also keeps work stealing from moving the data): when that worker dies they would
    wait for it forever. Only the client's own view of the futures is polled (no messages).
    """
    futures = list(futures)
    results: list = [None] * len(futures)
    pending = list(range(len(futures)))
    finished = threading.Event()
    for f in futures:
        f.add_done_callback(lambda _: finished.set())
    try:
        while pending:
            finished.clear()
            done = [i for i in pending if futures[i].done()]
            if done:     # fetched while the others still run
                for i, value in zip(done, client.gather([futures[i] for i in done], direct=direct),
                                    strict=True):
                    results[i] = value
                gathered = set(done)
                pending = [i for i in pending if i not in gathered]
                continue
            if any(w.status != "finished" for w in watch):
                raise WorkerLost("a worker holding data of this step was lost")
            finished.wait(poll_s)          # wakes as soon as one of them is done
    except BaseException:
        client.cancel([futures[i] for i in pending])
        raise
    return results


def lost_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "a worker (or data on it) was lost": the step is run again."""
    import asyncio
    from concurrent.futures import CancelledError

    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker
    return (KilledWorker, CommClosedError, asyncio.CancelledError, CancelledError, OSError, TimeoutError)


class CorpusReadError(RuntimeError):
    """A task could not read its rows of a corpus file (h5py raises a bare ``OSError`` for a
    file that is not HDF5 any more, or a truncated or damaged one): the file is at fault, not
    the worker, so the step is not run again as after a lost worker."""


# OSErrors about files are the tasks' own (e.g. a corpus path the workers cannot see): not retried
_FILE_ERRORS = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError,
                NotADirectoryError, CorpusReadError)


def retry_lost(step: Callable[[], T], *, retries: int = 3, wait_s: float = 1.0) -> T:
    """Run ``step()``; when it fails because a worker or its data was lost (closed comm, failed
    connection, cancelled future, timeout), wait and run it again, at most ``retries`` more times.

    ``step`` must be a pure function of data the client holds and of persisted blocks (which the
    scheduler recomputes from their lineage), so a retry gives the same result. Errors raised
    by the tasks themselves (bad input, a failed solve) are never retried.
    """
    lost = lost_errors()
    for attempt in range(retries + 1):
        try:
            return step()
        except _FILE_ERRORS:
            raise
        except lost:
            if attempt == retries:
                raise
            time.sleep(wait_s * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


_KERNEL_LOCK = threading.Lock()


@contextmanager
def kernel_threads() -> Iterator[int]:
    """Inside a task: run numba kernels with the worker's thread count, one kernel at a time.

    A worker with ``nthreads`` threads runs its tasks' kernels one after the other, each with
    ``min(nthreads, NUMBA_NUM_THREADS)`` numba threads, so a worker never uses more cores than it
    was given. On a worker BLAS is held to one thread meanwhile, as in a fit on one machine
    (:func:`linxling._threads.blas_single_thread`): the solvers' dense products then run in
    their fixed row parts on those threads (:mod:`linxling.kernels.dense`) and round as they
    do in one process. Before, nothing held BLAS on a worker, so those parts ran in order on one
    core: a block-Krylov solve of 330 columns (one K = 20,000 Wikipedia-shaped language, 7
    iterations) on a worker of 2 threads took 14.1 s against 12.5 s now (medians of 6,
    interleaved). Outside a worker the current numba and BLAS settings are kept. Yields the
    thread count.
    """
    import numba

    from linxling._threads import blas_single_thread
    on_worker = True
    try:
        from distributed import get_worker
        threads = int(get_worker().state.nthreads)
    except (ImportError, ValueError):
        threads = numba.get_num_threads()
        on_worker = False
    threads = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    with _KERNEL_LOCK, blas_single_thread(on_worker):
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            yield threads
        finally:
            numba.set_num_threads(before)


# --------------------------------------------------------------------------------------------
# measuring the bytes sent
# --------------------------------------------------------------------------------------------
_WRITTEN = [0]


def _install_counter() -> int:
    """Wrap ``TCP.write`` of this process once to add the bytes of every message written
    (distributed's frames: header and payload) to a counter; return the counter."""
    from distributed.comm import tcp
    if not getattr(tcp.TCP.write, "_linxling_counter", False):
        original = tcp.TCP.write

        async def write(self, msg, serializers=None, on_error="message"):
            n = await original(self, msg, serializers=serializers, on_error=on_error)
            _WRITTEN[0] += int(n)
            return n

        write._linxling_counter = True  # type: ignore[attr-defined]
        tcp.TCP.write = write  # type: ignore[method-assign]
    return _WRITTEN[0]


def _read_counter() -> tuple[int, int]:
    import os
    return os.getpid(), _WRITTEN[0]


class CommMeter:
    """Bytes written to TCP comms by the client, the scheduler and each worker of a cluster.

    Every message of ``dask.distributed`` between two processes (scatter, replication between
    workers, task messages, results, heartbeats) is written once by its sender, so the sum over
    all processes is the traffic between them, counted as distributed's frames (header and
    payload; not the TCP/IP headers). Creating the meter installs a counter in every process
    (a wrapper around ``distributed.comm.tcp.TCP.write``); a worker started later (e.g. one
    restarted by its nanny) is counted from the next :meth:`read` on. Clusters whose comms are
    not TCP (``inproc``, ``ucx``) are not counted. For benchmarks and tests.

    Examples
    --------
    >>> meter = CommMeter(client)                                  # doctest: +SKIP
    >>> before = meter.read(); ...; sent = meter.read() - before   # doctest: +SKIP
    """

    def __init__(self, client):
        self.client = client
        self._install()

    def _install(self) -> None:
        _install_counter()
        self.client.run(_install_counter)
        self.client.run_on_scheduler(_install_counter)

    def read_by_process(self) -> dict[str, int]:
        """``{"client": n, "scheduler": n, <worker address>: n, ...}`` bytes written so far.

        A process that plays two roles (a ``LocalCluster``'s scheduler runs in the client's
        process) is listed once, under its first role."""
        self._install()                    # new workers start counting now
        reads = [("client", _read_counter()), ("scheduler", self.client.run_on_scheduler(_read_counter))]
        reads += list(self.client.run(_read_counter).items())
        out, seen = {}, set()
        for role, (pid, n) in reads:
            if pid not in seen:
                seen.add(pid)
                out[role] = int(n)
        return out

    def read(self) -> int:
        """Total bytes written by all processes so far."""
        return int(sum(self.read_by_process().values()))
