"""CSR times a dense row-major block on a GPU as one CUDA kernel (CuPy ``RawKernel``): a
candidate for Cr5's sparse products on the device, measured against cuSPARSE (what
``cupyx.scipy.sparse`` calls) by the GPU suite's ``spmm`` row before any fit uses it.

cuSPARSE reached 1 % of the device's copy bandwidth on Cr5's products (a 485,000 x 200,000 block,
82.4M nonzeros, 64 float32 columns: X V 27-33 ms, Xᵀ W 34-45 ms on an H200 and an H100;
benchmarks/README.md, "The GPU suite"). Each nonzero gathers a whole row of the dense block, so
the products are gather-bound; this kernel gathers rows the way the CPU kernels do:

- one warp per output row (several rows per thread block, a grid-stride loop over the rows);
- the row's nonzeros read 32 at a time, one per lane (coalesced), then broadcast by warp
  shuffles; for each, the lanes read the gathered row's columns consecutively (128 bytes per
  32 columns: coalesced) into ``MPL`` accumulators each, in registers;
- columns in panels of ``32 MPL`` (``MPL`` at most 8: 256 columns), one panel per ``blockIdx.y``;
- the nonzeros of a row are added in their stored order (the result does not depend on
  scheduling: the same bits on every run);
- rows of more than ``max_row`` nonzeros (:data:`MAX_ROW`; Xᵀ's rows are features, Zipfian:
  one warp walking a frequent word's hundreds of thousands of nonzeros held the whole product,
  83 ms against cuSPARSE's 35 ms on an H200) are cut into segments of at most ``max_row``
  (:func:`split_plan`: a finer row pointer over the same indices and values, nothing copied);
  the kernel writes one partial row per segment and a second launch of the same kernel adds
  each row's partials in order (a CSR of ones), so the result is still the same bits every run.

:func:`csr_matmat` is checked against cuSPARSE by the ``gpu`` tests (``tests/test_xp.py``) and
compiled by ``nvcc`` in the CPU tests where a CUDA toolkit is installed.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["csr_matmat", "fits_int32", "kernel_source", "make_plan", "split_plan", "MAX_MPL", "MAX_ROW",
           "ROWS_PER_BLOCK"]

#: at most this many columns per lane in a panel (panels of 32 MAX_MPL columns)
MAX_MPL = 8
#: output rows (warps) per thread block
ROWS_PER_BLOCK = 8
#: rows with more nonzeros are cut into segments of at most this many (:func:`split_plan`)
MAX_ROW = 1024

_SOURCE = r"""
#define T __T__
#define MPL __MPL__
#define BLOCK __BLOCK__

extern "C" __global__ void __launch_bounds__(BLOCK) csr_spmm(
    const int* __restrict__ indptr, const int* __restrict__ indices, const T* __restrict__ data,
    const T* __restrict__ V, T* __restrict__ out, const long long n_rows, const int m)
{
    const int lane = threadIdx.x & 31;
    const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;
    const int c0 = blockIdx.y * 32 * MPL;                 /* this panel's first column */
    bool on[MPL];
#pragma unroll
    for (int t = 0; t < MPL; ++t) on[t] = c0 + lane + 32 * t < m;
    for (long long u = first; u < n_rows; u += stride) {
        T acc[MPL];
#pragma unroll
        for (int t = 0; t < MPL; ++t) acc[t] = (T)0;
        const int s = indptr[u], e = indptr[u + 1];
        for (int base = s; base < e; base += 32) {
            int col = 0;
            T val = (T)0;
            if (base + lane < e) { col = indices[base + lane]; val = data[base + lane]; }
            const int cnt = min(32, e - base);
#pragma unroll 4
            for (int l = 0; l < cnt; ++l) {
                const long long c = __shfl_sync(0xffffffffu, col, l);
                const T a = __shfl_sync(0xffffffffu, val, l);
                const T* v = V + c * m + c0 + lane;
#pragma unroll
                for (int t = 0; t < MPL; ++t)
                    if (on[t]) acc[t] += a * v[32 * t];
            }
        }
        T* o = out + u * m + c0 + lane;
#pragma unroll
        for (int t = 0; t < MPL; ++t)
            if (on[t]) o[32 * t] = acc[t];
    }
}
"""


def columns_per_lane(m: int) -> int:
    """``MPL`` for ``m`` columns: ``ceil(m / 32)``, at most :data:`MAX_MPL`."""
    return int(max(1, min(MAX_MPL, -(-int(m) // 32))))


def kernel_source(dtype: Any, mpl: int, block: int = 32 * ROWS_PER_BLOCK) -> str:
    """The CUDA source for ``dtype`` (float32 / float64), ``mpl`` columns per lane and thread
    blocks of ``block`` threads."""
    name = {"float32": "float", "float64": "double"}[np.dtype(dtype).name]
    return _SOURCE.replace("__T__", name).replace("__MPL__", str(int(mpl))).replace("__BLOCK__", str(int(block)))


@functools.cache
def _kernel(dtype_name: str, mpl: int, block: int):
    import cupy
    return cupy.RawKernel(kernel_source(dtype_name, mpl, block), "csr_spmm")


INT32_MAX = int(np.iinfo(np.int32).max)


def fits_int32(A: Any) -> bool:
    """Whether the kernel's 32-bit row pointers and column indices can address ``A``."""
    return int(A.nnz) <= INT32_MAX and int(A.shape[1]) <= INT32_MAX


