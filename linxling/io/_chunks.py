"""A sparse corpus written once to HDF5 as CSR row chunks, read back chunk by chunk.

Layout of the file (one group per orientation, ``"X"`` and optionally ``"XT"`` = Xᵀ)::

    /X/indptr   int64 (n_rows + 1,)   global row pointers (any row range is one slice)
    /X/indices  int32 (nnz,)
    /X/data     float32/float64 (nnz,)
    /X/bounds   int64 (n_chunks + 1,) row boundaries of the chunks
    attrs: shape, format_version

A model that streams the chunks holds one chunk (a CSR matrix of ``chunk_rows`` rows) at a
time; :meth:`ChunkedCSR.chunks` reads each with one contiguous slice of ``indices``/``data``.
The transpose is written out of core by :func:`write_chunks` (``transpose=True``): a first
pass counts the nonzeros of every column, then columns are gathered block by block, each
block's nonzeros bounded by ``memory_budget``.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._memory import parse_budget
from linxling._warnings import find_stack_level

__all__ = ["ChunkedCSR", "write_chunks"]

_FORMAT_VERSION = 1
_DEFAULT_CHUNK_BYTES = 64 * 2 ** 20


def _check_block(block: Any, n_cols: int | None, i: int, name: str,
                 cols_from: str = "the first chunk") -> sp.csr_matrix:
    """Block ``i`` of ``name`` (``i < 0``: ``name`` is one matrix) as canonical CSR, with
    ``n_cols`` columns when given (``cols_from`` says where that number came from)."""
    from linxling._validation import check_sparse_matrix
    what = f"{name} chunk {i}" if i >= 0 else name
    X = check_sparse_matrix(block, what, allow_empty=True)
    if n_cols is not None and X.shape[1] != n_cols:
        expected = f"n_cols={n_cols}" if cols_from == "n_cols" else f"{cols_from} has {n_cols}"
        raise ValueError(f"{what} has {X.shape[1]} columns, but {expected}")
    X = X.copy() if X is block else X
    X.sum_duplicates()
    X.sort_indices()
    return X


def _rows_per_chunk(X: sp.csr_matrix, chunk_bytes: int) -> int:
    per_row = max(1.0, (X.data.itemsize + 4) * X.nnz / max(X.shape[0], 1) + 8)
    return max(1, int(chunk_bytes // per_row))


class ChunkedCSR:
    """Read access to one orientation of a corpus written by :func:`write_chunks`.

    Parameters
    ----------
    path : str or Path
        The HDF5 file.
    group : {"X", "XT"}
        ``"X"`` the matrix, ``"XT"`` its transpose (present when written with ``transpose=True``).

    Attributes
    ----------
    shape : (int, int)
    nnz : int
    dtype : numpy dtype of the values
    bounds : ndarray of int64, the row boundaries of the chunks
    """

    def __init__(self, path: str | os.PathLike, group: str = "X"):
        import h5py
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"path {str(self.path)!r} does not exist")
        if self.path.is_dir():
            raise IsADirectoryError(f"path {str(self.path)!r} is a directory, not a corpus file "
                                    "(linxling.io.write_chunks)")
        try:
            fh = h5py.File(self.path, "r")
        except PermissionError:
            raise
        except BlockingIOError as exc:        # HDF5's file lock: another process has it open to write
            raise BlockingIOError(exc.errno, f"{str(self.path)!r} is locked: another process has it open "
                                  f"for writing (HDF5 file locking: {exc}); wait until that process "
                                  "closes it (write_chunks closes the file when it returns)") from None
        except OSError as exc:
            raise ValueError(f"{str(self.path)!r} is not an HDF5 file ({exc}): a corpus is read from "
                             "a file written by linxling.io.write_chunks") from None
        with fh:
            try:
                self._read_index(fh, group)              # its own ValueErrors pass through
            except (KeyError, TypeError, IndexError, OSError, RuntimeError) as exc:
                # h5py's (and NumPy's) errors for damaged metadata: KeyError "Unable to open
                # object", TypeError "'Datatype' object is not subscriptable", ...
                raise ValueError(f"{str(self.path)!r} group {group!r} cannot be read as a corpus "
                                 f"({type(exc).__name__}: {exc}): the file is corrupt") from exc
        self.group = group

    def _read_index(self, fh, group: str) -> None:
        """Shape, chunk bounds and row pointers of ``group``, checked against each other."""
        where = f"{str(self.path)!r} group {group!r}"
        if group not in fh:
            raise ValueError(f"{str(self.path)!r} has no group {group!r} (groups: {list(fh)}); "
                             "write it with write_chunks(..., transpose=True) for 'XT'")
        g = fh[group]
        _check_layout(g, self.path, group)
        shape = np.asarray(g.attrs["shape"])
        if shape.shape != (2,) or shape.dtype.kind not in "iu" or np.any(shape < 0):
            raise ValueError(f"{where} has shape attribute {shape.tolist()!r}, not two counts: the file "
                             "is corrupt")
        self.shape = (int(shape[0]), int(shape[1]))
        self.bounds = np.asarray(g["bounds"][...], dtype=np.int64)
        self.indptr = np.asarray(g["indptr"][...], dtype=np.int64)
        self.dtype = np.dtype(g["data"].dtype)
        self.generation = _generation(fh)
        if len(self.indptr) != self.shape[0] + 1 or self.indptr[0] != 0 or np.any(np.diff(self.indptr) < 0):
            raise ValueError(f"{where}: its row pointers do not fit its shape {self.shape}: the file is corrupt")
        self.nnz = int(self.indptr[-1])
        stored = (g["indices"].shape, g["data"].shape)
        if stored != ((self.nnz,), (self.nnz,)):
            raise ValueError(f"{where}: its row pointers count {self.nnz} nonzeros but it stores "
                             f"{stored[0]} indices and {stored[1]} values: the file is corrupt")
        b = self.bounds
        if b.ndim != 1 or len(b) < 2 or b[0] != 0 or b[-1] != self.shape[0] or np.any(np.diff(b) < 0):
            raise ValueError(f"{where}: its chunk bounds do not cover rows 0:{self.shape[0]} in order: "
                             "the file is corrupt")

    def __repr__(self) -> str:
        return (f"ChunkedCSR({str(self.path)!r}, group={self.group!r}, shape={self.shape}, "
                f"nnz={self.nnz}, n_chunks={self.n_chunks})")

    @property
    def n_chunks(self) -> int:
        return len(self.bounds) - 1

    @property
    def nbytes(self) -> int:
        """Bytes of the whole matrix as an in-memory CSR (indptr int64, indices int32, data)."""
        return 8 * (self.shape[0] + 1) + (4 + self.dtype.itemsize) * self.nnz

    @property
    def T(self) -> ChunkedCSR:
        """The transpose's chunks (``group="XT"``), checked to be this matrix's transpose in shape
        and number of nonzeros."""
        other = ChunkedCSR(self.path, "XT" if self.group == "X" else "X")
        if other.generation != self.generation:       # rewritten since this one was opened
            _raise_rewritten(self.path)
        if other.shape != self.shape[::-1] or other.nnz != self.nnz:
            raise ValueError(f"{str(self.path)!r}: group {other.group!r} has shape {other.shape} and "
                             f"{other.nnz} nonzeros, but group {self.group!r}, shape {self.shape} and "
                             f"{self.nnz} nonzeros: they are not one matrix and its transpose, the "
                             "corpus file is corrupt")
        return other

    def max_chunk_nbytes(self) -> int:
        nnz = np.diff(self.indptr[self.bounds])
        rows = np.diff(self.bounds)
        return int(np.max(8 * (rows + 1) + (4 + self.dtype.itemsize) * nnz)) if len(nnz) else 0

    def _check_generation(self, fh) -> None:
        """The file must be the one this object was opened on: a corpus rewritten while a fit
        streams it would otherwise mix old and new chunks."""
        _check_stamp(fh, self.generation, self.path)

    def _read(self, g, r0: int, r1: int, dtype: Any = None) -> sp.csr_matrix:
        a, b = int(self.indptr[r0]), int(self.indptr[r1])
        indptr = self.indptr[r0:r1 + 1] - a
        try:
            if dtype is None or np.dtype(dtype) == self.dtype:
                data = g["data"][a:b]
            else:                 # converted by HDF5 while reading: no second copy in the file's dtype
                data = g["data"].astype(np.dtype(dtype))[a:b]
            indices = g["indices"][a:b]
        except (OSError, RuntimeError, KeyError) as exc:    # h5py's bare errors for a damaged file
            # still an OSError: a dask worker's read reports it as a CorpusReadError, not retried
            raise OSError(f"{str(self.path)!r} group {self.group!r} rows {r0}:{r1} cannot be read "
                          f"({type(exc).__name__}: {exc}): the corpus file is damaged") from exc
        _check_indices(indices, self.shape[1], f"{str(self.path)!r} group {self.group!r} rows {r0}:{r1}")
        return sp.csr_matrix((data, indices, indptr), shape=(r1 - r0, self.shape[1]))

    def chunks(self) -> Iterator[tuple[int, sp.csr_matrix]]:
        """Yield ``(first_row, chunk)`` for every chunk in order; one chunk in memory at a time."""
        import h5py
        with h5py.File(self.path, "r") as fh:
            self._check_generation(fh)
            g = fh[self.group]
            for r0, r1 in zip(self.bounds[:-1], self.bounds[1:], strict=True):
                yield int(r0), self._read(g, int(r0), int(r1))

    def read_ranges(self, ranges: Iterable[tuple[int, int]],
                    dtype: Any = None) -> Iterator[tuple[int, int, sp.csr_matrix]]:
        """Yield ``(r0, r1, rows r0:r1)`` for the given row ranges, one file handle for all; values
        in ``dtype`` when given (converted while reading)."""
        import h5py
        with h5py.File(self.path, "r") as fh:
            self._check_generation(fh)
            g = fh[self.group]
            for r0, r1 in ranges:
                yield int(r0), int(r1), self._read(g, int(r0), int(r1), dtype)

    def __iter__(self) -> Iterator[tuple[int, sp.csr_matrix]]:
        return self.chunks()

    def to_csr(self) -> sp.csr_matrix:
        """The whole matrix in memory (for tests and small corpora)."""
        import h5py
        with h5py.File(self.path, "r") as fh:
            self._check_generation(fh)
            return self._read(fh[self.group], 0, self.shape[0])


def read_rows(path: str | os.PathLike, group: str, r0: int, r1: int, dtype: Any = None,
              generation: str | None = None) -> sp.csr_matrix:
    """Rows ``r0:r1`` of one group (``"X"`` or ``"XT"``) of a :func:`write_chunks` file, reading
    only their slice of the row pointers (for a worker that needs one block, not the index).
    Values in ``dtype`` when given (converted by HDF5 while reading); with ``generation`` the
    file must carry that stamp (:attr:`ChunkedCSR.generation`), else RuntimeError."""
    import h5py
    with h5py.File(path, "r") as fh:
        if generation is not None:
            _check_stamp(fh, generation, path)
        g = fh[group]
        indptr = np.asarray(g["indptr"][r0:r1 + 1], dtype=np.int64)
        a, b = int(indptr[0]), int(indptr[-1])
        n_cols = int(g.attrs["shape"][1])
        indices = g["indices"][a:b]
        _check_indices(indices, n_cols, f"{os.fspath(path)!r} group {group!r} rows {r0}:{r1}")
        values = g["data"] if dtype is None or np.dtype(dtype) == g["data"].dtype else g["data"].astype(np.dtype(dtype))
        return sp.csr_matrix((values[a:b], indices, indptr - a), shape=(r1 - r0, n_cols))


def _check_layout(g, path: Path, group: str) -> None:
    """The group is one :func:`write_chunks` wrote, in a format version this linxling reads."""
    import h5py
    where = f"{str(path)!r} group {group!r}"
    if not isinstance(g, h5py.Group) or "format_version" not in g.attrs:
        raise ValueError(f"{where} has no chunk format version: the file was not written by "
                         "linxling.io.write_chunks")
    version = g.attrs["format_version"]
    version = version.item() if isinstance(version, np.generic) else version
    if isinstance(version, bool) or not isinstance(version, int) or version != _FORMAT_VERSION:
        raise ValueError(f"{where} has chunk format version {version!r}, but this linxling reads "
                         f"version {_FORMAT_VERSION}: write the corpus again with this version's "
                         "linxling.io.write_chunks, or use the linxling that wrote it")
    missing = [k for k in ("indptr", "indices", "data", "bounds") if k not in g]
    if missing or "shape" not in g.attrs:
        raise ValueError(f"{where} lacks {missing or ['its shape attribute']}: the corpus file is "
                         "incomplete or corrupt")


def _generation(fh) -> str:
    value = fh.attrs.get("generation", "")
    return value.decode() if isinstance(value, bytes) else str(value)


def _check_stamp(fh, generation: str, path: str | os.PathLike) -> None:
    """The open file must carry ``generation``: a corpus rewritten while a fit streams it would
    otherwise mix old and new chunks."""
    if _generation(fh) != generation:
        _raise_rewritten(path)


def _raise_rewritten(path: str | os.PathLike) -> None:
    raise RuntimeError(f"{os.fspath(path)!r} was rewritten since it was opened (its generation "
                       "stamp changed): a streamed fit cannot mix two corpora; open it again "
                       "(ChunkedCSR(path)) and start the fit again")


def _check_indices(indices: np.ndarray, n_cols: int, where: str) -> None:
    """Column indices of a chunk inside [0, n_cols): the kernels index dense rows by them (an
    index of 2e9 made a streamed WMF fit segfault)."""
    if indices.size:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= n_cols:
            raise ValueError(f"{where}: column index {hi if hi >= n_cols else lo} outside [0, {n_cols}): "
                             "the corpus file is corrupt")


def _index_dtype(n: int) -> np.dtype:
    """int32 indices while they fit, int64 beyond 2^31 - 1 columns (they wrapped to negative)."""
    return np.dtype(np.int32 if n <= np.iinfo(np.int32).max else np.int64)


def write_chunks(path: str | os.PathLike, X: Any, *, chunk_rows: int | None = None,
                 n_cols: int | None = None, transpose: bool = True,
                 memory_budget: int | None = None, overwrite: bool = False) -> ChunkedCSR:
    """Write a sparse corpus to HDF5 as CSR row chunks (and, by default, its transpose).

    Parameters
    ----------
    path : str or Path
        The HDF5 file to create.
    X : sparse matrix, iterable of sparse matrices (row blocks, all with the same columns), ChunkedCSR or dask array
        The corpus; an iterable is consumed block by block (never stacked in memory), so a
        corpus larger than memory can be written from a generator. A ChunkedCSR (another
        corpus file) is read chunk by chunk, e.g. to store it with other ``chunk_rows``; a dask
        array (one chunk along the columns) by its row chunks, computed one at a time.
    chunk_rows : int, optional
        Rows per stored chunk (the last may be shorter; an iterable's blocks are gathered or
        split to this many rows, holding at most one chunk besides the block being read).
        Default: about 64 MiB of CSR per chunk (for a matrix) or the blocks as given (for an
        iterable).
    n_cols : int, optional
        Number of columns (checked against every block; default: the first block's).
    transpose : bool, default True
        Also write Xᵀ (group ``"XT"``), which the word half-steps of WMF stream.
    memory_budget : int or str, optional
        Bytes (or a size such as ``"512M"``) of nonzeros gathered at a time while transposing (default 256 MiB):
        one pass over the corpus per such block; a budget given that takes more than 16 passes warns.
    overwrite : bool, default False

    Returns
    -------
    ChunkedCSR
        Read access to ``X`` (``.T`` for the transpose).
    """
    import h5py
    path = Path(path)
    if path.is_dir():             # checked first: os.replace failed only after the whole corpus was written
        raise IsADirectoryError(f"path {str(path)!r} is a directory; give the corpus file's name, e.g. "
                                f"{str(path / 'corpus.h5')!r}")
    if path.exists() and not overwrite:
        raise FileExistsError(f"path {str(path)!r} exists; pass overwrite=True to replace it")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"path {str(path)!r}: its folder {str(path.parent)!r} does not exist")
    if chunk_rows is not None and (isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer))
                                   or chunk_rows < 1):
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    memory_budget = parse_budget(memory_budget)
    if isinstance(X, (str, bytes, os.PathLike)):         # iter() would read a str a character a block
        raise TypeError(f"X must be a sparse matrix or an iterable of sparse row blocks, got a "
                        f"{type(X).__name__} ({X!r}); path is the file to write")
    if sp.issparse(X) or isinstance(X, np.ndarray):
        Xc = _check_block(X, n_cols, -1, "X", "n_cols")
        step = chunk_rows or _rows_per_chunk(Xc, _DEFAULT_CHUNK_BYTES)
        blocks: Iterable = (Xc[r:r + step] for r in range(0, max(Xc.shape[0], 1), step))
        rechunk = None
    elif isinstance(X, ChunkedCSR):      # another corpus file, chunk by chunk (its iterator yields (row, chunk))
        blocks = (C for _, C in X.chunks())
        rechunk = chunk_rows
    elif type(X).__module__.startswith("dask.array") and hasattr(X, "to_delayed"):
        # its row chunks, computed one at a time (iterating a dask array gives single rows: "X chunk
        # 0 must be 2-D" or "an object array that does not convert to numbers")
        if X.ndim != 2 or len(X.chunks[1]) != 1:
            raise ValueError(f"X is a dask array of shape {X.shape} with {len(X.chunks[1]) if X.ndim == 2 else '?'} "
                             "column chunks; write_chunks reads its row chunks: give a 2-D array with one chunk "
                             "along the columns, X.rechunk({1: -1})")
        blocks = (b.compute() for b in X.to_delayed()[:, 0])
        rechunk = chunk_rows
    else:
        try:
            blocks = iter(X)
        except TypeError:
            raise TypeError(f"X must be a sparse matrix or an iterable of sparse row blocks, got "
                            f"{type(X).__name__}") from None
        rechunk = chunk_rows
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with h5py.File(tmp, "w") as fh:
            import uuid
            fh.attrs["generation"] = uuid.uuid4().hex       # checked on every pass of a streamed fit
            g = fh.create_group("X")
            dtype = _write_rows(g, blocks, n_cols, rechunk)
            g.attrs["format_version"] = _FORMAT_VERSION
        if transpose:
            src = ChunkedCSR(tmp, "X")
            with h5py.File(tmp, "a") as fh:
                _write_transpose(fh.create_group("XT"), src, dtype,
                                 memory_budget or 256 * 2 ** 20, chunk_rows, warn_passes=memory_budget is not None)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return ChunkedCSR(path, "X")


def _write_rows(g, blocks: Iterable, n_cols: int | None, chunk_rows: int | None) -> np.dtype:
    """Append row blocks to the group; return the value dtype. With ``chunk_rows`` the stored
    chunks are rows ``0:chunk_rows``, ``chunk_rows:2 chunk_rows``, ... whatever the blocks' sizes
    (blocks smaller than a chunk are gathered, at most one chunk at a time, and written
    together); without, each block is a chunk."""
    indices = data = None
    indptr_parts = [np.zeros(1, dtype=np.int64)]
    n_rows = nnz = 0
    dtype = None
    pending: list = []                    # checked blocks not yet written (fewer than chunk_rows rows)
    pending_rows = 0
    bounds = [0]
    cols_from = "n_cols" if n_cols is not None else "the first chunk"

    def flush() -> None:
        nonlocal nnz, pending_rows
        assert indices is not None and data is not None
        B = pending[0] if len(pending) == 1 else sp.vstack(pending, format="csr")
        pending.clear()
        pending_rows = 0
        indices.resize((nnz + B.nnz,))
        data.resize((nnz + B.nnz,))
        indices[nnz:] = B.indices.astype(indices.dtype, copy=False)
        data[nnz:] = B.data
        indptr_parts.append(B.indptr[1:].astype(np.int64) + nnz)
        nnz += B.nnz

    for i, block in enumerate(blocks):
        B = _check_block(block, n_cols, i, "X", cols_from)
        if n_cols is None:
            n_cols = B.shape[1]
        if dtype is None:
            dtype = B.dtype
            indices = g.create_dataset("indices", shape=(0,), maxshape=(None,), dtype=_index_dtype(n_cols),
                                       chunks=(2 ** 18,))
            data = g.create_dataset("data", shape=(0,), maxshape=(None,), dtype=dtype, chunks=(2 ** 18,))
        elif B.dtype != dtype:
            raise TypeError(f"X chunk {i} has dtype {B.dtype}, the first chunk has {dtype}")
        if not B.shape[0]:
            continue
        n_rows += B.shape[0]
        pending.append(B)
        pending_rows += B.shape[0]
        if chunk_rows is None:
            bounds.append(n_rows)
            flush()
        elif pending_rows >= chunk_rows:
            flush()
    if dtype is None:
        raise ValueError("X has no row blocks: nothing to write")
    if n_rows == 0:
        raise ValueError("X has no rows: nothing to write")
    if pending:
        flush()
    if chunk_rows is not None:
        bounds = [*range(0, n_rows, chunk_rows), n_rows]
    g.create_dataset("indptr", data=np.concatenate(indptr_parts))
    g.create_dataset("bounds", data=np.asarray(bounds, dtype=np.int64))
    g.attrs["shape"] = (n_rows, int(n_cols or 0))
    return np.dtype(dtype)


def _split_columns(indptr: np.ndarray, c0: int, c1: int, max_nnz: int, max_cols: int | None) -> list:
    """Boundaries in [c0, c1] of consecutive column runs of at most ``max_nnz`` nonzeros (a column
    with more is a run of its own) and at most ``max_cols`` columns."""
    bounds = [c0]
    while bounds[-1] < c1:
        start = bounds[-1]
        stop = int(np.searchsorted(indptr, indptr[start] + max_nnz, side="right")) - 1
        stop = max(stop, start + 1)
        if max_cols:
            stop = min(stop, start + max_cols)
        bounds.append(min(stop, c1))
    return bounds


#: :func:`write_chunks` warns when a ``memory_budget`` it was given makes the transpose read the
#: corpus more than this many times (the default budget, 256 MiB, does not warn: a corpus of 165M
#: nonzeros takes it 20-25 passes)
TRANSPOSE_PASSES_WARN = 16


def _write_transpose(g, src: ChunkedCSR, dtype, budget: int, chunk_rows: int | None, *,
                     warn_passes: bool = False) -> None:
    """Write src ᵀ as row chunks: count per column, then gather column blocks within ``budget``
    (one pass over the corpus per block), each block stored as chunks of at most ``chunk_rows``
    rows (default: about ``_DEFAULT_CHUNK_BYTES`` each), so that a large budget means fewer passes,
    not larger reads for the corpus's readers."""
    n, m = src.shape
    counts = np.zeros(m, dtype=np.int64)
    for _, C in src.chunks():
        counts += np.bincount(C.indices, minlength=m)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    per_nz = 4 + np.dtype(dtype).itemsize + 8          # indices, data, and the COO row index
    max_nnz = max(1, budget // (2 * per_nz))
    gather = _split_columns(indptr, 0, m, max_nnz, None)
    passes = len(gather) - 1
    if warn_passes and passes > TRANSPOSE_PASSES_WARN:   # a budget given far below the corpus: slow, so said
        warnings.warn(f"write_chunks: memory_budget={budget:,} bytes gathers {max_nnz:,} nonzeros at a time, so "
                      f"writing Xᵀ reads the corpus {passes} times ({int(indptr[-1]):,} nonzeros); a larger "
                      "memory_budget means fewer passes (transpose=False skips Xᵀ)", UserWarning,
                      stacklevel=find_stack_level())
    chunk_nnz = max(1, min(max_nnz, _DEFAULT_CHUNK_BYTES // (4 + np.dtype(dtype).itemsize)))
    bounds = [0]
    for c0, c1 in zip(gather[:-1], gather[1:], strict=True):
        bounds += _split_columns(indptr, c0, c1, chunk_nnz, chunk_rows)[1:]
    nnz = int(indptr[-1])
    hchunks = (min(2 ** 18, nnz),) if nnz else None
    indices = g.create_dataset("indices", shape=(nnz,), dtype=_index_dtype(n), chunks=hchunks)
    data = g.create_dataset("data", shape=(nnz,), dtype=dtype, chunks=hchunks)
    for c0, c1 in zip(gather[:-1], gather[1:], strict=True):
        rows, cols, vals = [], [], []
        for r0, C in src.chunks():               # one pass over the corpus per column block
            sub = C[:, c0:c1].tocoo()
            rows.append(sub.row.astype(np.int64) + r0)
            cols.append(sub.col)
            vals.append(sub.data)
        T = sp.csr_matrix((np.concatenate(vals), (np.concatenate(cols), np.concatenate(rows))),
                          shape=(c1 - c0, n), dtype=dtype)
        del rows, cols, vals
        T.sum_duplicates()
        T.sort_indices()
        a, b = int(indptr[c0]), int(indptr[c1])
        indices[a:b] = T.indices.astype(indices.dtype, copy=False)
        data[a:b] = T.data
        del T
    g.create_dataset("indptr", data=indptr)
    g.create_dataset("bounds", data=np.asarray(bounds, dtype=np.int64))
    g.attrs["shape"] = (m, n)
    g.attrs["format_version"] = _FORMAT_VERSION
