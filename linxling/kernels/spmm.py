"""Sparse (CSR) × dense block products on all cores, with the plain SciPy product as reference.

SciPy's ``csr @ dense`` runs on one thread; Cr5's inner solves and cross-covariance products are
made of such products on blocks of 100+ vectors, so a row-parallel numba kernel (each output row
is owned by one thread: no atomics, no reduction) uses both cores of the machine. Transposed
products are fastest with an explicit CSR copy of ``Xᵀ`` (see :func:`csr_transpose`); when that
copy does not fit the memory budget, :func:`csr_rmatmat` computes ``Xᵀ V`` from ``X`` itself by a
scatter in which each thread owns a range of output *columns* (no atomics, no copy).

When the gathered operand is larger than the last-level cache (Cr5 at Wikipedia size: 485,000
documents x 360 columns of float32 = 700 MB), every nonzero fetches a row of it from memory.
:func:`tiled_rows_matmat` cuts the operand into tiles of rows that fit in the cache and sweeps
the sparse rows once per tile, resuming each row where the previous tile stopped (CSR column
indices are sorted); the additions happen in the same order as without tiles, so the result is
bitwise the same. Measured on one K = 485,000 block (82.4M nonzeros, 360 float32 columns, 2
cores, 48 MB L3): ``Xᵀ T`` 16.9 -> 7.9 s and ``X P`` 9.2 -> 5.0 s with 23 MB tiles.

The row kernels take eight nonzeros per pass: ``out[i] += ((a0 v0 + a1 v1) + (a2 v2 + a3 v3)) +
((a4 v4 + ...) + ...)`` loads and stores the output row once per eight gathered rows instead of
once per row, and keeps eight independent gathers in flight; each multiply and add is contracted
into one FMA where the CPU has it (numba's fastmath ``contract`` flag alone: nothing is
reassociated, so every kernel adds in the same order). The groups are counted from each row's
start and a group belongs to the tile of its first column (its other rows are read from ``V``
wherever they are), so tiles still never change the additions. Measured on one K = 485,000 block
(a later 2-core AMD EPYC, 32 MB L3, float32): four per pass instead of one, ``X P`` 2.11 -> 1.83 s
at 360 columns and 0.65 -> 0.53 s at 60, ``Xᵀ T`` 3.30 -> 2.72 s and 0.92 -> 0.72 s; eight per
pass with FMA instead of four (2026-11-27, 5 interleaved runs, load 1.4-1.7, medians of the last
four): ``X P`` 2.71 -> 2.42 s at 165 columns and 4.08 -> 3.65 s at 330, ``Xᵀ T`` 4.03 -> 2.99 s
and 7.67 -> 6.28 s; the whole Cr5 fit at that size 394.2 / 424.9 -> 380.4 / 372.3 s (interleaved,
benchmarks/README.md). The sums differ from SciPy's one-at-a-time order by rounding only (tests:
within the floating-point sum bound).
"""
from __future__ import annotations

import functools
import glob
import os

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["csr_matmat", "csr_matmat_reference", "csr_rmatmat", "csr_rmatmat_reference", "csr_transpose",
           "csr_transpose_reference",
           "rows_matmat", "rows_matmat_reference", "tiled_rows_matmat", "tile_rows", "tile_bytes",
           "MIN_PARALLEL_WORK", "NARROW_ROW_BYTES", "csr_column_sumsq", "csr_column_sumsq_reference",
           "csr_column_sums", "csr_column_sums_reference",
           "csr_column_stats", "csr_column_stats_reference", "value_stats", "value_stats_reference",
           "csr_has_canonical_format", "ROW_ALIGN", "aligned_empty", "padded_width", "on_lines"]

# below this many multiply-adds (nnz * n_cols) the thread start-up costs more than it saves
MIN_PARALLEL_WORK = 200_000


def tile_bytes() -> int:
    """Bytes of the gathered dense operand that one tile of :func:`tiled_rows_matmat` reads
    (rows of more than ``NARROW_ROW_BYTES``; narrower rows get half, see :func:`tile_rows`):
    ``LINXLING_TILE_BYTES`` when set, else half the last-level cache (Linux sysfs), clamped to
    4-64 MiB, else 16 MiB. Only speed depends on it, never the result."""
    env = os.environ.get("LINXLING_TILE_BYTES")
    if env:
        from linxling._memory import parse_budget
        return parse_budget(env, "the environment variable LINXLING_TILE_BYTES")
    return _cache_half()


