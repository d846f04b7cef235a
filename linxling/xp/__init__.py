"""The array-namespace path: the fits' hot loops written once against ``xp`` (NumPy or CuPy) and
``xsparse`` (SciPy or cupyx sparse), for the GPU and, with NumPy, on the CPU.

On the CPU linxling's default path is its numba kernels; this path is what ``device="cuda"`` runs
on a GPU, and the same code runs with NumPy/SciPy so that the CPU test suite exercises exactly
what the GPU runs (``tests/test_xp.py`` checks it against the numba path: Cr5 to 1e-8 at tight
tolerances, WMF loss and factors to 1e-6, CSLS ranks exactly).

- :class:`Device`: the modules of one device and the only two transfers, :meth:`Device.put`
  (host to device, at set-up) and :meth:`Device.get` (device to host, at the end). Inside an
  iteration nothing crosses: the tests count both through :class:`CountingDevice`.
- :mod:`linxling.xp.als`: the WMF family's ALS half-step as batched per-row CG (and Cholesky),
  the dense Gram products as GEMMs and the sparse corrections as SpMM, and an executor for the
  ALS driver (:mod:`linxling.models._als`); on CuPy the CG half-step is one fused CUDA kernel
  (:mod:`linxling.xp._cuda_cg`), checked against the array path by the ``gpu`` tests.
- :mod:`linxling.xp.cr5`: Cr5's fit: centred products, per-language dense Cholesky or block CG,
  the rank-one Woodbury correction, a block subspace eigen-solver with Cholesky-QR, Φ.
"""
from __future__ import annotations

from typing import Any

__all__ = ["Device", "CountingDevice", "device", "DEVICES", "is_device_array", "to_host", "choose_device"]

DEVICES = ("cpu", "cuda")


class Device:
    """One device's array modules (``xp``: NumPy or CuPy; ``sparse``: SciPy's or cupyx's, as in
    :class:`linxling._backend.Namespace`) and the only two transfers."""

    def __init__(self, name: str) -> None:
        from linxling._backend import cupy_status, namespace
        if name == "cupy":
            ok, reason = cupy_status()
            if not ok:
                raise RuntimeError(f"device='cuda' needs CuPy and a CUDA device: {reason}")
        ns = namespace(name)
        self.xp, self.sparse, self.name = ns.xp, ns.sparse, name

    def put(self, a: Any, dtype: Any = None) -> Any:
        """Host data to the device (dense arrays and SciPy sparse matrices, as CSR)."""
        import scipy.sparse as sp
        if sp.issparse(a):
            a = sp.csr_matrix(a, dtype=dtype if dtype is not None else a.dtype)
            if self.name == "numpy":
                return a
            return self.sparse.csr_matrix(a)
        return self.xp.asarray(a, dtype=dtype)

    def get(self, a: Any) -> Any:
        """Device data back to the host (a NumPy array); NumPy input unchanged."""
        if self.name == "numpy":
            return a
        return a.get()

    def sync(self) -> None:
        """Wait for the device's queued work (CuPy's current stream); nothing on NumPy. For
        timings at stage boundaries only: an iteration never waits on it."""
        if self.name == "cupy":
            self.xp.cuda.get_current_stream().synchronize()

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


class CountingDevice(Device):
    """A NumPy :class:`Device` that counts its transfers (for tests: a fit may only move data at
    set-up and at the end, never inside an iteration)."""

    def __init__(self) -> None:
        super().__init__("numpy")
        self.puts = 0
        self.gets = 0

    def put(self, a: Any, dtype: Any = None) -> Any:
        self.puts += 1
        return super().put(a, dtype)

    def get(self, a: Any) -> Any:
        self.gets += 1
        return super().get(a)


def device(name: str | Device) -> Device:
    """``"cpu"`` (NumPy; the numba kernels stay the default CPU path), ``"cuda"`` (CuPy), or a
    :class:`Device` as is."""
    if isinstance(name, Device):
        return name
    if name == "cpu":
        return Device("numpy")
    if name == "cuda":
        return Device("cupy")
    raise ValueError(f"device must be one of {DEVICES}, got {name!r}")


def is_device_array(a: Any) -> bool:
    """Whether ``a`` is a CuPy array or a ``cupyx.scipy.sparse`` matrix (checked by type, without
    importing CuPy)."""
    from linxling._backend import is_cupy_array
    return is_cupy_array(a)


def to_host(a: Any) -> Any:
    """A CuPy array or cupyx sparse matrix as NumPy/SciPy (one copy); anything else unchanged."""
    from linxling._backend import to_numpy
    return to_numpy(a)


def choose_device(param: Any, arrays: Any) -> str | Device:
    """The device a fit runs on: ``param`` itself, or for ``param=None`` ``"cuda"`` when any of
    ``arrays`` is a CuPy array (:func:`is_device_array`), else ``"cpu"``."""
    if param is not None:
        return param
    return "cuda" if any(is_device_array(a) for a in arrays) else "cpu"

