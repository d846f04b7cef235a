"""One BLAS-thread policy for every model: BLAS runs one thread while a fit runs.

The fits' heavy loops are numba kernels that already use every core; a multi-threaded BLAS on
top of them (the small dense products between the kernels) oversubscribes the cores. The limit
is process-wide (that is how BLAS libraries work), so concurrent fits share it: it is set when
the first fit starts and lifted when the last one ends. Lifting it when *one* fit ended while
another still ran made the other's results depend on the timing (issue: two concurrent Cr5 fits
gave a Φ 0.389 away from a sequential fit).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["blas_single_thread", "blas_held", "numba_one_thread", "numba_serial", "numba_serialised"]

_LOCK = threading.Lock()
_STATE: dict = {"depth": 0, "limiter": None}


def _controller():
    """One ThreadpoolController for the process (made on first use: it loads the BLAS libraries)."""
    if "controller" not in _STATE:
        from threadpoolctl import ThreadpoolController
        _STATE["controller"] = ThreadpoolController()
    return _STATE["controller"]


@contextmanager
def blas_single_thread(enabled: bool = True) -> Iterator[None]:
    """Limit BLAS to one thread inside the block; re-entrant and shared by concurrent threads."""
    if not enabled:
        yield
        return
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["limiter"] = _controller().limit(limits=1, user_api="blas")
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                _STATE["limiter"].restore_original_limits()
                _STATE["limiter"] = None


def blas_held() -> bool:
    """Whether BLAS is held to one thread now (some fit runs :func:`blas_single_thread`): the
    solvers' dense products then split their rows over a thread pool
    (:mod:`linxling.kernels.dense`)."""
    return _STATE["depth"] > 0


# ---------------------------------------------------------------------------------------------
# numba's "workqueue" threading layer (the one left where neither TBB nor OpenMP loads, e.g. a
# macOS Python without libomp, or chosen with NUMBA_THREADING_LAYER=workqueue) is not thread-safe:
# two Python threads running parallel kernels at once make numba terminate the process
# ("Concurrent access has been detected"). A search service that embeds queries from several
# threads would die. Under that layer the public entry points run one at a time instead.
# ---------------------------------------------------------------------------------------------
_NUMBA_LOCK = threading.RLock()
_LAYER: dict = {}


def _workqueue() -> bool:
    """Whether numba's parallel kernels run (or will run) on the workqueue layer."""
    if "workqueue" in _LAYER:
        return _LAYER["workqueue"]
    import numba
    try:
        _LAYER["workqueue"] = numba.threading_layer() == "workqueue"   # once a parallel kernel ran
    except ValueError:                               # none yet: the layer numba will choose
        chosen = str(numba.config.THREADING_LAYER).lower()
        if chosen in ("tbb", "omp", "safe", "threadsafe", "workqueue"):
            _LAYER["workqueue"] = chosen == "workqueue"
        else:                                        # numba tries TBB, then OpenMP, then workqueue
            import importlib
            _LAYER["workqueue"] = True
            for pool in ("tbbpool", "omppool"):
                try:
                    importlib.import_module(f"numba.np.ufunc.{pool}")
                except Exception:                    # ImportError, or OSError: no libtbb/libgomp
                    continue
                _LAYER["workqueue"] = False
                break
    return _LAYER["workqueue"]


@contextmanager
def numba_serial() -> Iterator[None]:
    """Inside the block, no other thread runs linxling's numba kernels, when numba's threading
    layer is the workqueue (not thread-safe); a no-op under TBB or OpenMP. Re-entrant."""
    if not _workqueue():
        yield
        return
    with _NUMBA_LOCK:
        yield


def numba_serialised(fn: F) -> F:
    """``fn`` run inside :func:`numba_serial` (the public entry points that launch kernels)."""
    import functools

    @functools.wraps(fn)
    def serial(*args: Any, **kwargs: Any) -> Any:
        with numba_serial():
            return fn(*args, **kwargs)
    serial._linxling_serial = True                   # type: ignore[attr-defined]
    return cast(F, serial)


@contextmanager
def numba_one_thread(enabled: bool = True) -> Iterator[None]:
    """Inside the block, numba's parallel kernels launched by the calling thread run on it alone
    (numba's thread count belongs to each thread: other threads keep theirs).

    For inputs too small to share: a parallel launch waits at its barrier for every numba thread,
    and on a busy machine one that is descheduled costs a scheduler quantum. One row of a
    transform took 32 ms by a 2-thread launch against 4 us on one thread (2-core machine at load
    4-5, 2026-11-30). Only for kernels whose results do not depend on their thread count."""
    if not enabled:
        yield
        return
    import numba
    before = numba.get_num_threads()
    if before == 1:
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)
