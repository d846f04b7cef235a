"""numba's threading layer: TBB where the ``tbb`` wheel is installed, so that a process may fork.

numba runs the parallel kernels on TBB, GNU OpenMP or its own workqueue, the first that loads.
GNU OpenMP (libgomp, the one numba's Linux wheels link) cannot survive ``fork()``: once a parallel
kernel has run in a process, a parallel kernel in a child it forks makes numba terminate that
child ("Terminating: fork() called from a process already using GNU OpenMP"). Python's
``multiprocessing`` forks by default on Linux (3.11-3.13), and so do gunicorn's and celery's
workers, so a search service that loads a model, then forks workers that embed queries, or a
``multiprocessing.Pool`` that fits one model per worker after a fit in the parent, lost its
children: a Pool then waits forever for their results.

TBB is fork-safe, and numba prefers it, but only finds ``libtbb.so.12`` where the dynamic loader
looks: the PyPI ``tbb`` wheel puts it in the environment's ``lib/`` directory, which no loader
path names (numba issue #6108), so pip installs fell back to GNU OpenMP. linxling depends on
``tbb`` on Linux x86-64 and, at import, loads that library by its path
(:func:`load_tbb`); numba's own lookup by name then finds it already loaded and chooses TBB. It
is as fast here as OpenMP (benchmarks/README.md, "numba's threading layer"). Nothing changes when
numba has already started a layer, and ``NUMBA_THREADING_LAYER`` still chooses one.

Where TBB is not there (another platform, or ``NUMBA_THREADING_LAYER=omp``),
:func:`_after_fork_in_child` warns in a forked child whose parent ran GNU OpenMP kernels, naming
the cause and the cure, instead of leaving the child to be terminated without a word.
"""
from __future__ import annotations

import os
import sys
import warnings

__all__ = ["load_tbb", "tbb_library", "install_fork_check", "ForkAfterOpenMPWarning"]

_STATE: dict = {}


class ForkAfterOpenMPWarning(RuntimeWarning):
    """A process forked after numba's GNU OpenMP threads ran in its parent: a parallel kernel in
    the child would terminate it."""


def tbb_library() -> str | None:
    """The path of the ``tbb`` wheel's ``libtbb.so.12`` in this environment (or the user's site,
    for ``pip install --user``), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import site
    dirs = [os.path.join(sys.prefix, "lib")]
    try:
        dirs.append(os.path.join(site.getuserbase(), "lib"))
    except Exception:                               # an embedded interpreter without a user base
        pass
    for d in dirs:
        path = os.path.join(d, "libtbb.so.12")
        if os.path.isfile(path):
            return path
    return None


def load_tbb() -> str | None:
    """Load the ``tbb`` wheel's library (global symbols), so that numba's TBB layer finds it.

    Returns its path, or None where there is none, or where numba has already started a
    threading layer (it cannot change then). Once per process; never raises: a library that
    does not load leaves numba to choose as before."""
    if "tbb" in _STATE:
        return _STATE["tbb"]
    _STATE["tbb"] = None
    if _numba_layer_started():
        return None
    path = tbb_library()
    if path is not None:
        import ctypes
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            return None
        _STATE["tbb"] = path
    return _STATE["tbb"]


def _numba_layer_started() -> bool:
    """Whether numba has started its threading layer in this process (it cannot change then)."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return parallel is not None and bool(getattr(parallel, "_is_initialized", False))


def _gnu_openmp_started() -> bool:
    """Whether numba's parallel kernels have run in this process on GNU OpenMP."""
    if not _numba_layer_started():
        return False
    try:
        import numba
        if numba.threading_layer() != "omp":
            return False
        from numba.np.ufunc import omppool
        return getattr(omppool, "openmp_vendor", "GNU") == "GNU"
    except Exception:
        return False


def _after_fork_in_child() -> None:
    if _STATE.get("parent_gnu_omp"):
        warnings.warn(
            f"this process was forked after numba's parallel kernels ran on GNU OpenMP in its parent "
            f"(pid {os.getppid()}); GNU OpenMP is not fork-safe, so the first parallel kernel here (a linxling fit, "
            "or a transform of many rows) will terminate this process. Start workers with "
            "multiprocessing.get_context('spawn') or 'forkserver', or install the 'tbb' package "
            "(linxling then runs numba on TBB, which is fork-safe).",
            ForkAfterOpenMPWarning, stacklevel=2)


def _before_fork() -> None:
    _STATE["parent_gnu_omp"] = _gnu_openmp_started()


def install_fork_check() -> None:
    """Warn in forked children of a process that ran GNU OpenMP kernels (once per process)."""
    if _STATE.get("fork_check") or not hasattr(os, "register_at_fork"):
        return
    _STATE["fork_check"] = True
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