@functools.lru_cache(maxsize=1)
def _cache_half() -> int:
    sizes = []
    for idx in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(os.path.join(idx, "type")) as fh:
                if fh.read().strip() == "Instruction":
                    continue
            with open(os.path.join(idx, "size")) as fh:
                txt = fh.read().strip().upper()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(txt[-1:], 1)
            sizes.append(int(txt.rstrip("KMG")) * mult)
        except (OSError, ValueError):
            continue
    if not sizes:
        return 16 << 20
    return int(min(max(max(sizes) // 2, 4 << 20), 64 << 20))


# rows of at most this many bytes get half of tile_bytes() per tile. Measured on one K = 485,000
# block (82.4M nonzeros, float32, a 2-core AMD EPYC with 32 MB L3, tiles of 4-24 MB, 2026-11-26):
# up to 128 columns (512 bytes) the best tiles held 6-12 MB (`X P` at 16 columns 0.437 s in the
# earlier tiles of at most 24,576 rows, 0.177 s in 8 MB; `Xᵀ T` 0.632 -> 0.409 s; at 64 columns
# 0.610 -> 0.526 and 0.879 -> 0.843 s), from 192 columns on 12-24 MB, as half the cache holds
NARROW_ROW_BYTES = 512


def tile_rows(n_rows: int, n_cols: int, itemsize: int) -> int:
    """Rows of a gathered (n_rows, n_cols) operand per tile (``n_rows``: one tile, no tiling):
    :func:`tile_bytes` of it, half of that for rows of at most ``NARROW_ROW_BYTES``, and at
    least 1,024 rows."""
    row = max(1, n_cols * itemsize)
    budget = tile_bytes() if row > NARROW_ROW_BYTES else tile_bytes() // 2
    width = max(1024, budget // row)
    return n_rows if width >= n_rows else int(width)


# The row kernels gather whole rows of a dense operand. A row that starts on a cache line and
# fills whole lines is read in the fewest lines, and its columns take whole SIMD vectors with no
# remainder loop; NumPy's large arrays start 16 bytes past a line (glibc's mmap header), so every
# row of an (n, 128) float32 block spans 9 lines instead of 8. Measured on one K = 485,000 block
# (485,000 x 200,000, 82.4M nonzeros, float32; `X V` then `Xᵀ T`, the pair of Cr5's inner CG
# product; 2-core Intel Xeon VM, 2026-12-02, widths and layouts interleaved, medians of 3-5):
# 112 columns 2.42 s in NumPy's layout, 2.20 s on lines; 128: 2.80 / 2.53 s; 110 columns 2.77 s,
# padded to 112 on lines 2.20 s; 165: 3.51 s, padded to 176: 3.32 s; 150: 3.39 s, 160: 3.04 s;
# 70: 1.71 s, 80: 1.36 s; but 97: 2.07 s, padded to 112: 2.20 s (more columns than it saves).
ROW_ALIGN = 64


def aligned_empty(size: int, dtype) -> np.ndarray:
    """A flat uninitialised array of ``size`` elements whose data starts on a ``ROW_ALIGN``-byte
    boundary (a cache line), so that ``buf[:n * w].reshape(n, w)`` has every row on a line when
    ``w`` fills whole lines (:func:`padded_width`)."""
    dtype = np.dtype(dtype)
    raw = np.empty(int(size) * dtype.itemsize + ROW_ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % ROW_ALIGN
    return raw[off:off + int(size) * dtype.itemsize].view(dtype)


def padded_width(m: int, dtype) -> int:
    """The columns to give an (n, m) block that the row kernels gather: ``m`` rounded up to whole
    cache lines (16 float32 or 8 float64 columns) when that adds at most an eighth of ``m``, else
    ``m`` (measured: the note above :data:`ROW_ALIGN`). Never decreases with ``m``."""
    per_line = max(1, ROW_ALIGN // np.dtype(dtype).itemsize)
    mp = -(-int(m) // per_line) * per_line
    return mp if 8 * (mp - m) <= m else int(m)


def on_lines(A: np.ndarray) -> bool:
    """Whether every row of the C-contiguous 2-D ``A`` starts on a cache line."""
    return A.ctypes.data % ROW_ALIGN == 0 and (A.shape[1] * A.itemsize) % ROW_ALIGN == 0


def _row_chunk(n_rows: int) -> int:
    """Output rows per parallel chunk of the tiled products: about 1,024 chunks, at least 64 rows."""
    return max(64, -(-n_rows // 1024))


def _thread_groups(starts, ends, chunk: int, n_groups: int | None = None) -> np.ndarray:
    """Boundaries ``b`` (int64, ``g + 1`` entries) that cut the row chunks of a product (``chunk``
    rows each, in order) into ``g`` contiguous runs of about equal nonzeros, one per numba
    thread: the products give run ``q`` (chunks ``b[q]:b[q + 1]``) to one thread.

    A parallel loop over the chunks themselves hands each thread an equal number of rows, which
    balances only when the nonzeros are spread evenly over the rows. A matrix whose rows come in
    frequency order (the transpose of a corpus whose vocabulary is sorted by frequency: the
    first rows hold most nonzeros) then left one thread with most of the work. Each run ends at
    the chunk boundary nearest its share of the nonzeros; every row and every chunk's sums are
    computed as before (only which thread computes them changes), so results do not change."""
    n_rows = int(starts.shape[0])
    n_chunks = -(-n_rows // chunk) if n_rows else 0
    g = max(1, min(int(numba.get_num_threads() if n_groups is None else n_groups), n_chunks))
    if g == 1:
        return np.array([0, n_chunks], dtype=np.int64)
    nnz = np.cumsum(np.asarray(ends, dtype=np.int64) - np.asarray(starts, dtype=np.int64))
    done = nnz[np.minimum(np.arange(1, n_chunks + 1, dtype=np.int64) * chunk, n_rows) - 1]
    share = done[-1] * np.arange(1, g, dtype=np.float64) / g
    j = np.minimum(np.searchsorted(done, share), n_chunks - 1)       # the first chunk reaching it
    before = np.where(j > 0, done[np.maximum(j - 1, 0)], 0)
    cut = np.where(done[j] - share <= share - before, j + 1, j)     # the nearer of its two ends
    return np.concatenate([[0], np.maximum.accumulate(cut), [n_chunks]]).astype(np.int64)


def csr_matmat_reference(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """The plain product ``X @ V`` (SciPy, one thread): the oracle of :func:`csr_matmat`."""
    return np.asarray(X @ V)


def csr_matmat(X: sp.csr_matrix, V: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``X @ V`` for CSR ``X`` (n, p) and dense ``V`` (p, m) on all numba threads (``V``'s rows in
    cache-sized tiles, :func:`tiled_rows_matmat`).

    Falls back to SciPy for small work, 1-D ``V``, non-CSR input, mixed dtypes, or non-NumPy
    arrays. The result has ``V``'s dtype when it equals ``X``'s (float32 stays float32).
    ``out``: an (n, m) C-contiguous array of that dtype to write the result into (every element
    overwritten; e.g. a buffer reused across products), returned; by default a new array. On the
    SciPy fallback the product is formed first and then copied into ``out`` (SciPy has no output
    argument), so only the numba path saves the temporary.
    """
    if (not isinstance(V, np.ndarray) or V.ndim != 2 or not sp.isspmatrix_csr(X)
            or X.dtype != V.dtype or V.dtype not in (np.float32, np.float64)
            or X.nnz * V.shape[1] < MIN_PARALLEL_WORK):
        if out is None:
            return np.asarray(X @ V)
        out[...] = np.asarray(X @ V).reshape(out.shape)
        return out
    shape = (X.shape[0], V.shape[1])
    if out is None:
        out = np.empty(shape, dtype=V.dtype)
    elif out.shape != shape or out.dtype != V.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {shape} array of dtype {V.dtype}, "
                         f"got {out.shape} {out.dtype}")
    return tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, out)


@numba.njit(parallel=True, fastmath=False, cache=True, nogil=True)
def _csr_rmatmat(indptr, indices, data, V, out, n_parts):  # pragma: no cover - compiled
    n_rows = V.shape[0]
    m = V.shape[1]
    for t in numba.prange(n_parts):
        c0 = t * m // n_parts
        c1 = (t + 1) * m // n_parts
        for r in range(out.shape[0]):
            for j in range(c0, c1):
                out[r, j] = 0.0
        for i in range(n_rows):
            for jj in range(indptr[i], indptr[i + 1]):
                a = data[jj]
                col = indices[jj]
                for j in range(c0, c1):
                    out[col, j] += a * V[i, j]


def csr_rmatmat_reference(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """The plain product ``Xᵀ @ V`` (SciPy): the oracle of :func:`csr_rmatmat`."""
    return np.asarray(X.T @ V)


def csr_rmatmat(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """``Xᵀ @ V`` for CSR ``X`` (n, p) and dense ``V`` (n, m), without a transposed copy of ``X``.

    Each numba thread owns a contiguous range of the ``m`` output columns and streams all of
    ``X`` (race-free scatter; the result does not depend on the thread count). Falls back to
    SciPy for small work and the cases :func:`csr_matmat` falls back for.
    """
    if (not isinstance(V, np.ndarray) or V.ndim != 2 or not sp.isspmatrix_csr(X)
            or X.dtype != V.dtype or V.dtype not in (np.float32, np.float64)
            or X.nnz * V.shape[1] < MIN_PARALLEL_WORK):
        return np.asarray(X.T @ V)
    Vc = np.ascontiguousarray(V)
    out = np.empty((X.shape[1], V.shape[1]), dtype=V.dtype)
    n_parts = max(1, min(numba.get_num_threads(), V.shape[1]))
    _csr_rmatmat(X.indptr, X.indices, X.data, Vc, out, n_parts)
    return out


# the row kernels contract a multiply and an add into one FMA where the CPU has it (numba's
# fastmath "contract" flag alone: no reassociation, so every kernel here still adds in one order)
_FM = {"contract"}


@numba.njit(fastmath=_FM, cache=True, nogil=True, inline="always")
def _add8(out, i, W, w, a):  # pragma: no cover - compiled
    """``out[i] += ((a0 W[w0] + a1 W[w1]) + (a2 W[w2] + a3 W[w3])) + ((a4 W[w4] + ...) + ...)``
    for the eight rows ``w`` and weights ``a`` (tuples): eight nonzeros of a row in one pass over
    ``out[i]`` (the grouping every row kernel here uses, so their sums agree)."""
    w0, w1, w2, w3, w4, w5, w6, w7 = w
    a0, a1, a2, a3, a4, a5, a6, a7 = a
    for j in range(out.shape[1]):
        out[i, j] += (((a0 * W[w0, j] + a1 * W[w1, j]) + (a2 * W[w2, j] + a3 * W[w3, j]))
                      + ((a4 * W[w4, j] + a5 * W[w5, j]) + (a6 * W[w6, j] + a7 * W[w7, j])))


@numba.njit(cache=True, nogil=True, inline="always")
def _weights8(data, k):  # pragma: no cover - compiled
    return (data[k], data[k + 1], data[k + 2], data[k + 3], data[k + 4], data[k + 5], data[k + 6], data[k + 7])


@numba.njit(cache=True, nogil=True, inline="always")
def _rows8(indices, k, colmap):  # pragma: no cover - compiled
    return (colmap[indices[k]], colmap[indices[k + 1]], colmap[indices[k + 2]], colmap[indices[k + 3]],
            colmap[indices[k + 4]], colmap[indices[k + 5]], colmap[indices[k + 6]], colmap[indices[k + 7]])


@numba.njit(cache=True, nogil=True, inline="always")
def _cols8(indices, k):  # pragma: no cover - compiled
    return (indices[k], indices[k + 1], indices[k + 2], indices[k + 3], indices[k + 4], indices[k + 5],
            indices[k + 6], indices[k + 7])


@numba.njit(parallel=True, fastmath=_FM, cache=True, nogil=True)
def _rows_matmat(starts, ends, indices, data, colmap, V, out, accumulate, groups):  # pragma: no cover
    for q in numba.prange(groups.shape[0] - 1):     # one run of rows per thread (_thread_groups)
        _rows_run(starts, ends, indices, data, colmap, V, out, accumulate, groups[q], groups[q + 1])


@numba.njit(fastmath=_FM, cache=True, nogil=True)
def _rows_run(starts, ends, indices, data, colmap, V, out, accumulate, i0, i1):  # pragma: no cover
    m = V.shape[1]
    for i in range(i0, i1):
        if not accumulate:
            for j in range(m):
                out[i, j] = 0.0
        s = starts[i]
        e = ends[i]
        g = s + (e - s) // 8 * 8
        for jj in range(s, g, 8):       # eight nonzeros per pass (see _tiled_rows)
            _add8(out, i, V, _rows8(indices, jj, colmap), _weights8(data, jj))
        for jj in range(g, e):
            a = data[jj]
            col = colmap[indices[jj]]
            for j in range(m):
                out[i, j] += a * V[col, j]


def rows_matmat_reference(starts, ends, indices, data, V, out, *, colmap=None, accumulate=False):
    """The plain loop over rows of :func:`rows_matmat` (NumPy per row): its oracle."""
    if not accumulate:
        out[...] = 0
    for i in range(out.shape[0]):
        sl = slice(int(starts[i]), int(ends[i]))
        cols = indices[sl] if colmap is None else colmap[indices[sl]]
        out[i] += data[sl] @ V[cols]
    return out


def rows_matmat(starts, ends, indices, data, V, out, *, colmap=None, accumulate=False):
    """``out[i] (+)= Σ_{jj in [starts[i], ends[i])} data[jj] · V[col(jj)]`` on all numba threads,
    with ``col(jj) = indices[jj]``, or ``colmap[indices[jj]]`` when ``colmap`` is given.

    A CSR product whose rows are given by separate ``starts`` / ``ends`` (the four-array form):
    the rows of a CSR matrix taken in any order, or spread over a longer output with empty rows,
    without copying its ``indices`` or ``data``; ``colmap`` renumbers the columns on the fly.
    Cr5 uses it when every concept has at most one document per language: ``YᵀX`` is then ``X``
    with its rows moved, and ``XᵀY`` is ``Xᵀ`` with its columns renumbered, so neither is stored.
    Each output row is owned by one thread (no atomics; the result does not depend on the thread
    count). ``out`` must be C-contiguous with ``V``'s dtype; with ``accumulate`` the products are
    added to it, else it is overwritten. Returns ``out``.

    When the gathered rows outgrow a cache tile (:func:`tile_rows`), the product runs in tiles:
    without ``colmap`` by :func:`tiled_rows_matmat`; with it, in tiles of the index space before
    renumbering (in which CSR indices are sorted), each tile's ``V[colmap[r]]`` first gathered into
    a cache-sized buffer, so a nonzero reads its row from the cache. With sorted indices the sums
    are bitwise those of the untiled loop. Measured on one K = 485,000 block (``Xᵀ`` with its
    485,000 document columns renumbered by a random permutation, 82.4M nonzeros, 2-core AMD EPYC,
    float32): 7.41 s at 128 columns and 20.3 s at 360 without tiles, 2.1-3.5 s and 5.8-6.8 s in
    these tiles, on a par with the identity numbering's tiled product (2.2-2.5 and 6.1-6.4 s).
    """
    V = np.ascontiguousarray(V)
    if out.dtype != V.dtype or data.dtype != V.dtype or not out.flags.c_contiguous:
        raise ValueError("rows_matmat: out, data and V must share one dtype and out must be C-contiguous")
    if colmap is None:      # V's rows in cache-sized tiles
        return tiled_rows_matmat(starts, ends, indices, data, V, out, accumulate=accumulate)
    # renumbered columns: tiles of the index space before renumbering (the order of the CSR
    # indices), each tile's rows of V gathered into a cache-sized buffer first
    colmap = np.asarray(colmap)
    width = tile_rows(colmap.shape[0], V.shape[1], V.dtype.itemsize)
    if width >= colmap.shape[0]:
        _rows_matmat(starts, ends, indices, data, colmap, V, out, bool(accumulate),
                     _thread_groups(starts, ends, 1))
        return out
    buf = np.empty((width, V.shape[1]), dtype=V.dtype)
    chunk = _row_chunk(out.shape[0])
    _tiled_rows_mapped(starts, ends, indices, data, colmap, V, out, bool(accumulate), chunk, width, buf,
                       _thread_groups(starts, ends, chunk))
    return out


@numba.njit(parallel=True, fastmath=_FM, cache=True, nogil=True)
def _tiled_rows_mapped(starts, ends, indices, data, colmap, V, out, accumulate, chunk, width, buf,  # pragma: no cover
                       groups):
    n_rows, m = out.shape
    n_src = colmap.shape[0]
    n_chunks = (n_rows + chunk - 1) // chunk
    n_tiles = max(1, (n_src + width - 1) // width)
    g_chunk = 1024
    cur = np.empty(n_rows, dtype=np.int64)
    for c in numba.prange(n_chunks):
        for i in range(c * chunk, min(n_rows, (c + 1) * chunk)):
            cur[i] = starts[i]
            if not accumulate:
                for j in range(m):
                    out[i, j] = 0.0
    for t in range(n_tiles):
        last = t == n_tiles - 1
        r0 = t * width
        r1 = min(n_src, r0 + width)
        for g in numba.prange((r1 - r0 + g_chunk - 1) // g_chunk):     # the tile's rows of V
            for r in range(r0 + g * g_chunk, min(r1, r0 + (g + 1) * g_chunk)):
                src = colmap[r]
                for j in range(m):
                    buf[r - r0, j] = V[src, j]
        for run in numba.prange(groups.shape[0] - 1):  # one run of chunks per thread (_thread_groups)
            for c in range(groups[run], groups[run + 1]):
                for i in range(c * chunk, min(n_rows, (c + 1) * chunk)):
                    k = cur[i]
                    e = ends[i]
                    g = starts[i] + (e - starts[i]) // 8 * 8
                    while k < g:        # groups of eight from the row's start, as the untiled product
                        i0 = indices[k]
                        if i0 >= r1 and not last:
                            break
                        inside = r0 <= i0
                        for q in range(k + 1, k + 8):
                            inside = inside and indices[q - 1] <= indices[q]
                        if inside and indices[k + 7] < r1:
                            # the whole group in the tile's buffer
                            i0, i1, i2, i3, i4, i5, i6, i7 = _cols8(indices, k)
                            _add8(out, i, buf, (i0 - r0, i1 - r0, i2 - r0, i3 - r0, i4 - r0, i5 - r0, i6 - r0, i7 - r0),
                                  _weights8(data, k))
                        else:   # a group across the tile's end, or unsorted: the same sums from V
                            _add8(out, i, V, _rows8(indices, k, colmap), _weights8(data, k))
                        k += 8
                    while k < e:
                        col = indices[k]
                        if col >= r1 and not last:
                            break
                        a = data[k]
                        if col >= r0:
                            for j in range(m):
                                out[i, j] += a * buf[col - r0, j]
                        else:           # an unsorted row's leftover (the last tile takes them all)
                            src = colmap[col]
                            for j in range(m):
                                out[i, j] += a * V[src, j]
                        k += 1
                    cur[i] = k


@numba.njit(parallel=True, fastmath=_FM, cache=True, nogil=True)
def _tiled_rows(starts, ends, indices, data, V, out, init, alpha, P, part, chunk, width, groups):  # pragma: no cover
    n_rows, m = out.shape
    n_chunks = (n_rows + chunk - 1) // chunk
    n_tiles = max(1, (V.shape[0] + width - 1) // width)
    dots = part.shape[0] > 0
    cur = np.empty(n_rows, dtype=np.int64)
    for c in numba.prange(n_chunks):
        if dots:
            for j in range(m):
                part[c, j] = 0.0
        for i in range(c * chunk, min(n_rows, (c + 1) * chunk)):
            cur[i] = starts[i]
            if init == 0:
                for j in range(m):
                    out[i, j] = 0.0
            elif init == 2:
                for j in range(m):
                    out[i, j] = alpha * P[i, j]
    for t in range(n_tiles):
        last = t == n_tiles - 1
        lim = (t + 1) * width
        for q in numba.prange(groups.shape[0] - 1):      # one run of chunks per thread (_thread_groups)
            for c in range(groups[q], groups[q + 1]):
                for i in range(c * chunk, min(n_rows, (c + 1) * chunk)):
                    k = cur[i]
                    e = ends[i]
                    # eight nonzeros per pass, in groups counted from the row's start: a group is
                    # taken by the tile that holds its first column (its other rows may lie in the
                    # next tiles: read from V all the same), so the additions are those of one tile
                    g = starts[i] + (e - starts[i]) // 8 * 8
                    while k < g:
                        if indices[k] >= lim and not last:
                            break
                        _add8(out, i, V, _cols8(indices, k), _weights8(data, k))
                        k += 8
                    while k < e:
                        col = indices[k]
                        if col >= lim and not last:
                            break
                        a = data[k]
                        for j in range(m):
                            out[i, j] += a * V[col, j]
                        k += 1
                    cur[i] = k
                    if last and dots:
                        for j in range(m):
                            part[c, j] += np.float64(P[i, j]) * np.float64(out[i, j])


def tiled_rows_matmat(starts, ends, indices, data, V, out, *, accumulate=False, alpha=None, P=None,
                      part=None, chunk=None, width=None):
    """:func:`rows_matmat` (no ``colmap``) with ``V``'s rows taken in cache-sized tiles.

    ``out[i] = init_i + Σ_{jj in [starts[i], ends[i])} data[jj] · V[indices[jj]]`` with ``init_i``
    zero, ``out[i]`` (``accumulate``) or ``alpha · P[i]`` (``alpha`` and ``P`` given: the ridge
    term of a Gram product). With ``part`` (n_chunks, m) float64 and ``chunk`` (rows per partial
    sum) it also returns the column dots ``part[c, j] = Σ_{i in chunk c} P[i, j] out[i, j]`` (the
    ``pᵀq`` of block CG, summed in a fixed chunk order: independent of the thread count).

    ``width``: rows of ``V`` per tile (default :func:`tile_rows`: about :func:`tile_bytes` of
    ``V``). Sorted column indices within each row give bitwise the result of one tile (the plain
    kernel, its reference); unsorted ones are still all summed (the last tile takes what is left).
    """
    V = np.ascontiguousarray(V)
    m = V.shape[1]
    if out.dtype != V.dtype or data.dtype != V.dtype or not out.flags.c_contiguous or out.shape[1] != m:
        raise ValueError("tiled_rows_matmat: out, data and V must share one dtype and width, and out "
                         "must be C-contiguous")
    init = 1 if accumulate else 0
    if alpha is not None:
        if P is None or P.shape != out.shape:
            raise ValueError("tiled_rows_matmat: alpha needs P of out's shape")
        init = 2
    Pk = P if P is not None else np.zeros((1, 1), dtype=V.dtype)
    if part is None:
        part = np.zeros((0, m))
        chunk = _row_chunk(out.shape[0])
    elif chunk is None:
        raise ValueError("tiled_rows_matmat: part needs chunk")
    if part.shape[0] and P is None:
        raise ValueError("tiled_rows_matmat: the column dots (part) need P")
    width = tile_rows(V.shape[0], m, V.dtype.itemsize) if width is None else int(width)
    _tiled_rows(starts, ends, indices, data, V, out, init, V.dtype.type(0.0 if alpha is None else alpha),
                Pk, part, int(chunk), max(1, width), _thread_groups(starts, ends, int(chunk)))
    return out


@numba.njit(cache=True, nogil=True)
def _add_rows(out, rows, T):  # pragma: no cover - compiled
    for i in range(T.shape[0]):
        r = rows[i]
        for j in range(T.shape[1]):
            out[r, j] += T[i, j]


def add_rows(out: np.ndarray, rows: np.ndarray, T: np.ndarray) -> np.ndarray:
    """``out[rows[i]] += T[i]`` for i in order (repeated rows summed in that order; one thread:
    a pass over ``T``, bound by memory). Returns ``out``."""
    T = np.ascontiguousarray(T, dtype=out.dtype)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape != (T.shape[0],) or T.ndim != 2 or T.shape[1] != out.shape[1]:
        raise ValueError(f"add_rows: rows {rows.shape} and T {T.shape} do not match out {out.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= out.shape[0]):
        raise ValueError(f"add_rows: rows must lie in [0, {out.shape[0]})")
    _add_rows(out, rows, T)
    return out


def csr_gram_accumulate(X: sp.csr_matrix, V: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out += Xᵀ (X V)`` for one CSR chunk ``X`` (n_i, p), ``V`` (p, m), ``out`` (p, m).

    The Gram product of a row-chunked matrix, summed chunk by chunk: ``T = X V`` is the chunk's
    rows only (n_i × m, no n × m block for the whole matrix), and ``Xᵀ T`` is added by
    :func:`csr_rmatmat_accumulate`. ``out`` must be C-contiguous with ``V``'s dtype, as must the
    chunk's values. Returns ``out``.
    """
    return csr_rmatmat_accumulate(X, csr_matmat(X, V), out)


def csr_rmatmat_accumulate(X: sp.csr_matrix, W: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out += Xᵀ W`` for one CSR chunk ``X`` (n_i, p) and ``W`` (n_i, m): a row-parallel gather
    over an explicit transpose of the chunk (:func:`csr_transpose`, :func:`rows_matmat` with
    ``accumulate``) into the rows of ``out`` the chunk's columns touch. Returns ``out``."""
    if X.nnz == 0:
        return out
    XT = csr_transpose(X)
    return rows_matmat(XT.indptr[:-1], XT.indptr[1:], XT.indices, XT.data, W, out, accumulate=True)


def csr_gram_accumulate_reference(X: sp.csr_matrix, V: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The plain ``out += Xᵀ (X V)`` (SciPy): the oracle of :func:`csr_gram_accumulate`."""
    out += np.asarray(X.T @ np.asarray(X @ V))
    return out


def csr_transpose_reference(X):
    """SciPy's CSR copy of ``Xᵀ`` (one thread): the oracle of :func:`csr_transpose`."""
    return sp.csr_matrix(X).T.tocsr()


def csr_transpose(X):
    """An explicit CSR copy of ``Xᵀ`` (the engine's one transposed-CSR helper).

    ``X.T`` alone is a CSC view whose SpMM scatters into the output; a CSR copy of the transpose
    makes ``Xᵀ @ U`` a row-parallel gather (:func:`csr_matmat`) at the cost of one copy of ``X``.

    Made on all numba threads: each takes a range of X's rows (equal in nonzeros), counts its
    nonzeros per column, and writes them into its own slots of every column, after the slots of
    the threads before it; so each column lists its rows in order, exactly as SciPy's
    single-threaded ``X.T.tocsr()`` (its reference, :func:`csr_transpose_reference`; tested
    equal array by array). The per-thread counts take ``threads × n_cols`` integers, so no more
    threads are used than keep them under a quarter of the copy. Measured on one K = 485,000
    block (485,000 × 200,000, 82.4M nonzeros, float32; 2-core Intel Xeon VM, 2026-11-28): 1.14-1.17
    s against SciPy's 2.1-3.6 s.
    """
    X = sp.csr_matrix(X)
    n, p = X.shape
    nnz = int(X.nnz)
    threads = max(1, min(numba.get_num_threads(), nnz // max(4 * p, 1), n))
    if nnz < MIN_PARALLEL_WORK or threads == 1:
        return csr_transpose_reference(X)
    # SciPy's choice: int64 when the sizes need it or X's index arrays already are
    wide = max(n, p, nnz) >= np.iinfo(np.int32).max or np.int64 in (X.indptr.dtype, X.indices.dtype)
    itype = np.int64 if wide else np.int32
    bounds = np.searchsorted(X.indptr, np.linspace(0, nnz, threads + 1)).astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    counts = np.zeros((threads, p), dtype=np.int64)
    _transpose_counts(X.indptr, X.indices, bounds, counts)
    indptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=indptr[1:])
    starts = np.cumsum(counts, axis=0)
    starts -= counts
    starts += indptr[:-1]
    del counts
    indices = np.empty(nnz, dtype=itype)
    data = np.empty(nnz, dtype=X.data.dtype)
    _transpose_fill(X.indptr, X.indices, X.data, bounds, starts, indices, data)
    return sp.csr_matrix((data, indices, indptr.astype(itype, copy=False)), shape=(p, n))


@numba.njit(parallel=True, cache=True, nogil=True)
def _transpose_counts(indptr, indices, bounds, counts):  # pragma: no cover - compiled
    for t in numba.prange(bounds.size - 1):
        c = counts[t]
        for k in range(indptr[bounds[t]], indptr[bounds[t + 1]]):
            c[indices[k]] += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def _transpose_fill(indptr, indices, data, bounds, starts, out_indices, out_data):  # pragma: no cover
    for t in numba.prange(bounds.size - 1):
        pos = starts[t]
        for i in range(bounds[t], bounds[t + 1]):
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                q = pos[j]
                out_indices[q] = i
                out_data[q] = data[k]
                pos[j] = q + 1


# the one-pass scans (value_stats, csr_has_canonical_format, csr_column_sums) cut their input in
# at most _SCAN_PARTS fixed parts of at least _SCAN_MIN items: fewer are not worth a thread
_SCAN_PARTS = 16
_SCAN_MIN = 1 << 16

# the nonzeros of csr_column_sumsq are summed in this many fixed parts (then added in order): the
# result never depends on the thread count
_SUMSQ_PARTS = 16


@numba.njit(parallel=True, cache=True, nogil=True)
def _column_sum_parts(indices, data, part, square):  # pragma: no cover - compiled
    """Row t of ``part``: the float64 column sums (of the squares with ``square``) of the
    nonzeros in the t-th of ``part.shape[0]`` equal ranges."""
    n_parts, _ = part.shape
    nnz = indices.shape[0]
    for t in numba.prange(n_parts):
        for j in range(part.shape[1]):
            part[t, j] = 0.0
        for k in range(t * nnz // n_parts, (t + 1) * nnz // n_parts):
            a = np.float64(data[k])
            part[t, indices[k]] += a * a if square else a


def csr_column_sumsq_reference(X: sp.csr_matrix) -> np.ndarray:
    """``diag(Xᵀ X)`` in float64 by ``np.bincount`` (one thread): the oracle of
    :func:`csr_column_sumsq`."""
    return np.bincount(X.indices, weights=X.data.astype(np.float64) ** 2, minlength=X.shape[1])


def csr_column_sumsq(X: sp.csr_matrix) -> np.ndarray:
    """``diag(Xᵀ X)`` (the column sums of squares) of a sparse ``X`` (made CSR) in float64,
    on all numba threads: the nonzeros in 16 fixed parts, each summed into its own row of a
    (16, p) float64 block, the rows added in order (the same result for any thread count; it
    differs from :func:`csr_column_sumsq_reference`'s order by float64 rounding only). Measured
    on one K = 485,000 block (82.4M nonzeros, 200,000 columns, 2 cores): 0.08-0.10 s against
    0.32-1.73 s by ``bincount`` (benchmarks/README.md, "Cr5's gap, split"). Small matrices (under
    a million nonzeros) use the reference."""
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    if X.nnz < 1_000_000 or X.dtype not in (np.float32, np.float64):
        return csr_column_sumsq_reference(X)
    part = np.empty((_SUMSQ_PARTS, X.shape[1]))
    _column_sum_parts(X.indices, X.data, part, True)
    return part.sum(axis=0)


def csr_column_sums_reference(X: sp.csr_matrix) -> np.ndarray:
    """Column sums in float64 by ``np.bincount`` (one thread): the oracle of :func:`csr_column_sums`."""
    return np.bincount(X.indices, weights=X.data.astype(np.float64), minlength=X.shape[1])


def csr_column_sums(X: sp.csr_matrix) -> np.ndarray:
    """Column sums of a sparse ``X`` (made CSR) summed in float64 whatever its dtype (SciPy's
    ``X.sum(axis=0)`` sums a float32 matrix in float32: 1.4e-4 relative error on a column of
    2,000,000 values), on all numba threads: the nonzeros in at most 16 fixed parts (one per
    65,536 nonzeros; a number set by the nonzeros alone, so the result never depends on the
    thread count), each summed into its own float64 row, the rows added in order. Non-float
    values use the reference."""
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    if X.dtype not in (np.float32, np.float64):
        return csr_column_sums_reference(X)
    part = np.empty((int(min(_SCAN_PARTS, max(1, X.nnz // _SCAN_MIN))), X.shape[1]))
    _column_sum_parts(X.indices, X.data, part, False)
    return part.sum(axis=0)


# the nonzeros of csr_column_stats are summed in at most this many fixed parts (a number set by
# the nonzeros alone, so the result never depends on the thread count): 2 x parts x p float64
# of workspace (51 MB at 800,000 features)
_STATS_PARTS = 4


@numba.njit(parallel=True, cache=True, nogil=True)
def _column_stats_parts(indices, data, psum, psq, pmax, pbad):  # pragma: no cover - compiled
    n_parts = psum.shape[0]
    nnz = indices.shape[0]
    for t in numba.prange(n_parts):
        for j in range(psum.shape[1]):
            psum[t, j] = 0.0
            psq[t, j] = 0.0
        mx = 0.0
        bad = 0
        for k in range(t * nnz // n_parts, (t + 1) * nnz // n_parts):
            a = np.float64(data[k])
            if not np.isfinite(a):
                bad += 1
                continue
            c = indices[k]
            psum[t, c] += a
            psq[t, c] += a * a
            if abs(a) > mx:
                mx = abs(a)
        pmax[t] = mx
        pbad[t] = bad


def csr_column_stats_reference(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Column sums and sums of squares (float64), the largest absolute value and the number of
    non-finite values of a sparse ``X``'s stored values, by NumPy (``np.bincount``, one thread;
    the sums and the largest value over the finite values): the oracle of :func:`csr_column_stats`."""
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    d = X.data.astype(np.float64)
    finite = np.isfinite(d)
    bad = int(d.size - np.count_nonzero(finite))
    idx = X.indices if not bad else X.indices[finite]
    d = d if not bad else d[finite]
    return (np.bincount(idx, weights=d, minlength=X.shape[1]), np.bincount(idx, weights=d * d, minlength=X.shape[1]),
            float(np.max(np.abs(d))) if d.size else 0.0, bad)


def csr_column_stats(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, float, int]:
    """``(column sums, column sums of squares, max |value|, non-finite count)`` of a sparse
    ``X`` (made CSR) in one pass over its values on all numba threads: the streamed corpora's
    statistics pass (:class:`linxling.operators._source.ColumnStats`, one call per chunk read).
    The sums and the largest value are over the finite values; the nonzeros are summed in at most
    ``_STATS_PARTS`` fixed parts added in order, so the sums differ from
    :func:`csr_column_stats_reference`'s order by float64 rounding only, whatever the thread
    count. Small matrices (under a million nonzeros) and non-float values use the reference."""
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    if X.nnz < 1_000_000 or X.dtype not in (np.float32, np.float64):
        return csr_column_stats_reference(X)
    parts = int(min(_STATS_PARTS, max(1, X.nnz // 1_000_000)))
    psum = np.empty((parts, X.shape[1]))
    psq = np.empty((parts, X.shape[1]))
    pmax = np.empty(parts)
    pbad = np.empty(parts, dtype=np.int64)
    _column_stats_parts(X.indices, X.data, psum, psq, pmax, pbad)
    return psum.sum(axis=0), psq.sum(axis=0), float(pmax.max()), int(pbad.sum())


# ---- one pass over a matrix's stored values and indices for the input checks
# (linxling._validation): what NumPy does in three passes with two temporaries of the matrix's size
# (np.isfinite, np.abs, then max) and SciPy's canonical-format test, in fixed parts on all threads


@numba.njit(parallel=True, cache=True, nogil=True)
def _value_stats_parts(data, pmax, pbad, pneg):  # pragma: no cover - compiled
    n_parts = pmax.shape[0]
    n = data.shape[0]
    big = np.finfo(np.float64).max
    for t in numba.prange(n_parts):
        mx = 0.0
        bad = 0
        neg = 0
        for k in range(t * n // n_parts, (t + 1) * n // n_parts):
            v = np.float64(data[k])
            a = abs(v)
            if a <= big:                     # false for NaN and inf
                if a > mx:
                    mx = a
                if v < 0.0:
                    neg += 1
            else:
                bad += 1
        pmax[t] = mx
        pbad[t] = bad
        pneg[t] = neg


def value_stats_reference(data: np.ndarray) -> tuple[float, int, int]:
    """``(max |value| over the finite values, number of non-finite values, number of finite
    negative values)`` of a float array, by NumPy: the oracle of :func:`value_stats`."""
    d = np.asarray(data, dtype=np.float64)
    finite = np.isfinite(d)
    bad = int(d.size - np.count_nonzero(finite))
    d = d[finite] if bad else d
    return (float(np.max(np.abs(d))) if d.size else 0.0), bad, int(np.count_nonzero(d < 0))


def value_stats(data: np.ndarray) -> tuple[float, int, int]:
    """``(max |value| over the finite values, number of non-finite values, number of finite
    negative values)`` of a 1-D float32 or float64 array in one pass without temporaries (the
    input checks of every fit: NumPy's ``isfinite``, ``abs`` and ``< 0`` each make an array of
    the input's size), on all numba threads in at most 16 fixed parts (a maximum and counts: the
    result does not depend on the thread count). Other dtypes, and arrays of one part (fewer than
    ``2 * _SCAN_MIN`` values), use :func:`value_stats_reference`."""
    if data.ndim != 1 or data.dtype not in (np.float32, np.float64):
        return value_stats_reference(data)
    parts = int(min(_SCAN_PARTS, max(1, data.size // _SCAN_MIN)))
    if parts == 1:
        # fewer than 2 x _SCAN_MIN values (e.g. the few documents of a transform): NumPy, whose
        # temporaries are then small, and no parallel launch, whose barrier waits for every numba
        # thread: 32 ms for 20 values on a loaded 2-core machine (load 5), 4 us by NumPy
        return value_stats_reference(data)
    pmax = np.empty(parts)
    pbad = np.empty(parts, dtype=np.int64)
    pneg = np.empty(parts, dtype=np.int64)
    _value_stats_parts(data, pmax, pbad, pneg)
    return float(pmax.max()), int(pbad.sum()), int(pneg.sum())


@numba.njit(parallel=True, cache=True, nogil=True)
def _canonical_parts(indptr, indices, n_parts, ok):  # pragma: no cover - compiled
    n_rows = indptr.shape[0] - 1
    for t in numba.prange(n_parts):
        good = True
        for i in range(t * n_rows // n_parts, (t + 1) * n_rows // n_parts):
            s = indptr[i]
            e = indptr[i + 1]
            if e < s:
                good = False
                break
            for k in range(s + 1, e):
                if indices[k] <= indices[k - 1]:
                    good = False
                    break
            if not good:
                break
        ok[t] = good


def csr_has_canonical_format(X: sp.csr_matrix) -> bool:
    """Whether a CSR matrix's column indices are sorted within every row without duplicates
    (SciPy's ``has_canonical_format``, computed on all numba threads; the flag is set on ``X``)."""
    parts = int(min(_SCAN_PARTS, max(1, X.nnz // _SCAN_MIN)))
    ok = np.empty(parts, dtype=np.bool_)
    _canonical_parts(X.indptr, X.indices, parts, ok)
    good = bool(ok.all())
    if good:
        X.has_canonical_format = True
    return good
