"""Row-partitioned sources of a sparse matrix: the few products Cr5 needs, wherever X lives.

A :class:`RowSource` holds a CSR matrix ``X`` (n, p) split into row chunks, in memory
(:class:`CSRSource`), on disk as HDF5 CSR chunks (:class:`ChunkedSource`, from
:func:`linxling.io.write_chunks`) or on the workers of a ``dask.distributed`` cluster
(:class:`linxling.operators._dask.DaskSource`). The operators of the Cr5 family
(:class:`~linxling.operators.GramBlockInverse`, :class:`~linxling.operators.CrossCovariance`)
use only these methods, so one code path serves every placement:

* :meth:`RowSource.matmat` ``X V`` (n, m) and :meth:`RowSource.rmatmat` ``Xᵀ W`` (p, m);
* :meth:`RowSource.gram_matmat` ``Xᵀ (X V)`` (p, m), the inner product of block CG;
* :meth:`RowSource.column_stats` (column sums and sums of squares, one pass, cached);
* :meth:`RowSource.gram_sparse` ``XᵀX`` assembled chunk by chunk (for a dense or CHOLMOD factor);
* :meth:`RowSource.row_nnz` and :meth:`RowSource.head` (for the cheap ``nnz(XᵀX)`` estimates).

Products take a ``dtype`` (float32 or float64): each chunk's values are cast to it when read, so
a float32 block CG on float64 data needs no float32 copy of ``X``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling.kernels.spmm import (
    add_rows,
    csr_column_stats,
    csr_gram_accumulate,
    csr_matmat,
    csr_rmatmat,
    csr_rmatmat_accumulate,
    csr_transpose,
)

__all__ = ["RowSource", "CSRSource", "ChunkedSource", "as_row_source", "is_row_partitioned"]


class ColumnStats:
    """Column sums and sums of squares (float64), the largest absolute value, the non-finite count."""

    def __init__(self, p: int) -> None:
        self.sum = np.zeros(p)
        self.sumsq = np.zeros(p)
        self.max_abs = 0.0
        self.n_nonfinite = 0

    def add(self, X: sp.csr_matrix) -> None:
        """Add one chunk's statistics (one pass over its values on all cores,
        :func:`linxling.kernels.spmm.csr_column_stats`); a chunk with non-finite values only
        adds to the count (the fit then refuses the data)."""
        if not X.data.size:
            return
        s, q, mx, bad = csr_column_stats(X)
        self.n_nonfinite += bad
        if bad:
            return
        self.sum += s
        self.sumsq += q
        self.max_abs = max(self.max_abs, mx)

    def merge(self, other: ColumnStats) -> None:
        self.sum += other.sum
        self.sumsq += other.sumsq
        self.max_abs = max(self.max_abs, other.max_abs)
        self.n_nonfinite += other.n_nonfinite


def _stats_of(X: sp.csr_matrix) -> ColumnStats:
    s = ColumnStats(X.shape[1])
    s.add(X)
    return s


def _cast(X: sp.csr_matrix, dtype) -> sp.csr_matrix:
    """``X`` with values in ``dtype`` (a new matrix sharing indices when a cast is needed)."""
    if X.dtype == dtype:
        return X
    return sp.csr_matrix((X.data.astype(dtype), X.indices, X.indptr), shape=X.shape)


class RowSource:
    """Interface of a row-partitioned sparse matrix (see the module docstring).

    Attributes
    ----------
    shape : (int, int)
    nnz : int
    dtype : numpy dtype
        The dtype the values are read in (products may ask for another).
    kind : str
        ``"memory"``, ``"hdf5"`` or ``"dask"``.
    """

    kind = "abstract"
    shape: tuple[int, int]
    nnz: int
    dtype: np.dtype

    def __init__(self) -> None:
        self._stats: ColumnStats | None = None
        self._gram: sp.csr_matrix | None = None

    # -- to implement
    def matmat(self, V: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def rmatmat(self, W: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def gram_matmat(self, V: np.ndarray) -> np.ndarray:
        """``Xᵀ (X V)`` (p, m) in V's dtype."""
        return self.rmatmat(self.matmat(V))

    def rmatmat_rows(self, V: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``Xᵀ (V[rows])`` (p, m): row i of ``X`` weighs row ``rows[i]`` of ``V`` (Cr5's ``X̂ᵀŶV``
        with ``rows`` the documents' concepts). Here ``V[rows]`` is formed whole (n × m)."""
        return self.rmatmat(np.ascontiguousarray(V[rows]))

    #: whether the source has ``add_rows_matmat(U, rows, out)``: ``out[rows[i]] += (X U)[i]``
    #: summed chunk by chunk (no n × m block; Cr5's ``ŶᵀX̂U`` then runs it serially). Without it
    #: ``X U`` is formed whole and summed by one product with the one-hot matrix of ``rows``.
    sums_by_chunk = False

    def solve_local(self, R: np.ndarray, alpha: float, d: np.ndarray, X0: Any = None, *, rtol: float,
                    maxiter: Any = None, krylov: str = "columns") -> Any:
        """A whole Jacobi block-CG solve of ``(XᵀX + alpha I) Z = R`` where the data lives, as a
        :class:`linxling.solvers.SolveResult`, or None when this source cannot (the caller then
        runs the CG itself, one :meth:`gram_matmat` per iteration). Only a dask source whose
        chunks are all on one worker can."""
        return None

    def _compute_stats(self) -> ColumnStats:  # pragma: no cover - abstract
        raise NotImplementedError

    def _compute_gram(self) -> sp.csr_matrix:  # pragma: no cover - abstract
        raise NotImplementedError

    def row_nnz(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def head(self, n_rows: int) -> sp.csr_matrix:  # pragma: no cover - abstract
        """The first ``n_rows`` rows (at most) as an in-memory CSR."""
        raise NotImplementedError

    # -- shared
    def column_stats(self) -> ColumnStats:
        """Column sums / sums of squares etc. (one pass over the chunks, then cached)."""
        if self._stats is None:
            self._stats = self._compute_stats()
        return self._stats

    def column_sums(self) -> np.ndarray:
        return self.column_stats().sum

    def column_sumsq(self) -> np.ndarray:
        return self.column_stats().sumsq

    def gram_sparse(self, keep: bool = True) -> sp.csr_matrix:
        """``XᵀX`` (p, p) as a float64 CSR matrix, summed chunk by chunk (cached when ``keep``)."""
        if self._gram is not None:
            return self._gram
        G = self._compute_gram()
        if keep:
            self._gram = G
        return G

    def release_gram(self) -> None:
        self._gram = None

    @property
    def n_samples(self) -> int:
        return int(self.shape[0])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"


def _gram_of(X: sp.csr_matrix) -> sp.csr_matrix:
    X64 = _cast(X, np.float64)
    return (csr_transpose(X64) @ X64).tocsr()


class CSRSource(RowSource):
    """An in-memory CSR matrix seen as a :class:`RowSource` (one chunk; the reference source).

    Products are the engine's row-parallel numba SpMMs with an explicit transposed copy of ``X``
    (built on first use), i.e. the same arithmetic as the in-memory :class:`Gram`.
    """

    kind = "memory"

    def __init__(self, X: sp.csr_matrix) -> None:
        super().__init__()
        self.X = sp.csr_matrix(X)
        self.shape = self.X.shape
        self.nnz = int(self.X.nnz)
        self.dtype = self.X.dtype
        self._XT: dict = {}

    def _x(self, dtype) -> sp.csr_matrix:
        return _cast(self.X, np.dtype(dtype))

    def _xt(self, dtype) -> sp.csr_matrix:
        dt = np.dtype(dtype)
        if dt not in self._XT:
            self._XT[dt] = csr_transpose(self._x(dt))
        return self._XT[dt]

    def matmat(self, V):
        return csr_matmat(self._x(V.dtype), V)

    def rmatmat(self, W):
        return csr_matmat(self._xt(W.dtype), W)

    def _compute_stats(self):
        return _stats_of(self.X)

    def _compute_gram(self):
        return _gram_of(self.X)

    def row_nnz(self):
        return np.diff(self.X.indptr).astype(np.int64)

    def head(self, n_rows):
        return self.X[:n_rows]


class ChunkedSource(RowSource):
    """A corpus on disk (:class:`linxling.io.ChunkedCSR`) streamed one chunk at a time.

    ``X V`` is computed chunk by chunk into its rows; ``Xᵀ W`` from the stored transpose's chunks
    (group ``"XT"``, written by :func:`linxling.io.write_chunks` by default) into *its* rows, so
    both are the row-parallel gathers of the in-memory products, with the same arithmetic. Without
    a stored transpose ``Xᵀ W`` is accumulated chunk by chunk with a scatter
    (:func:`linxling.kernels.spmm.csr_rmatmat`). The products Cr5 repeats are summed read by
    read instead: :meth:`gram_matmat` ``Xᵀ (X V)``, :meth:`rmatmat_rows` ``Xᵀ (V[rows])`` and
    :meth:`add_rows_matmat` (``X U`` summed into rows), each read's rows multiplied at once, so
    none forms an n × m block and none reads the stored transpose. Memory: one read (its cast
    copy and transpose) at a time, plus the dense results.

    Parameters
    ----------
    chunked : ChunkedCSR
    dtype : float dtype the values are read in (cast per chunk)
    """

    kind = "hdf5"

    #: default bytes per read: consecutive stored chunks are read together up to this size. Each
    #: read is one parallel kernel call, and on a loaded machine every call waits for its threads
    #: to be scheduled (measured: 61 calls of 8 MiB took 2.2x the time of 4 of 80 MiB, same work)
    READ_BYTES = 64 * 2 ** 20

    def __init__(self, chunked: Any, dtype: Any = None, read_bytes: int | None = None) -> None:
        super().__init__()
        self.chunked = chunked
        self.shape = tuple(int(v) for v in chunked.shape)       # type: ignore[assignment]
        self.nnz = int(chunked.nnz)
        self.dtype = np.dtype(dtype or chunked.dtype)
        try:
            self.transposed = chunked.T
        except ValueError:
            self.transposed = None
        self.n_reads = 0                 # reads so far (for the record)
        self.set_read_bytes(self.READ_BYTES if read_bytes is None else read_bytes)

    @staticmethod
    def _ranges(src: Any, read_bytes: int) -> list:
        """Row ranges of consecutive stored chunks, each at most ``read_bytes`` (at least one chunk)."""
        b = src.bounds
        nbytes = 8 * np.diff(b) + (4 + src.dtype.itemsize) * np.diff(src.indptr[b])
        ranges, start, size = [], int(b[0]), 0
        for i in range(len(b) - 1):
            if size and size + nbytes[i] > read_bytes:
                ranges.append((start, int(b[i])))
                start, size = int(b[i]), 0
            size += int(nbytes[i])
        if len(b) > 1:
            ranges.append((start, int(b[-1])))
        return ranges

    def set_read_bytes(self, read_bytes: int) -> None:
        """Read consecutive stored chunks together up to ``read_bytes`` (0: one stored chunk at a time)."""
        self.read_bytes = int(read_bytes)
        self._row_ranges = self._ranges(self.chunked, self.read_bytes)
        self._col_ranges = None if self.transposed is None else self._ranges(self.transposed, self.read_bytes)

    def _chunks(self, dtype=None, transposed: bool = False):
        src = self.transposed if transposed else self.chunked
        ranges = self._col_ranges if transposed else self._row_ranges
        dt = np.dtype(dtype or self.dtype)
        for r0, _, X in src.read_ranges(ranges, dt):        # cast by HDF5 while reading
            self.n_reads += 1
            yield r0, _cast(X, dt)

    def max_chunk_nbytes(self, read_bytes: int | None = None) -> int:
        """Bytes of the largest read (of either orientation), at ``read_bytes`` (default: current)."""
        rb = self.read_bytes if read_bytes is None else int(read_bytes)
        sizes = []
        for src in (self.chunked, self.transposed):
            if src is None:
                continue
            for r0, r1 in self._ranges(src, rb):
                sizes.append(8 * (r1 - r0 + 1) + (4 + src.dtype.itemsize) * int(src.indptr[r1] - src.indptr[r0]))
        return max(sizes + [0])

    def max_read_rows(self, read_bytes: int | None = None) -> int:
        """Rows of the longest read of ``X``'s row chunks at ``read_bytes`` (default: current)."""
        rb = self.read_bytes if read_bytes is None else int(read_bytes)
        return max([r1 - r0 for r0, r1 in self._ranges(self.chunked, rb)] + [0])

    def matmat(self, V):
        out = np.empty((self.shape[0], V.shape[1]), dtype=V.dtype)
        for r0, X in self._chunks(V.dtype):
            out[r0:r0 + X.shape[0]] = csr_matmat(X, V)
        return out

    #: :meth:`gram_matmat` sums into a given ``out`` (:meth:`SourceGram.matmat_into`)
    gram_into = True

    def gram_matmat(self, V, out=None):
        """``Xᵀ (X V)`` summed chunk by chunk (:func:`linxling.kernels.spmm.csr_gram_accumulate`):
        each read's ``X_i V`` is used at once, so no n × m block exists and the stored transpose
        is not read. The sums are grouped by read (``read_bytes``): equal to the two-pass product
        to rounding, not bitwise. ``out`` (p × m, C-contiguous, ``V``'s dtype), when given, is
        overwritten with the result (the same additions) and returned."""
        V = np.ascontiguousarray(V)
        if out is None:
            out = np.zeros((self.shape[1], V.shape[1]), dtype=V.dtype)
        else:
            if out.shape != (self.shape[1], V.shape[1]) or out.dtype != V.dtype or not out.flags.c_contiguous:
                raise ValueError(f"out must be a C-contiguous {V.dtype} array of shape "
                                 f"{(self.shape[1], V.shape[1])}, got {out.dtype} {out.shape}")
            out.fill(0)
        for _, X in self._chunks(V.dtype):
            csr_gram_accumulate(X, V, out)
        return out

    def rmatmat_rows(self, V, rows):
        """``Xᵀ (V[rows])`` chunk by chunk: each read gathers its own rows of ``V[rows]`` and adds
        their product with the chunk's transpose, so no n × m block exists."""
        V = np.ascontiguousarray(V)
        out = np.zeros((self.shape[1], V.shape[1]), dtype=V.dtype)
        for r0, X in self._chunks(V.dtype):
            csr_rmatmat_accumulate(X, V[rows[r0:r0 + X.shape[0]]], out)
        return out

    sums_by_chunk = True

    def add_rows_matmat(self, U, rows, out):
        """``out[rows[i]] += (X U)[i]`` chunk by chunk (each read's ``X_i U`` added to its rows at
        once, in row order), so no n × m block exists."""
        U = np.ascontiguousarray(U, dtype=out.dtype)
        for r0, X in self._chunks(out.dtype):
            add_rows(out, rows[r0:r0 + X.shape[0]], csr_matmat(X, U))

    def rmatmat(self, W):
        out = np.empty((self.shape[1], W.shape[1]), dtype=W.dtype)
        if self.transposed is not None:
            for c0, XT in self._chunks(W.dtype, transposed=True):
                out[c0:c0 + XT.shape[0]] = csr_matmat(XT, W)
            return out
        out[:] = 0
        for r0, X in self._chunks(W.dtype):
            out += csr_rmatmat(X, np.ascontiguousarray(W[r0:r0 + X.shape[0]]))
        return out

    # the one-time passes (statistics at validation, XᵀX for a factor) run before the memory plan
    # is known: they read one stored chunk at a time
    def _compute_stats(self):
        s = ColumnStats(self.shape[1])
        for _, X in self.chunked.chunks():
            s.add(X)
        return s

    def _compute_gram(self):
        G = None
        for _, X in self.chunked.chunks():
            part = _gram_of(X)
            G = part if G is None else G + part
        return G if G is not None else sp.csr_matrix((self.shape[1], self.shape[1]))

    def row_nnz(self):
        return np.diff(self.chunked.indptr).astype(np.int64)

    def head(self, n_rows):
        r1 = min(int(n_rows), self.shape[0])
        for _, _, X in self.chunked.read_ranges([(0, r1)]):
            return X
        raise AssertionError("unreachable")  # pragma: no cover


def is_row_partitioned(X: Any) -> bool:
    """Whether ``X`` is a ChunkedCSR, a dask array or a RowSource (not an in-memory matrix)."""
    if isinstance(X, RowSource):
        return True
    from linxling.io._chunks import ChunkedCSR
    if isinstance(X, ChunkedCSR):
        return True
    return _is_dask_array(X)


def _is_dask_array(X: Any) -> bool:
    mod = type(X).__module__ or ""
    if not mod.startswith("dask"):
        return False
    import dask.array as da
    return isinstance(X, da.Array)


def as_row_source(X: Any, name: str = "X", *, dtype: Any = None, client: Any = None) -> RowSource:
    """Wrap a ChunkedCSR, a dask array with scipy.sparse chunks, or a CSR matrix in a RowSource.

    Parameters
    ----------
    X : ChunkedCSR, dask.array.Array, RowSource or sparse matrix
    name : str
        Used in error messages.
    dtype : float dtype the values are read in (default: X's floating dtype, else float64)
    client : dask.distributed.Client, optional
        For a dask array (default: the current default client). Given with a ChunkedCSR, the
        products run on its workers, which read the file (:class:`~linxling.operators._dask.DaskDiskSource`);
        without, a ChunkedCSR is streamed on this process.
    """
    if isinstance(X, RowSource):
        return X
    from linxling.io._chunks import ChunkedCSR
    if isinstance(X, ChunkedCSR):
        dt = np.dtype(dtype) if dtype is not None else (X.dtype if X.dtype.kind == "f" else np.dtype(np.float64))
        if client is not None:
            from linxling.operators._dask import DaskDiskSource
            return DaskDiskSource(X, dt, client=client, name=name)
        return ChunkedSource(X, dt)
    if _is_dask_array(X):
        from linxling.operators._dask import DaskSource
        return DaskSource(X, name=name, dtype=dtype, client=client)
    from linxling._validation import check_sparse_matrix
    return CSRSource(check_sparse_matrix(X, name, dtype=dtype))
