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
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["blas_single_thread", "blas_held"]

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
