"""One ALS driver for the WMF family, over three places the data can be.

WMF is b-WMF with one language, and b-WMF is WMF of the column-stacked matrix
[X_1 | X_2 | ...] whose word factor is the row-stacked V = [A_1; A_2; ...] (equal λ and w_m). So
one loop (:func:`run_als`) fits both: each iteration solves the sentence factor E with V fixed
(the "rows" half-step, eq. 2 / eq. 5 first line) and then V with E fixed (the "cols" half-step,
eq. 3 / eq. 5 second line), and records eq. (1) / (4) from the solvers' own residuals.

Where the data is decides only how a half-step visits it. Each *executor* has the same interface,
``half_step(side, Y, G, out, w, lam, solver, steps) -> objective``: solve the rows of ``side``'s
blocks into ``out`` (in place, CG warm-started from it) with ``Y`` fixed and the Gram ``G``
given, and return the solved rows' objective:

- :class:`InMemoryALS`: the stacked CSR and each language's transpose, in memory;
- :class:`ChunkedALS`: :class:`~linxling.io.ChunkedCSR` corpora on disk, read in ranges sized
  to a memory budget (``memory_plan``);
- :class:`DaskALS` (:mod:`linxling.models._als_dask`): row blocks of X and Xᵀ persisted on the
  workers of a ``dask.distributed`` cluster.

The results are the same whichever executor runs (up to rounding): the half-steps solve the same
rows with the same Gram and warm starts; tests/test_chunks.py and tests/test_wmf_dask.py compare
them with the in-memory fit.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["InMemoryALS", "ChunkedALS", "init_factors", "run_als", "read_ranges", "check_matrix"]


def _als():
    from linxling.kernels import als  # numba kernels are compiled/loaded on first use
    return als


def check_matrix(X, name, dtype, n_cols=None, model: str = "the model") -> sp.csr_matrix:
    """A non-negative CSR (sorted, summed duplicates) of finite values in ``dtype``."""
    from linxling._validation import check_sparse_matrix, check_value_range
    X = check_sparse_matrix(X, name, dtype=dtype, nonnegative=True)
    check_value_range(X, name, "the confidence-weighted squares of ALS", allow_zero=n_cols is not None)
    if n_cols is not None and X.shape[1] != n_cols:
        raise ValueError(f"{name} has {X.shape[1]} features, but {model} is expecting {n_cols} features "
                         "as input (its training vocabulary)")
    X.sum_duplicates()
    X.sort_indices()
    return X


# ------------------------------------------------------------------------------ factors
def _check_init(arr, name, shape, dtype) -> np.ndarray:
    arr = np.array(arr, dtype=dtype, order="C", copy=True)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


#: float64 entries drawn per block by :func:`_init_factor` (8 MiB)
_INIT_BLOCK = 1 << 20


def _init_factor(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """N(0, 1/k) entries: rows of unit expected norm (ALS rescales them in the first step).

    Drawn a block of rows at a time straight into the factor: the generator's stream is the same
    whether an array is drawn at once or by rows in order, so the values are bitwise those of
    ``(rng.standard_normal(shape) / sqrt(k)).astype(dtype)``, without its whole float64 draw (12
    bytes an entry at the peak with a float32 factor, against the factor's 4: 4 GB more for a
    sentence factor of 5 million rows at k = 100)."""
    n, k = int(shape[0]), int(shape[1])
    out = np.empty((n, k), dtype=dtype)
    scale = np.sqrt(k)
    rows = max(1, _INIT_BLOCK // max(k, 1))
    for r0 in range(0, n, rows):
        block = rng.standard_normal((min(rows, n - r0), k))
        block /= scale
        out[r0:r0 + block.shape[0]] = block
        del block                            # before the next block is drawn
    return out


def init_factors(rng, widths: Sequence[int], n: int, k: int, dtype, init_components: Sequence | None,
                 init_embedding, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The starting factors: the row-stacked word factor V (Σ widths, k), each language's block
    given (``init_components[l]``, shape (k, width), may be None) or drawn N(0, 1/k) in language
    order, then the sentence factor E (n, k) (``init_embedding`` or drawn). ``names[l]`` names
    language l's initial components in errors."""
    blocks = []
    for l, m in enumerate(widths):
        given = None if init_components is None else init_components[l]
        blocks.append(_init_factor(rng, (m, k), dtype) if given is None else
                      _check_init(np.asarray(given).T, f"{names[l]}.T", (m, k), dtype))
    V = blocks[0] if len(blocks) == 1 else np.ascontiguousarray(np.concatenate(blocks, axis=0))
    E = (_init_factor(rng, (n, k), dtype) if init_embedding is None else
         _check_init(init_embedding, "init_embedding", (n, k), dtype))
    return V, E


