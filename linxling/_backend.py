"""Array-namespace dispatch between NumPy/SciPy (CPU) and CuPy/cupyx (GPU).

CuPy is never imported at import time: :func:`get_namespace` looks at the *type* of the
arrays it is given (by module name) and only then imports cupy. ``HAS_CUPY`` is computed
lazily on first access and ``CUPY_REASON`` says why CuPy is unavailable when it is.

Examples
--------
>>> import numpy as np
>>> from linxling._backend import get_namespace
>>> ns = get_namespace(np.zeros(3))
>>> ns.name, ns.xp is np
('numpy', True)
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["Namespace", "get_namespace", "namespace", "is_cupy_array", "to_numpy", "cupy_status",
           "HAS_CUPY", "CUPY_REASON"]  # noqa: F822 (lazy module attributes, see __getattr__)


@dataclass(frozen=True)
class Namespace:
    """The array modules to use for one computation.

    Attributes
    ----------
    name : {"numpy", "cupy"}
    xp : module
        ``numpy`` or ``cupy``.
    sparse : module
        ``scipy.sparse`` or ``cupyx.scipy.sparse``.
    linalg : module
        ``scipy.linalg`` or ``cupy.linalg`` (dense factorisations).
    """

    name: str
    xp: ModuleType
    sparse: ModuleType
    linalg: ModuleType


_CUPY_STATE: dict[str, Any] = {}


def cupy_status() -> tuple[bool, str]:
    """Return ``(available, reason)`` for CuPy, importing it at most once."""
    if not _CUPY_STATE:
        try:
            cp = importlib.import_module("cupy")
            try:
                n = cp.cuda.runtime.getDeviceCount()
            except Exception as exc:  # pragma: no cover - needs a CUDA driver
                _CUPY_STATE.update(ok=False, reason=f"cupy is installed but no CUDA device: {exc}")
            else:
                if n > 0:  # pragma: no cover - needs a GPU
                    _CUPY_STATE.update(ok=True, reason=f"cupy {cp.__version__}, {n} device(s)")
                else:
                    _CUPY_STATE.update(ok=False, reason="cupy is installed but sees 0 CUDA devices")
        except Exception as exc:
            _CUPY_STATE.update(ok=False, reason=f"cupy is not importable ({type(exc).__name__}: {exc}); "
                                                 "install the 'gpu' extra: pip install linxling[gpu]")
    return _CUPY_STATE["ok"], _CUPY_STATE["reason"]


def __getattr__(name: str):  # lazy module attributes HAS_CUPY / CUPY_REASON
    if name == "HAS_CUPY":
        return cupy_status()[0]
    if name == "CUPY_REASON":
        return cupy_status()[1]
    raise AttributeError(name)


def is_cupy_array(x: Any) -> bool:
    """True if ``x`` is a CuPy dense array or a cupyx sparse matrix (checked by type, no import)."""
    mod = type(x).__module__ or ""
    return mod.startswith("cupy") or mod.startswith("cupyx")


_NUMPY_NS: Namespace | None = None


def _numpy_namespace() -> Namespace:
    global _NUMPY_NS
    if _NUMPY_NS is None:
        import numpy
        import scipy.linalg
        import scipy.sparse
        _NUMPY_NS = Namespace("numpy", numpy, scipy.sparse, scipy.linalg)
    return _NUMPY_NS


def get_namespace(*arrays: Any) -> Namespace:
    """Namespace for ``arrays``: CuPy if any is a CuPy array, NumPy otherwise.

    Mixing CuPy and NumPy arrays is an error (a silent device transfer would hide a slow path).
    ``None`` entries are ignored.
    """
    kinds = {is_cupy_array(a) for a in arrays if a is not None}
    if kinds == {True, False}:
        raise TypeError("arrays live on different devices (some CuPy, some NumPy/SciPy); "
                        "move them to one device first (cupy.asarray or .get())")
    if True in kinds:
        ok, reason = cupy_status()
        if not ok:  # pragma: no cover - only with a broken cupy install
            raise RuntimeError(f"CuPy arrays were given but CuPy is unusable: {reason}")
        return namespace("cupy")
    return _numpy_namespace()


def namespace(name: str) -> Namespace:
    """The :class:`Namespace` called ``name`` ("numpy" or "cupy"; CuPy is imported here, and the
    caller has checked :func:`cupy_status`)."""
    if name == "numpy":
        return _numpy_namespace()
    if name == "cupy":
        import cupy  # noqa: PLC0415  (imported only when asked for)
        import cupyx.scipy.sparse
        return Namespace("cupy", cupy, cupyx.scipy.sparse, cupy.linalg)
    raise ValueError(f"unknown array namespace {name!r}")


def to_numpy(x: Any) -> Any:
    """Copy a CuPy array (dense or sparse) to host memory; return NumPy/SciPy input unchanged."""
    if is_cupy_array(x):
        return x.get()
    return x
