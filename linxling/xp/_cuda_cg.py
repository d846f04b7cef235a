"""The WMF family's CG half-step as one fused CUDA kernel (CuPy ``RawKernel``): what
:func:`linxling.xp.als.half_step` runs on a GPU for ``solver="cg"``.

The array path of :mod:`linxling.xp.als` takes each CG step of all rows as a GEMM, a gather and a
SpMM: a dozen kernel launches per step and the rows' vectors through device memory each time
(0.61-0.67 s per iteration on the WMF benchmark, 3.1-3.5x implicit's GPU ALS). Here each row's
whole solve runs in registers: 0.037 s per iteration on an H200, against implicit's 0.187 s at
equal loss (benchmarks/README.md, "The GPU suite"). The algorithm is that of
:func:`linxling.kernels.als._cg_chunk` (the same residual, stopping rules and objective):

- a *team* of warps solves one row: one warp for a row of at most ``LONG_ROW`` nonzeros (several
  such teams per thread block), ``NW`` warps (one thread block) for a longer one, so that the
  few very long rows of a Zipfian matrix (a frequent word's column: 80,000 nonzeros on the
  benchmark) do not hold up the launch;
- each lane holds ``KPL = ceil(k / 32)`` of the row's ``k`` factors (``x``, ``r``, ``p``, ``A p``,
  ``b``) in registers; ``G p`` reads ``G`` (k x k, cached) against ``p`` in shared memory;
- the sparse part ``Σ dw_i (y_i · p) y_i``: each warp of the team takes every ``NW``-th nonzero,
  a warp-shuffle sum per dot product; the warps' partial vectors are added in shared memory in
  warp order, so every warp of a team holds the same vectors and the result does not depend on
  scheduling (the same bits on every run).

The kernel is compiled by NVRTC on first use, once per dtype, ``KPL`` and team size (CuPy caches
the binary on disk). It is checked against the array path and the CPU's numba kernels by the
``gpu`` tests (``tests/test_xp.py``), including rows long enough for the block teams.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["fused_cg_half_step", "LONG_ROW", "kernel_source"]

#: rows with more nonzeros than this are solved by a team of several warps (one thread block)
LONG_ROW = 256
#: one-warp teams per thread block of the short rows' launch
SHORT_TEAMS = 4
#: at most this many warps in a long row's team (:func:`team_warps`): 32 (1,024 threads) for
#: k <= 128, 16 above
MAX_TEAM_WARPS = 32
#: at most this much shared memory per block (the default limit of every CUDA device)
SHARED_BYTES = 48 * 1024

_SOURCE = r"""
#define T __T__
#define KPL __KPL__
#define NW __NW__
#define BLOCK __BLOCK__

__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ void team_sync() {
#if NW > 1
    __syncthreads();
#else
    __syncwarp();
#endif
}

/* a[t] = sum_m v[m] G[m, j], j = lane + 32 t (v in shared memory): the product x G of the CPU */
__device__ __forceinline__ void gemv(const T* __restrict__ G, const T* v, T* a, int k, int lane) {
#pragma unroll
    for (int t = 0; t < KPL; ++t) a[t] = (T)0;
    for (int m = 0; m < k; ++m) {
        const T vm = v[m];
        const T* g = G + (long long)m * k;
#pragma unroll
        for (int t = 0; t < KPL; ++t) {
            const int j = lane + 32 * t;
            if (j < k) a[t] += vm * g[j];
        }
    }
}

/* a[t] += the team's partial vectors (this warp's in mine[t]), added in warp order */
__device__ __forceinline__ void team_add(T* part, const T* mine, T* a, int k, int lane, int member) {
#if NW > 1
    __syncthreads();
#pragma unroll
    for (int t = 0; t < KPL; ++t) {
        const int j = lane + 32 * t;
        if (j < k) part[member * k + j] = mine[t];
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < KPL; ++t) {
        const int j = lane + 32 * t;
        T s = (T)0;
        if (j < k)
            for (int w = 0; w < NW; ++w) s += part[w * k + j];
        a[t] += s;
    }
#else
#pragma unroll
    for (int t = 0; t < KPL; ++t) a[t] += mine[t];
#endif
}