# ------------------------------------------------------------------------------ the loop
def run_als(est, data, V: np.ndarray, E: np.ndarray, desc: str) -> None:
    """``est.max_iter`` ALS iterations on ``data`` (an executor) with λ = ``est.alpha_``, updating
    V (Σ widths, k) and E (n, k) in place; ``est.loss_curve_`` / ``n_iter_`` / callback / progress
    through ``est._run_loop``. An executor on a device (:class:`linxling.xp.als.DeviceALS`) gets
    device arrays V and E and forms the Grams there (its ``gram``); nothing crosses to the host
    inside an iteration but the loss (a scalar)."""
    lam, w = float(est.alpha_), float(est.missing_weight)
    solver, steps = est._solver(), int(est.cg_steps)
    offsets = data.offsets
    dt = V.dtype.type
    gram = getattr(data, "gram", None) or _als().gram
    xp = getattr(data, "xp", np)

    def step():
        if len(offsets) == 2:
            Gv = gram(V, w, lam)
        else:
            Gv = sum(gram(V[o0:o1], w) for o0, o1 in zip(offsets[:-1], offsets[1:], strict=True))
            idx = xp.arange(Gv.shape[0])
            Gv[idx, idx] += dt(lam)
            Gv = xp.ascontiguousarray(Gv)
        data.half_step("rows", V, Gv, E, w, lam, solver, steps)                   # eq. (2) / (5)
        obj = data.half_step("cols", E, gram(E, w, lam), V, w, lam, solver, steps)  # eq. (3) / (5)
        # eq. (1) / (4) from the solvers' own residuals: Σ_words f_i (with λ‖V‖²) + λ‖E‖²
        flat = E.reshape(-1)
        return obj + lam * float(xp.dot(flat, flat))

    try:
        est._run_loop(int(est.max_iter), step, desc)    # progress, callback, BLAS one thread
    finally:
        data.release()


def _solve(parts, Y, out, G, w, lam, solver, steps, hot=None) -> float:
    _, obj = _als().als_half_step(None, Y, out, missing_weight=w, regularization=lam, solver=solver,
                                  cg_steps=steps, parts=parts, gram_matrix=G, return_objective=True,
                                  hot=hot)
    return obj


def _offsets(widths: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)


# ------------------------------------------------------------------------------ in memory
class InMemoryALS:
    """Row-aligned CSR matrices of the languages, in memory: the stacked matrix for the rows
    half-step, each language's transpose for its block of the cols half-step."""

    def __init__(self, mats: Sequence[sp.csr_matrix], dtype) -> None:
        als = _als()
        self.widths = [int(M.shape[1]) for M in mats]
        self.offsets = _offsets(self.widths)
        self.shape = (int(mats[0].shape[0]), int(self.offsets[-1]))
        stacked = mats[0] if len(mats) == 1 else sp.hstack(list(mats), format="csr")
        self.rows = [(0, self.shape[0], als._csr_parts(stacked, dtype))]
        self.cols = [(int(o0), int(o0) + int(M.shape[1]), als._csr_parts(M.T.tocsr(), dtype))
                     for M, o0 in zip(mats, self.offsets[:-1], strict=True)]
        self._hot: tuple[int, list] | None = None     # (k, one hot plan or None per language)

    def _hot_plans(self, k: int) -> list:
        """The cols half-step's hot rows (frequent words: CG pushed from the stacked rows' CSR,
        :func:`linxling.kernels.als.hot_plan`), one plan (or None) per language; formed on the
        first CG half-step (an index per stacked column and the row lists)."""
        if self._hot is None or self._hot[0] != k:
            als = _als()
            rows_parts = self.rows[0][2]
            dtype = rows_parts[2].dtype
            self._hot = (k, als.hot_plans(rows_parts, [(r0, np.diff(parts[0])) for r0, _, parts in self.cols],
                                          k, dtype))
        return self._hot[1]

    def half_step(self, side: str, Y, G, out, w, lam, solver, steps) -> float:
        if side == "rows":
            return sum(_solve(parts, Y, out[r0:r1], G, w, lam, solver, steps)
                       for r0, r1, parts in self.rows)
        hots = self._hot_plans(int(Y.shape[1])) if solver == "cg" else [None] * len(self.cols)
        return sum(_solve(parts, Y, out[r0:r1], G, w, lam, solver, steps, hot)
                   for (r0, r1, parts), hot in zip(self.cols, hots, strict=True))

    def release(self) -> None:
        pass