def split_plan(indptr: np.ndarray, max_row: int | None = MAX_ROW):
    """Segments of at most ``max_row`` nonzeros for a CSR's row pointer ``indptr`` (host array):
    ``(seg_indptr, row_segs)`` with segment ``s`` holding nonzeros ``seg_indptr[s]:seg_indptr[s + 1]``
    and row ``i`` its segments ``row_segs[i]:row_segs[i + 1]`` (an empty row has one empty
    segment); ``None`` when no row is longer than ``max_row`` (or ``max_row`` is None)."""
    if max_row is not None and int(max_row) < 1:
        raise ValueError(f"split_plan: max_row must be a positive integer or None, got {max_row!r}")
    indptr = np.asarray(indptr, dtype=np.int64)
    lengths = np.diff(indptr)
    if max_row is None or lengths.size == 0 or int(lengths.max()) <= int(max_row):
        return None
    per_row = np.maximum(1, -(-lengths // int(max_row)))
    row_segs = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(per_row, out=row_segs[1:])
    seg_row = np.repeat(np.arange(lengths.size), per_row)
    seg_indptr = np.empty(int(row_segs[-1]) + 1, dtype=np.int64)
    seg_indptr[:-1] = indptr[seg_row] + (np.arange(seg_row.size) - row_segs[seg_row]) * int(max_row)
    seg_indptr[-1] = indptr[-1]
    return seg_indptr, row_segs


class _Plan:
    """:func:`split_plan` on the device: the segments' row pointer and the CSR of ones that adds
    each row's partial rows."""

    def __init__(self, A: Any, max_row: int | None) -> None:
        import cupy
        import cupyx.scipy.sparse as csp
        plan = split_plan(A.indptr.get(), max_row)
        self.split = plan is not None
        if self.split:
            seg_indptr, row_segs = plan
            n_seg = seg_indptr.size - 1
            self.seg_indptr = cupy.asarray(seg_indptr, dtype=cupy.int32)
            self.sum = csp.csr_matrix((cupy.ones(n_seg, dtype=A.dtype), cupy.arange(n_seg, dtype=cupy.int32),
                                       cupy.asarray(row_segs, dtype=cupy.int32)), shape=(A.shape[0], n_seg))


def make_plan(A: Any, max_row: int | None = MAX_ROW) -> _Plan:
    """The long-row plan of the device CSR ``A`` for :func:`csr_matmat` (made once per matrix:
    it reads the row pointer back to the host)."""
    return _Plan(A, max_row)


def _launch(indptr: Any, indices: Any, data: Any, n: int, V: Any, out: Any) -> None:
    m = int(V.shape[1])
    mpl = columns_per_lane(m)
    block = 32 * ROWS_PER_BLOCK
    grid = (max(1, min(-(-n // ROWS_PER_BLOCK), 1 << 20)), -(-m // (32 * mpl)))
    _kernel(np.dtype(V.dtype).name, mpl, block)(grid, (block,),
                                                (indptr, indices, data, V, out, np.int64(n), np.int32(m)))


def csr_matmat(A: Any, V: Any, *, plan: _Plan | None = None, max_row: int | None = MAX_ROW) -> Any:
    """``A @ V`` for a ``cupyx.scipy.sparse`` CSR ``A`` (n, p) and a CuPy block ``V`` (p, m) of
    ``A``'s dtype (float32 or float64), by the kernel above; C-contiguous (n, m) result. Rows of
    more than ``max_row`` nonzeros are split (:func:`split_plan`); pass ``plan`` (from
    :func:`make_plan`) to reuse one matrix's plan across products."""
    import cupy
    if V.ndim != 2 or V.shape[0] != A.shape[1]:
        raise ValueError(f"csr_matmat: V must be 2-D with {A.shape[1]} rows, got shape {V.shape}")
    dtype = np.dtype(A.dtype)
    if V.dtype != dtype or dtype not in (np.float32, np.float64):
        raise ValueError(f"csr_matmat: A and V must share a float dtype, got {A.dtype} and {V.dtype}")
    if not fits_int32(A):
        raise ValueError(f"csr_matmat: the kernel indexes with 32-bit integers; A has {A.nnz:,} nonzeros and "
                         f"{A.shape[1]:,} columns (at most {INT32_MAX:,} each): use cuSPARSE (A @ V)")
    V = cupy.ascontiguousarray(V)
    n, m = int(A.shape[0]), int(V.shape[1])
    out = cupy.empty((n, m), dtype=dtype)
    if n == 0 or m == 0:
        return out
    if A.nnz == 0:
        out.fill(0)
        return out
    indices = A.indices.astype(cupy.int32, copy=False)
    if plan is None:
        plan = _Plan(A, max_row)
    if not plan.split:
        _launch(A.indptr.astype(cupy.int32, copy=False), indices, A.data, n, V, out)
        return out
    S = plan.sum
    partial = cupy.empty((S.shape[1], m), dtype=dtype)
    _launch(plan.seg_indptr, indices, A.data, S.shape[1], V, partial)
    _launch(S.indptr, S.indices, S.data, n, partial, out)
    return out