__device__ __forceinline__ void load_row(const T* __restrict__ y, T* yv, int k, int lane) {
#pragma unroll
    for (int t = 0; t < KPL; ++t) {
        const int j = lane + 32 * t;
        yv[t] = j < k ? y[j] : (T)0;
    }
}

__device__ __forceinline__ T dot(const T* a, const T* b) {
    T s = (T)0;
#pragma unroll
    for (int t = 0; t < KPL; ++t) s += a[t] * b[t];
    return s;
}

extern "C" __global__ void __launch_bounds__(BLOCK) wmf_cg(
    const long long* __restrict__ indptr, const long long* __restrict__ indices,
    const T* __restrict__ data, const T* __restrict__ Y, const T* __restrict__ G,
    const T* __restrict__ dw, T* __restrict__ out, double* __restrict__ quad,
    const long long* __restrict__ rows, const int use_rows, const long long n_list,
    const int k, const int cg_steps, const long long max_len)
{
    extern __shared__ unsigned char smem_raw[];
    T* smem = reinterpret_cast<T*>(smem_raw);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#if NW > 1
    const int teams = 1, team = 0, member = warp;
#else
    const int teams = blockDim.x >> 5, team = warp, member = 0;
#endif
    T* vs = smem + (long long)team * k * (NW + 1);    /* the team's shared vector */
    T* part = vs + k;                                  /* NW partial vectors */
    for (long long n = (long long)blockIdx.x * teams + team; n < n_list; n += (long long)gridDim.x * teams) {
        const long long u = use_rows ? rows[n] : n;
        const long long s = indptr[u], e = indptr[u + 1];
        if (e - s > max_len) continue;                 /* a long row: the block teams' launch */
        T* xo = out + u * k;
        if (e == s) {                                  /* an empty row solves to zero */
            if (member == 0) {
#pragma unroll
                for (int t = 0; t < KPL; ++t) {
                    const int j = lane + 32 * t;
                    if (j < k) xo[j] = (T)0;
                }
                if (lane == 0) quad[u] = 0.0;
            }
            continue;
        }
        T x[KPL], r[KPL], p[KPL], ap[KPL], bv[KPL], m1[KPL], m2[KPL], y0[KPL], y1[KPL];
        load_row(xo, x, k, lane);
        /* r = b - A x with A x = x G + sum dw_i (y_i . x) y_i, b = sum X_ui y_i */
        team_sync();
        if (member == 0) {
#pragma unroll
            for (int t = 0; t < KPL; ++t) {
                const int j = lane + 32 * t;
                if (j < k) vs[j] = x[t];
            }
        }
        team_sync();
        gemv(G, vs, r, k, lane);
#pragma unroll
        for (int t = 0; t < KPL; ++t) { r[t] = -r[t]; bv[t] = (T)0; m1[t] = (T)0; m2[t] = (T)0; }
        long long q = s + member;
        for (; q + NW < e; q += 2 * NW) {              /* two nonzeros per pass: two loads in flight */
            const long long i0 = indices[q], i1 = indices[q + NW];
            load_row(Y + i0 * k, y0, k, lane);
            load_row(Y + i1 * k, y1, k, lane);
            const T d0 = warp_sum(dot(y0, x)), d1 = warp_sum(dot(y1, x));
            const T v0 = data[q], v1 = data[q + NW];
            const T c0 = v0 - dw[i0] * d0, c1 = v1 - dw[i1] * d1;
#pragma unroll
            for (int t = 0; t < KPL; ++t) {
                m1[t] += c0 * y0[t] + c1 * y1[t];
                m2[t] += v0 * y0[t] + v1 * y1[t];
            }
        }
        if (q < e) {
            const long long i0 = indices[q];
            load_row(Y + i0 * k, y0, k, lane);
            const T d0 = warp_sum(dot(y0, x));
            const T v0 = data[q];
            const T c0 = v0 - dw[i0] * d0;
#pragma unroll
            for (int t = 0; t < KPL; ++t) { m1[t] += c0 * y0[t]; m2[t] += v0 * y0[t]; }
        }
        team_add(part, m1, r, k, lane, member);
        team_add(part, m2, bv, k, lane, member);
#pragma unroll
        for (int t = 0; t < KPL; ++t) p[t] = r[t];
        T rsold = warp_sum(dot(r, r));
        const T tiny = (T)1e-30 + (T)1e-24 * rsold;
        bool active = rsold > (T)1e-30;
        for (int step = 0; step < cg_steps && active; ++step) {
            team_sync();
            if (member == 0) {
#pragma unroll
                for (int t = 0; t < KPL; ++t) {
                    const int j = lane + 32 * t;
                    if (j < k) vs[j] = p[t];
                }
            }
            team_sync();
            gemv(G, vs, ap, k, lane);
#pragma unroll
            for (int t = 0; t < KPL; ++t) m1[t] = (T)0;
            q = s + member;
            for (; q + NW < e; q += 2 * NW) {
                const long long i0 = indices[q], i1 = indices[q + NW];
                load_row(Y + i0 * k, y0, k, lane);
                load_row(Y + i1 * k, y1, k, lane);
                const T d0 = warp_sum(dot(y0, p)) * dw[i0], d1 = warp_sum(dot(y1, p)) * dw[i1];
#pragma unroll
                for (int t = 0; t < KPL; ++t) m1[t] += d0 * y0[t] + d1 * y1[t];
            }
            if (q < e) {
                const long long i0 = indices[q];
                load_row(Y + i0 * k, y0, k, lane);
                const T d0 = warp_sum(dot(y0, p)) * dw[i0];
#pragma unroll
                for (int t = 0; t < KPL; ++t) m1[t] += d0 * y0[t];
            }
            team_add(part, m1, ap, k, lane, member);
            const T pap = warp_sum(dot(p, ap));
            if (!(pap > (T)0)) break;
            const T alpha = rsold / pap;
#pragma unroll
            for (int t = 0; t < KPL; ++t) { x[t] += alpha * p[t]; r[t] -= alpha * ap[t]; }
            const T rsnew = warp_sum(dot(r, r));
            if (rsnew < tiny) break;
            const T beta = rsnew / rsold;
#pragma unroll
            for (int t = 0; t < KPL; ++t) p[t] = r[t] + beta * p[t];
            rsold = rsnew;
        }
#pragma unroll
        for (int t = 0; t < KPL; ++t) m1[t] = r[t] + bv[t];
        const T objective = warp_sum(dot(x, m1));
        if (member == 0) {
#pragma unroll
            for (int t = 0; t < KPL; ++t) {
                const int j = lane + 32 * t;
                if (j < k) xo[j] = x[t];
            }
            if (lane == 0) quad[u] = (double)objective;
        }
    }
}
"""


def kernel_source(dtype: Any, k: int, warps: int, block: int) -> str:
    """The CUDA source for ``dtype`` (float32 / float64), ``k`` factors, teams of ``warps`` and
    thread blocks of ``block`` threads (at most)."""
    name = {"float32": "float", "float64": "double"}[np.dtype(dtype).name]
    return (_SOURCE.replace("__T__", name).replace("__KPL__", str(max(1, -(-int(k) // 32))))
            .replace("__NW__", str(int(warps))).replace("__BLOCK__", str(int(block))))


def team_warps(k: int, itemsize: int) -> int:
    """Warps of a long row's team: as many as the shared memory holds (``(warps + 1) k`` values),
    at most :data:`MAX_TEAM_WARPS` (32: 1,024 threads, 64 registers each) for k <= 128 and 16
    (512 threads, 128 registers) above; 1 (no block teams) when fewer than 2 fit.

    Measured by the GPU suite's sweep (NVIDIA H200, 2026-11-27; WMF 200,000 x 50,000, k = 100,
    float32, benchmarks/README.md): the column half-step (1,647 long rows) took 7.2 ms with teams
    of 32 warps against 10.9 ms with 16, 21.1 ms with 8 and 40.3 ms with 4 (the row half-step,
    without long rows, 3.4 ms with each); at k = 100 the 32-warp build spills 240 bytes a thread
    (``nvcc -Xptxas -v``) and is still the fastest. Larger k, where a 1,024-thread team would spill
    more (580 bytes at k = 128 float64, more above), keep 16: not measured."""
    fit = SHARED_BYTES // (itemsize * max(int(k), 1)) - 1
    cap = MAX_TEAM_WARPS if int(k) <= 128 else 16
    return int(min(cap, fit)) if fit >= 2 else 1


def short_teams(k: int, itemsize: int) -> int:
    """One-warp teams per thread block: :data:`SHORT_TEAMS`, fewer when their shared memory
    (``2 k`` values each, as the kernel lays it out for any team) would pass :data:`SHARED_BYTES`."""
    return int(max(1, min(SHORT_TEAMS, SHARED_BYTES // (2 * itemsize * max(int(k), 1)))))


def fits(k: int, itemsize: int) -> bool:
    """Whether the fused kernel takes ``k`` factors (a one-warp team's ``2 k`` values in shared
    memory); larger ``k`` takes the array path."""
    return 2 * int(k) * itemsize <= SHARED_BYTES


@functools.cache
def _kernel(dtype_name: str, k: int, warps: int, block: int):
    import cupy
    return cupy.RawKernel(kernel_source(dtype_name, k, warps, block), "wmf_cg")


def fused_cg_half_step(X: Any, Y: Any, out: Any, G: Any, dw: Any, cg_steps: int, *,
                       long_row: int | None = None) -> float:
    """Solve every row of the device CSR ``X`` (:class:`linxling.xp.als.DeviceCSR`) into ``out``
    (in place, CG warm-started from it) with ``Y`` fixed; return the rows' objective (float64) as
    :func:`linxling.xp.als.half_step` does. ``long_row``: rows with more nonzeros go to the block
    teams (default :data:`LONG_ROW`; tests set it to 0 or a large value to send every row to one
    kind of team)."""
    import cupy
    xp = cupy
    k = int(Y.shape[1])
    dtype = np.dtype(Y.dtype)
    if out.dtype != dtype or G.dtype != dtype or X.data.dtype != dtype or dw.dtype != dtype:
        raise ValueError("fused_cg_half_step: X, Y, out, G and dw must share one dtype")
    if not out.flags.c_contiguous:
        raise ValueError("fused_cg_half_step: out must be C-contiguous (it is solved in place)")
    Y, G = xp.ascontiguousarray(Y), xp.ascontiguousarray(G)
    n = int(X.shape[0])
    limit = LONG_ROW if long_row is None else int(long_row)
    warps = team_warps(k, dtype.itemsize)
    if warps < 2:
        limit = np.iinfo(np.int64).max                # no room for block teams: one warp per row
    teams = short_teams(k, dtype.itemsize)
    quad = xp.empty(n, dtype=xp.float64)
    steps = np.int32(cg_steps)
    kk = np.int32(k)
    # one-warp teams: every row of at most `limit` nonzeros
    grid = max(1, min(-(-n // teams), 1 << 16))
    _kernel(dtype.name, k, 1, 32 * teams)((grid,), (32 * teams,),
                                          (X.indptr, X.indices, X.data, Y, G, dw, out, quad, X.indptr, np.int32(0),
                                           np.int64(n), kk, steps, np.int64(limit)),
                                          shared_mem=teams * 2 * k * dtype.itemsize)
    long_rows = X.long_rows(limit)
    if long_rows is not None:
        m = int(long_rows.shape[0])
        _kernel(dtype.name, k, warps, 32 * warps)((max(1, min(m, 1 << 16)),), (32 * warps,),
                                      (X.indptr, X.indices, X.data, Y, G, dw, out, quad, long_rows,
                                       np.int32(1), np.int64(m), kk, steps, np.int64(np.iinfo(np.int64).max)),
                                      shared_mem=(warps + 1) * k * dtype.itemsize)
    return -float(xp.sum(quad)) + X.data_sumsq()