# ------------------------------------------------------------------------------ out of core
def read_ranges(src, budget: int | None, fixed: int, dtype) -> list[tuple[int, int]]:
    """Row ranges of ``src`` (a ChunkedCSR, or anything with ``indptr``, ``bounds``, ``shape``,
    ``dtype``) to read at a time: its stored chunks without a budget; else ranges whose CSR
    (read, converted for the kernel: ~3 copies of indices + data, plus int64 row pointers) fits
    what the ``fixed`` bytes (factors, row pointers, Grams) leave of the budget (at least one
    row each: :func:`min_budget` says what that takes)."""
    if budget is None:
        return [(int(a), int(b)) for a, b in zip(src.bounds[:-1], src.bounds[1:], strict=True)]
    need = min_budget([src], fixed, dtype)
    if budget < need:
        raise MemoryError(f"memory_budget={budget} bytes does not hold the factors and row pointers "
                          f"({fixed} bytes) plus the longest row; give at least {need} bytes")
    from linxling._memory import row_ranges_by_nnz
    return row_ranges_by_nnz(src.indptr, (budget - fixed) // _bytes_per_nonzero(src, dtype))


def min_budget(srcs: Sequence, fixed: int, dtype) -> int:
    """The smallest memory budget that reads every one of ``srcs`` a row at a time: the ``fixed``
    bytes plus the longest row's nonzeros at their per-nonzero cost."""
    need = 0
    for src in srcs:
        indptr = np.asarray(src.indptr)
        longest = int(np.max(np.diff(indptr))) if len(indptr) > 1 else 0
        need = max(need, _bytes_per_nonzero(src, dtype) * max(longest, 1))
    return int(fixed) + need


def _bytes_per_nonzero(src, dtype) -> int:
    return 3 * (4 + max(np.dtype(dtype).itemsize, np.dtype(src.dtype).itemsize))


class _SummedRows:
    """Several row-aligned ChunkedCSR read together: row pointers summed (for read sizing)."""

    def __init__(self, srcs: Sequence) -> None:
        self.srcs = list(srcs)
        self.shape = (self.srcs[0].shape[0], sum(s.shape[1] for s in self.srcs))
        self.indptr = sum(s.indptr for s in self.srcs) if len(self.srcs) > 1 else self.srcs[0].indptr
        self.bounds = self.srcs[0].bounds
        self.dtype = np.result_type(*[s.dtype for s in self.srcs])

    def read_ranges(self, ranges):
        its = [s.read_ranges(ranges) for s in self.srcs]
        for parts in zip(*its, strict=True):
            yield parts[0][0], parts[0][1], [p[2] for p in parts]


def factor_bytes(n: int, widths: Sequence[int], k: int, dtype) -> int:
    """Bytes an out-of-core fit holds besides the chunk it reads: both factors, the row
    pointers of every language's X and Xᵀ (int64; plus the summed ones of several languages),
    and two k × k Grams."""
    L, M, item = len(widths), int(sum(widths)), np.dtype(dtype).itemsize
    pointers = 8 * ((n + 1) * (L + (L > 1)) + M + L)
    return (n + M) * k * item + pointers + 2 * k * k * item


class ChunkedALS:
    """Row-aligned ChunkedCSR corpora (one per language, each written with ``transpose=True``),
    read one range at a time: the languages' rows side by side for the rows half-step, each
    language's transposed rows for its block of the cols half-step."""

    def __init__(self, srcs: Sequence, names: Sequence[str], dtype, k: int, budget: int | None) -> None:
        n = srcs[0].shape[0]
        for src, name in zip(srcs[1:], names[1:], strict=True):
            if src.shape[0] != n:
                raise ValueError(f"{name} has {src.shape[0]} rows but {names[0]} has {n}; the "
                                 "languages must be row-aligned (parallel sentences)")
        for src, name in zip(srcs, names, strict=True):
            if src.nnz == 0:             # as in memory (check_matrix): no stored value to fit
                raise ValueError(f"{name} is all zero: there is nothing to fit")
        self.dtype = np.dtype(dtype)
        self.names = list(names)
        self.srcs = list(srcs)
        self.tsrcs = [s.T for s in srcs]
        self.widths = [int(s.shape[1]) for s in srcs]
        self.offsets = _offsets(self.widths)
        self.shape = (int(n), int(self.offsets[-1]))
        fixed = factor_bytes(n, self.widths, k, dtype)
        self.summed = _SummedRows(srcs)
        if budget is not None and budget < min_budget([self.summed, *self.tsrcs], fixed, dtype):
            need = min_budget([self.summed, *self.tsrcs], fixed, dtype)
            raise MemoryError(f"memory_budget={budget} bytes does not hold the factors and row pointers "
                              f"({fixed} bytes) plus the longest row of X or Xᵀ; give at least {need} "
                              f"bytes")
        self.row_ranges = read_ranges(self.summed, budget, fixed, dtype)
        self.col_ranges = [read_ranges(t, budget, fixed, dtype) for t in self.tsrcs]
        self.memory_plan = {"budget": budget, "factor_bytes": fixed,
                            "reads_per_pass": (len(self.row_ranges), [len(r) for r in self.col_ranges])}

    def _row_blocks(self):
        for r0, r1, blocks in self.summed.read_ranges(self.row_ranges):
            mats = [check_matrix(B, f"{name} rows {r0}:{r1}", self.dtype, B.shape[1])
                    for name, B in zip(self.names, blocks, strict=True)]
            M = mats[0] if len(mats) == 1 else sp.hstack(mats, format="csr")
            yield r0, r1, M

    def _col_blocks(self):
        for t, ranges, name, o0 in zip(self.tsrcs, self.col_ranges, self.names, self.offsets[:-1], strict=True):
            for r0, r1, B in t.read_ranges(ranges):
                yield int(o0) + r0, int(o0) + r1, check_matrix(B, f"{name}ᵀ rows {r0}:{r1}", self.dtype,
                                                               B.shape[1])

    def half_step(self, side: str, Y, G, out, w, lam, solver, steps) -> float:
        als = _als()
        blocks = self._row_blocks() if side == "rows" else self._col_blocks()
        return sum(_solve(als._csr_parts(B, self.dtype), Y, out[r0:r1], G, w, lam, solver, steps)
                   for r0, r1, B in blocks)

    def release(self) -> None:
        pass


def data_kind(X: Mapping, names: Mapping, client, memory_budget) -> str:
    """"dask", "chunked" or "memory" for the languages' inputs, with the errors for the
    combinations that do not go together (client, memory_budget)."""
    from linxling._dask import check_not_other_dask, is_dask_array
    from linxling.io._chunks import ChunkedCSR
    for key, v in X.items():
        check_not_other_dask(v, names[key])
    chunked = [isinstance(v, ChunkedCSR) for v in X.values()]
    several = len(X) > 1
    if any(is_dask_array(v) for v in X.values()) or (client is not None and chunked and all(chunked)):
        if memory_budget is not None:
            raise ValueError(f"memory_budget applies to {'ChunkedCSR corpora' if several else 'a ChunkedCSR'} "
                             "streamed on this machine; on a Dask cluster the data is held by the workers")
        return "dask"
    if client is not None:
        if several:
            raise ValueError("client is for row-partitioned data (dask arrays with scipy.sparse chunks, "
                             "or ChunkedCSR corpora, for every language); wrap in-memory matrices with "
                             "dask.array.from_array(X_l, chunks=(10_000, -1), asarray=False)")
        raise ValueError("client is for row-partitioned data (a dask array with scipy.sparse chunks, "
                         "or a ChunkedCSR); X is in memory: wrap it, e.g. dask.array.from_array(X, "
                         "chunks=(10_000, -1), asarray=False), to fit it on the cluster")
    if any(chunked):
        if not all(chunked):
            raise TypeError("X mixes ChunkedCSR corpora and in-memory data; give every "
                            "language as a ChunkedCSR (linxling.io.write_chunks) or none")
        return "chunked"
    if memory_budget is not None:
        what = "ChunkedCSR corpora" if several else "a ChunkedCSR corpus"
        raise ValueError(f"memory_budget applies to {what} (linxling.io.write_chunks); "
                         f"{'in-memory X is' if several else 'an in-memory X is'} already in memory")
    return "memory"


def executor(kind: str, X: Mapping, names: Mapping, dtype, k: int, memory_budget, client,
             check_k) -> Any:
    """The executor for ``kind`` (see :func:`data_kind`) over the languages of ``X`` in order;
    ``check_k(width, name)`` checks n_components against each language's vocabulary."""
    langs = list(X)
    if kind == "dask":
        from linxling._dask import get_client
        from linxling.models._als_dask import DaskALS, dask_sources
        sources = dask_sources(X, langs, names)      # the data's own errors first, then the cluster's
        for lang, m in zip(langs, sources[3], strict=True):
            check_k(m, names[lang])
        client = get_client(client)
        return DaskALS(client, X, langs, names, dtype, sources)
    if kind == "chunked":
        from linxling._memory import parse_budget
        for lang in langs:
            check_k(X[lang].shape[1], names[lang])
        return ChunkedALS([X[lang] for lang in langs], [names[lang] for lang in langs], dtype, k,
                          parse_budget(memory_budget))
    for lang in langs:
        check_k(X[lang].shape[1], names[lang])
    return InMemoryALS([X[lang] for lang in langs], dtype)
