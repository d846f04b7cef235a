"""Dask row-partitioned sparse matrices: :class:`DaskCenteredGram` and :class:`DaskSource`.

Both run the same per-chunk functions (``_prepare_chunk``, ``_part_gram``, ``_part_stats``) and
check the array with :func:`linxling._dask.sparse_row_blocks`; they differ in where the work runs.

* :class:`DaskCenteredGram` (any dask scheduler: threads, processes, a distributed client): for a
  block ``V`` (p, m) every row chunk ``X_i`` computes ``X_i^T (X_i V)`` (p, m) in its own task of a
  graph built per application, the partial products are summed by a tree reduction, and the
  rank-1 mean correction and the ridge term are applied on the client.
* :class:`DaskSource` (a ``dask.distributed`` cluster): the chunks are persisted on the workers
  once and every product ships only dense blocks; the models' row-partitioned fits use it. When
  one worker holds every chunk, whole Gram solves run there (one task per solve).

``X`` is never centred (that would destroy sparsity) nor gathered.
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._dask import (
    WorkerLost,
    direct,
    gather_watching,
    get_client,
    holders,
    lost_errors,
    on_worker,
    sparse_row_blocks,
    wait_on,
    worker_list,
)
from linxling._linop import LinearOperator
from linxling._validation import check_positive
from linxling.operators._source import ChunkedSource, ColumnStats, RowSource

__all__ = ["DaskCenteredGram", "DaskSource", "DaskDiskSource", "place_sources"]


def _sum(*parts):
    out = parts[0].copy() if hasattr(parts[0], "copy") else parts[0]
    for p_ in parts[1:]:
        out += p_
    return out


def _tree_sum(parts: list, split_every: int):
    import dask

    add = dask.delayed(_sum, pure=True)
    while len(parts) > 1:
        parts = [add(*parts[i:i + split_every]) if len(parts[i:i + split_every]) > 1 else parts[i]
                 for i in range(0, len(parts), split_every)]
    return parts[0]


class DaskCenteredGram(LinearOperator):
    """``X̂^T X̂ + alpha I`` for a dask array ``X`` (n, p) with scipy.sparse chunks.

    Parameters
    ----------
    X : dask.array.Array (n_samples, n_features)
        Chunked along rows only (one chunk along columns); ``X._meta`` must be a scipy.sparse
        matrix, e.g. ``da.from_array(csr, chunks=(10_000, -1), asarray=False)``.
    alpha : float > 0
    mean : array (n_features,), optional
        Defaults to the column means, from one chunk-parallel pass of column statistics (the
        same per-chunk function as :class:`DaskSource`; the diagonal reuses it).
    scheduler : str or None
        dask scheduler for every application (``"threads"``, ``"processes"``, ``"sync"``,
        a distributed client's scheduler, ...); ``None`` uses dask's configured default.
    split_every : int, default 8
        Fan-in of the tree reduction of the per-chunk ``X_i^T (X_i V)`` partials.

    Attributes
    ----------
    mean_ : ndarray (n_features,)
    n_samples : int
    alpha : float
    n_chunks : int

    Notes
    -----
    Each application builds a small graph (one task per chunk plus the reduction) and
    computes it; ``V`` is put in the graph once and shared by all chunk tasks.
    """

    def __init__(self, X: Any, alpha: float, mean: Any = None, *, scheduler: Any = None,
                 split_every: int = 8) -> None:
        import dask
        import dask.array as da

        if not isinstance(X, da.Array):
            raise TypeError(f"X must be a dask array, got {type(X).__name__}; use CenteredGram for "
                            "in-memory matrices")
        chunks, ranges = sparse_row_blocks(X, "X")
        dtype = X.dtype if np.dtype(X.dtype).kind == "f" else np.float64
        self.X = X
        self.alpha = float(check_positive(alpha, "alpha"))
        self.scheduler = scheduler
        self.split_every = max(2, int(split_every))
        # each chunk as the sorted, duplicate-free CSR matrix the shared per-chunk products expect
        self._blocks = [dask.delayed(_prepare_chunk, pure=True)(b, dtype, f"X chunk {i} (rows {r0}:{r1})",
                                                                (r1 - r0, X.shape[1]))
                        for i, (b, (r0, r1)) in enumerate(zip(chunks, ranges, strict=True))]
        self.n_chunks = len(self._blocks)
        p = X.shape[1]
        self.n_samples = n = ranges[-1][1]
        self._stats: ColumnStats | None = None
        if mean is None:
            mu = self._column_stats().sum / n
        else:
            mu = np.asarray(mean)
            if mu.shape != (p,):
                raise ValueError(f"mean must have shape ({p},), got {mu.shape}")
        self.mean_ = np.asarray(mu, dtype=dtype)
        super().__init__((p, p), dtype, symmetric=True)

    def _column_stats(self) -> ColumnStats:
        """Column sums and sums of squares (float64), one chunk-parallel pass, computed once."""
        import dask

        if self._stats is None:
            parts = dask.compute(*[dask.delayed(_part_stats, pure=True)(b, None, None) for b in self._blocks],
                                 scheduler=self.scheduler)
            stats = parts[0]
            for o in parts[1:]:
                stats.merge(o)
            if stats.n_nonfinite:
                raise ValueError(f"X contains {stats.n_nonfinite} NaN or infinite value(s)")
            self._stats = stats
        return self._stats

    def _matmat(self, V):
        import dask

        V = np.ascontiguousarray(V, dtype=self.dtype)
        Vd = dask.delayed(V, pure=True)
        parts = [dask.delayed(_gram_task, pure=True)(b, Vd) for b in self._blocks]
        Y = np.array(_tree_sum(parts, self.split_every).compute(scheduler=self.scheduler))
        Y += self.dtype.type(self.alpha) * V
        mu = self.mean_
        Y -= (self.n_samples * mu)[:, None] * (mu @ V)[None, :]
        return Y

    def diagonal(self):
        """``diag(X^T X) - n mu^2 + alpha`` (from the column statistics, one chunk-parallel pass)."""
        s = self._column_stats().sumsq
        return (s - self.n_samples * self.mean_.astype(np.float64) ** 2 + self.alpha).astype(self.dtype)


# ---------------------------------------------------------------------------------------------
# DaskSource: a row-partitioned matrix persisted on the workers of a dask.distributed cluster
# ---------------------------------------------------------------------------------------------

def _prepare_chunk(Xi, dtype, name: str = "a chunk", shape: tuple | None = None):
    """Worker side, once: the chunk as a sorted, duplicate-free CSR matrix in ``dtype``; ``name``
    for errors, ``shape`` the one its dask array declares (checked)."""
    if not sp.issparse(Xi):
        raise TypeError(f"{name} is a {type(Xi).__module__}.{type(Xi).__name__}, not a scipy.sparse matrix")
    if shape is not None and tuple(Xi.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(Xi.shape)}, but its dask array's chunks say {tuple(shape)}")
    X = sp.csr_matrix(Xi)
    if X.dtype.kind not in "fiub":
        raise TypeError(f"{name} holds dtype {X.dtype}, not real numbers")
    X = X.astype(dtype) if X.dtype != dtype else X.copy()
    X.sum_duplicates()
    X.sort_indices()
    return X


def _chunk_info(X, _b, _a):
    return int(X.shape[0]), int(X.nnz)


def _part_matmat(X, V, _a):
    from linxling.kernels.spmm import csr_matmat
    from linxling.operators._source import _cast
    return csr_matmat(_cast(X, V.dtype), V)


def _part_rmatmat(X, _b, W):
    from linxling.kernels.spmm import csr_rmatmat
    from linxling.operators._source import _cast
    return csr_rmatmat(_cast(X, W.dtype), W)


def _part_gram(X, V, _a):
    from linxling.kernels.spmm import csr_matmat, csr_rmatmat
    from linxling.operators._source import _cast
    Xc = _cast(X, V.dtype)
    return csr_rmatmat(Xc, csr_matmat(Xc, V))


# ---------------------------------------------------------------------------------------------
# worker-side copies: the chunk in the product's dtype with its CSR transpose (built on first
# use, kept in the worker process, keyed by the source's token): both products then run as the
# row-parallel gathers of the in-memory Gram (Xᵀ by a scatter from X alone was measured 5x
# slower: 3.6 s against 0.7 s for Xᵀ(X V), 10.2M nonzeros, 300 columns, 2 threads). A worker
# that restarts has none and builds them again from the persisted chunks.
# ---------------------------------------------------------------------------------------------
_WORKER_COPIES: dict = {}


#: a worker keeps copies only while its process stays under this share of its memory limit
COPY_MEMORY_SHARE = 0.5


def _room_for(nbytes: int) -> bool:
    """Whether this process (a dask worker) can keep ``nbytes`` more and stay under
    ``COPY_MEMORY_SHARE`` of its memory limit (always True without a limit or outside a worker)."""
    try:
        from distributed import get_worker
        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        return True
    if not limit:
        return True
    import psutil
    return psutil.Process().memory_info().rss + nbytes <= COPY_MEMORY_SHARE * limit


def _copies(token: str, part: Any, dtype: Any, chunks: Any):
    """``Gram`` of ``chunks`` (one CSR, or a list stacked in order) in ``dtype`` with its CSR
    transpose, cached per ``(token, part, dtype)`` in this process (``part``: a chunk index, or
    "all"); None when the worker has no room for them (its memory limit): the caller then
    computes from the chunk itself."""
    from linxling.operators._source import _cast
    from linxling.operators.gram import Gram
    key = (token, part, np.dtype(dtype).str)
    g = _WORKER_COPIES.get(key)
    if g is None:
        parts = [chunks] if sp.issparse(chunks) else list(chunks)
        nnz = sum(int(c.nnz) for c in parts)
        item = np.dtype(dtype).itemsize
        same = len(parts) == 1 and parts[0].dtype == np.dtype(dtype)
        need = (0 if same else nnz * (4 + item)) + nnz * (4 + item)        # the copy and the transpose
        if not _room_for(need):
            return None
        X = parts[0] if len(parts) == 1 else sp.vstack(parts, format="csr")
        g = Gram(_cast(X, np.dtype(dtype)), 1.0)
        g.transposed()
        _WORKER_COPIES[key] = g
    return g


def _drop_copies(token: str) -> int:
    """Forget this source's worker-side copies (run on every worker by ``DaskSource.close``) and
    the process's pooled scratch buffers."""
    keys = [k for k in _WORKER_COPIES if k[0] == token]
    for k in keys:
        del _WORKER_COPIES[k]
    with _POOL_LOCK:
        _POOL.clear()
    return len(keys)


# ---------------------------------------------------------------------------------------------
# scratch buffers of a worker's chunk sums, kept between products: a partial sum is written into a
# buffer, added in place into the task's result, and the buffer goes back to the pool. A new
# p × b array for every chunk would be fresh memory each time, and first touches are slow where
# freed memory goes back to the host (a virtual machine with free page reporting: 0.5-0.8 GB/s
# here against 6 GB/s for memory touched again at once, measured 2026-11-28).
# ---------------------------------------------------------------------------------------------
_POOL: dict = {}                #: dtype -> flat arrays free for reuse
_POOL_LOCK = threading.Lock()
#: flat buffers a process keeps per dtype (the largest): one per concurrent chunk-sum task
POOL_KEEP = 2


def _pool_take(shape: tuple, dtype: Any, taken: list):
    """A C-contiguous ``shape`` view of a pooled flat buffer of ``dtype`` (the smallest that is large
    enough), or of a new one when the process has room (:func:`_room_for`); None otherwise. The
    flat buffer is appended to ``taken`` (for :func:`_pool_give`)."""
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    with _POOL_LOCK:
        free = _POOL.get(dt.str, [])
        fits = [i for i, a in enumerate(free) if a.size >= n]
        buf = free.pop(min(fits, key=lambda i: free[i].size)) if fits else None
    if buf is None:
        if not _room_for(n * dt.itemsize):
            return None
        buf = np.empty(n, dtype=dt)
    taken.append(buf)
    return buf[:n].reshape(shape)


def _pool_give(taken: list) -> None:
    """Return buffers from :func:`_pool_take` to the pool, which keeps the ``POOL_KEEP`` largest per dtype."""
    with _POOL_LOCK:
        for buf in taken:
            free = _POOL.setdefault(buf.dtype.str, [])
            free.append(buf)
            free.sort(key=lambda a: -a.size)
            del free[POOL_KEEP:]
    taken.clear()


def _on_copies(g, fn_name: str, V, out=None):
    """``X V``, ``Xᵀ V`` or ``Xᵀ (X V)`` from the worker-side copies ``g`` (X and its CSR transpose),
    into ``out`` when given (a buffer of the result's shape and dtype)."""
    from linxling.kernels.spmm import csr_matmat
    if fn_name == "matmat":
        return csr_matmat(g.X, V, out)
    if fn_name == "rmatmat":
        return csr_matmat(g.transposed(), V, out)
    return csr_matmat(g.transposed(), csr_matmat(g.X, V), out)        # gram


def _cached_part(fn_name: str, token: str, index: int, X, b, a, out=None):
    """Worker side: one chunk's product on its cached copies, numba with the worker's threads
    (into ``out`` when given and the copies are there; else a new array)."""
    from linxling._dask import kernel_threads
    dtype = (b if b is not None else a).dtype
    g = _copies(token, index, dtype, X)
    if g is None:                          # no room for copies: from the chunk alone
        fn = {"matmat": _part_matmat, "rmatmat": _part_rmatmat, "gram": _part_gram}[fn_name]
        with kernel_threads():
            return fn(X, b, a)
    with kernel_threads():
        return _on_copies(g, fn_name, b if fn_name != "rmatmat" else a, out)


def _sum_plan(owners: list, level: int | None = None, j: int = 0):
    """The pairwise tree of ``len(owners)`` partial sums in chunk order (neighbours first, an odd
    last one carried up: the same additions in the same order wherever the tasks run), with every
    subtree whose chunks one worker holds (``owners[i]``, None: unknown) cut off as one task there
    (all None: every chunk alone, every addition a task; :func:`_submit_plan` submits it).

    Returns nested tuples: ``("group", level, j, owner)`` for the node ``j`` of ``level`` (chunks
    ``j·2^level`` to ``(j+1)·2^level - 1``; a single chunk at level 0) or ``("add", left, right)``.
    A group evaluates the same tree as the additions it replaces, so the sum is the same to the
    bit wherever the chunks are."""
    n = len(owners)
    if level is None:
        level = max(0, (n - 1).bit_length())          # the root: the level with one node
    lo, hi = j << level, min((j + 1) << level, n)
    held = set(owners[lo:hi])
    if level == 0 or (len(held) == 1 and None not in held):
        return ("group", level, j, owners[lo])
    left = _sum_plan(owners, level - 1, 2 * j)
    if (2 * j + 1) << (level - 1) >= n:               # no right neighbour at this level: carried
        return left
    return ("add", left, _sum_plan(owners, level - 1, 2 * j + 1))


def _group_sum(fn, head: tuple, level: int, j: int, n: int, b, k: int, *chunks_and_blocks):
    """Worker side: the partial sums of the chunks of node ``j`` of ``level`` of the pairwise tree
    over ``n`` chunks (:func:`_sum_plan`), added here in the tree's order. ``chunks_and_blocks``:
    the node's ``k`` chunks, then their per-chunk blocks. With ``head`` (the cached-copies path)
    each right-hand partial is written into a buffer of its level (from the process's pool,
    :func:`_pool_take`) and added in place into the left one (the same bits as a new ``a + b``):
    per task one new array, its result, not a fresh array per chunk and per addition. The result
    is never a pooled buffer."""
    chunks, blocks = chunks_and_blocks[:k], chunks_and_blocks[k:]
    lo = j << level
    scratch: dict = {}
    taken: list = []

    def node(lev: int, jj: int, out):
        if lev == 0:
            if head:
                return fn(*head, jj, chunks[jj - lo], b, blocks[jj - lo], out=out)
            return fn(chunks[jj - lo], b, blocks[jj - lo])
        left = node(lev - 1, 2 * jj, out)
        if (2 * jj + 1) << (lev - 1) >= n:
            return left
        if not head:
            return _add(left, node(lev - 1, 2 * jj + 1, None))
        if lev - 1 not in scratch:         # the level's buffer (the right partial has left's shape)
            scratch[lev - 1] = _pool_take(left.shape, left.dtype, taken)
        right = node(lev - 1, 2 * jj + 1, scratch[lev - 1])
        left += right                      # left is this task's own array (new, or its buffer)
        return left
    try:
        return node(level, j, None)
    finally:
        _pool_give(taken)


def _local_product(token: str, fn_name: str, V, *chunks):
    """Worker side, every chunk here: the product over the stacked chunks, one task."""
    from linxling._dask import kernel_threads
    g = _copies(token, "all", V.dtype, list(chunks))
    if g is None:                          # no room for the stacked copy: chunk by chunk
        fn = {"matmat": _part_matmat, "rmatmat": _part_rmatmat, "gram": _part_gram}[fn_name]
        with kernel_threads():
            if fn_name == "matmat":
                return np.vstack([fn(c, V, None) for c in chunks])
            if fn_name == "rmatmat":
                offs = np.cumsum([0] + [c.shape[0] for c in chunks])
                return _sum(*[fn(c, None, np.ascontiguousarray(V[a:b]))
                              for c, a, b in zip(chunks, offs[:-1], offs[1:], strict=True)])
            return _sum(*[fn(c, V, None) for c in chunks])
    with kernel_threads():
        return _on_copies(g, fn_name, V)


def _local_solve(token: str, alpha: float, R, d, X0, rtol: float, maxiter: Any, krylov: str, *chunks):
    """Worker side, every chunk here: the Jacobi block CG of ``(XᵀX + alpha I) Z = R`` run where the
    data lives, with the fused kernels of the in-memory solve (one task per solve, not per iteration)."""
    import copy

    from linxling._dask import kernel_threads
    from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg
    solver = jacobi_block_cg if krylov == "columns" else krylov_block_cg
    base = _copies(token, "all", R.dtype, list(chunks))
    if base is None:                       # no room for the stacked copy: products chunk by chunk
        op = _ChunksGram(list(chunks), alpha, R.dtype)
        with kernel_threads():
            return solver(op, R, d, X0, rtol=rtol, maxiter=maxiter, gram=None)
    g = copy.copy(base)                    # shares X and Xᵀ, own alpha
    g.alpha = float(alpha)
    with kernel_threads():
        return solver(g, R, d, X0, rtol=rtol, maxiter=maxiter, gram=g.fused_parts())


class _ChunksGram(LinearOperator):
    """``Σ X_iᵀ X_i + alpha I`` over chunks on one worker, without copies (the no-room fallback)."""

    def __init__(self, chunks: list, alpha: float, dtype: Any) -> None:
        self.chunks, self.alpha = chunks, float(alpha)
        p = chunks[0].shape[1]
        super().__init__((p, p), np.dtype(dtype), symmetric=True)

    def _matmat(self, V):
        V = np.ascontiguousarray(V, dtype=self.dtype)
        Y = _sum(*[_part_gram(c, V, None) for c in self.chunks])
        Y += self.dtype.type(self.alpha) * V
        return Y


def _gram_task(X, V):
    """:func:`_part_gram` as a task of any scheduler: numba kernels one at a time per process
    (``kernel_threads``), so a threaded scheduler never launches parallel kernels concurrently."""
    from linxling._dask import kernel_threads
    with kernel_threads():
        return _part_gram(X, V, None)


def _part_stats(X, _b, _a):
    from linxling.operators._source import _stats_of
    return _stats_of(X)


def _part_gram_sparse(X, _b, _a):
    from linxling.operators._source import _gram_of
    return _gram_of(X)


def _part_row_nnz(X, _b, _a):
    return np.diff(X.indptr).astype(np.int64)


def _part_head(X, n_rows, _a):
    return X[:n_rows]


def _same(x):
    """A chunk as it is (run on another worker: the chunk copied there)."""
    return x


def _add(a, b):
    """``a + b`` of two partial products (a new array: the inputs may be shared by other tasks)."""
    return a + b


def _nbytes(obj) -> int:
    """Bytes of the arrays in a message: ndarray, scipy.sparse, tuples/lists of them, or scalars."""
    if obj is None:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if sp.issparse(obj):
        obj = sp.csr_matrix(obj)
        return int(obj.data.nbytes + obj.indices.nbytes + obj.indptr.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    if hasattr(obj, "__dict__"):
        return sum(_nbytes(v) for v in vars(obj).values())
    return 8


def _stack_chunks(*chunks):
    """Worker side: the chunks as one CSR (in order)."""
    return chunks[0] if len(chunks) == 1 else sp.vstack(chunks, format="csr")


def _submit_plan(client, plan: tuple, group):
    """The future of the sum a :func:`_sum_plan` describes: ``group(level, j, owner)`` (a future)
    for each group, an ``_add`` task on the workers for each addition."""
    if plan[0] == "add":
        return client.submit(_add, _submit_plan(client, plan[1], group), _submit_plan(client, plan[2], group),
                             pure=False)
    return group(*plan[1:])


def _wished(i: int, c: int, n_workers: int) -> int:
    """The index of the worker chunk ``i`` of ``c`` is placed on: consecutive chunks on one worker."""
    return i * n_workers // max(1, c)


class _ProductCounters:
    """What a dask source's products sent and received (NumPy nbytes), and a log of them."""

    def _init_counters(self) -> None:
        self.bytes_sent = 0
        self.bytes_received = 0
        self.n_products = 0
        self.n_retries = 0
        self.n_local = 0
        #: one record per product: (kind, "chunks" or "local", columns, CG iterations (solves; 1 for
        #: a product, 0 chunk by chunk), wall seconds, bytes sent, bytes received)
        self.product_log: list[tuple] = []

    def _count(self, kind: str, where: str, cols: int, iters: int, t0: float, sent: int, got: int) -> None:
        self.n_products += 1
        self.n_local += where == "local"
        self.bytes_sent += sent
        self.bytes_received += got
        self.product_log.append((kind, where, int(cols), int(iters), time.perf_counter() - t0, sent, got))

    def _scatter_to_chunks(self, blocks: list, held: list) -> list:
        """``blocks[i]`` scattered straight to the first of ``held[i]`` (the workers holding chunk
        ``i``; one call per worker): their futures, in order."""
        by_worker: dict = {}
        for i, h in enumerate(held):
            by_worker.setdefault(h[0] if h else None, []).append(i)
        out: list = [None] * len(blocks)
        for w, idx in by_worker.items():
            futs = self.client.scatter([blocks[i] for i in idx], workers=None if w is None else [w],
                                       hash=False, direct=direct(self.client))
            for i, f in zip(idx, futs, strict=True):
                out[i] = f
        return out

    def counters(self) -> dict:
        return {"bytes_sent": int(self.bytes_sent), "bytes_received": int(self.bytes_received),
                "n_products": int(self.n_products), "n_local": int(self.n_local),
                "n_retries": int(self.n_retries)}


def place_sources(sources: list, share: float | None = None) -> int:
    """Put each source (a language) whole on one worker, the largest first onto the least
    loaded, when every one fits within ``share`` (default ``COPY_MEMORY_SHARE``) of its worker's
    memory limit (its chunks, a stacked copy in another dtype and the transpose). Then each
    language's products and block-CG solves run as one task on its worker, and different
    languages' on different workers at the same time. A :class:`DaskDiskSource` keeps nothing on
    the workers: it is given a worker (its :attr:`~DaskDiskSource.home`) where its whole solves
    run, balanced by the same measure. Returns the number of workers used; 0 (nothing moved)
    with fewer than two sources or workers, or when some in-memory language does not fit."""
    share = COPY_MEMORY_SHARE if share is None else float(share)
    if len(sources) < 2:
        return 0
    client = sources[0].client
    from linxling._dask import worker_memory_limits
    limit = worker_memory_limits(client)
    if len(limit) < 2 or any(src.client is not client or not isinstance(src, (DaskSource, DaskDiskSource))
                             for src in sources):
        return 0
    load = dict.fromkeys(sorted(limit), 0)
    plan = []
    for src in sorted(sources, key=lambda s: -s.nnz):
        need = 3 * src.nnz * (4 + src.dtype.itemsize) + 8 * src.shape[0]
        w = min(load, key=lambda a: (load[a], a))
        if isinstance(src, DaskSource) and limit[w] and load[w] + need > share * limit[w]:
            return 0
        load[w] += need
        plan.append((src, w))
    for src, w in plan:
        if isinstance(src, DaskDiskSource):
            src.home = w
        else:
            src.consolidate(w)
    return len({w for _, w in plan})


class DaskSource(_ProductCounters, RowSource):
    """A dask array whose chunks are scipy.sparse matrices, persisted once on the workers.

    The chunks are converted to CSR (``dtype``) and persisted on the cluster at construction
    (:meth:`distributed.Client.compute` of the array's chunks: the scheduler keeps their lineage,
    so a chunk lost with a worker is recomputed). Every product then ships only dense blocks: the
    input block ``V`` is scattered once per product (the workers fetch it from each other), each
    chunk task computes its partial result, and for the products whose results add up (``Xᵀ W``,
    ``Xᵀ X V``) the partials are summed **on the workers** by a pairwise tree in chunk order, so the
    result does not depend on which worker ran what and one p × b block reaches the client per
    product (row blocks ``X V`` come back per chunk). A product interrupted by a lost worker is
    submitted again (``max_retries`` times) with the same result.

    Bytes counted (``bytes_sent`` / ``bytes_received``): the arrays this client sends (the
    scattered ``V``, per-chunk row blocks) and receives (the sums, the row blocks), by their NumPy
    ``nbytes``. Not counted here: copies of ``V`` and of partial sums between workers, message
    headers, and the one-time persist of the data (``linxling._dask.CommMeter`` measures all of
    it on the wire; ``benchmarks/bench_dask_cr5.py`` reports both).

    Parameters
    ----------
    X : dask.array.Array (n, p)
        Chunked along rows only; its chunks are scipy.sparse matrices (``X._meta`` sparse).
    name : str
        For error messages.
    dtype : float dtype of the persisted values (default X's floating dtype, else float64)
    client : distributed.Client, optional
        Default: the current default client.
    max_retries : int, default 3
    workers : str or list of str, optional
        Worker address(es) to persist the chunks on (default: where the scheduler puts them).
        With every chunk on one worker, products run there as one task on the stacked chunks and
        Gram solves run there whole (:meth:`solve_local`): per solve only the right-hand sides
        and the solutions travel, not one block per CG iteration.

    Notes
    -----
    Each worker keeps, per chunk (or per stacked source when it holds every chunk), a copy in the
    product's dtype and its CSR transpose, so that both products are the row-parallel gathers of
    the in-memory Gram; only while its process stays under ``COPY_MEMORY_SHARE`` (half) of its
    memory limit, else it computes from the chunk itself (a scatter for ``Xᵀ``: slower, no
    copy). :meth:`close` drops the copies.
    """

    kind = "dask"

    def __init__(self, X: Any, *, name: str = "X", dtype: Any = None, client: Any = None,
                 max_retries: int = 3, workers: Any = None) -> None:
        import dask
        import dask.array as da

        super().__init__()
        if not isinstance(X, da.Array):
            raise TypeError(f"{name} must be a dask array, got {type(X).__name__}")
        chunks, ranges = sparse_row_blocks(X, name)
        kind = np.dtype(X.dtype).kind
        if kind == "c":
            raise ValueError(f"Complex data not supported: {name} has dtype {X.dtype}")
        if kind not in "fiub":
            raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
        self.dtype = np.dtype(dtype) if dtype is not None else (
            np.dtype(X.dtype) if kind == "f" else np.dtype(np.float64))
        self.client = get_client(client)
        self.name = name
        self.max_retries = int(max_retries)
        self._init_counters()
        #: the worker :meth:`consolidate` placed every chunk on (None: where the scheduler put them)
        self.home: str | None = None
        self._token = uuid.uuid4().hex
        # without a placement wish, consecutive chunks on the same worker (chunk i on worker
        # ⌊i W / c⌋: annotated, then kept by _keep_wish): the pairwise tree of partial sums in chunk order
        # (:func:`_sum_plan`) then sums each worker's chunks in one task there and crosses between
        # workers at its top ⌈log₂ W⌉ levels only (the scheduler's own placement crossed at every
        # level, e.g. 0, 1, 0, 1)
        here = worker_list(self.client) if workers is None else []
        parts = []
        for i, b in enumerate(chunks):
            with on_worker(here, _wished(i, len(chunks), len(here))):     # no-op without `here`
                r0, r1 = ranges[i]
                parts.append(dask.delayed(_prepare_chunk, pure=True)(
                    b, self.dtype, f"{name} chunk {i} (rows {r0}:{r1})", (r1 - r0, int(X.shape[1]))))
        if workers is not None:             # a placement wish: another worker takes over when these are lost
            workers = [workers] if isinstance(workers, str) else list(workers)
            self._futures = self.client.compute(parts, workers=workers, allow_other_workers=True)
        else:
            self._futures = self.client.compute(parts)
        info = self._run(_chunk_info, count=False)
        #: chunks moved once after the persist to the worker of their placement wish
        self.n_moved = self._keep_wish(here) if len(here) > 1 else 0
        rows = np.array([r for r, _ in info], dtype=np.int64)
        self.row_offsets = np.concatenate([[0], np.cumsum(rows)])
        self.shape = (int(self.row_offsets[-1]), int(X.shape[1]))    # type: ignore[assignment]
        self.nnz = int(sum(z for _, z in info))
        self.n_chunks = len(self._futures)

    def _keep_wish(self, workers: list) -> int:
        """Move every chunk the scheduler put elsewhere than its wish (chunk ``i`` of ``c`` on
        ``workers[⌊i W / c⌋]``; a loose wish, which the scheduler does not always keep: e.g. 8
        chunks of a 60,000-row language all on one worker) to that worker, once: a copy there
        (the task :func:`_same`, a wish again, so a lost worker's chunks are made elsewhere), the
        old one released. The chunk-order tree of partial sums then crosses between workers only
        at its top (:func:`_sum_plan`). Returns the number of chunks moved."""
        held = holders(self.client, self._futures)
        c = len(self._futures)
        old, moved = list(self._futures), 0
        for i, h in enumerate(held):
            w = workers[_wished(i, c, len(workers))]
            if h and w not in h:
                self._futures[i] = self.client.submit(_same, old[i], workers=[w], allow_other_workers=True,
                                                      pure=False)
                moved += 1
        if moved:
            wait_on(self.client, self._futures)
        del old
        return moved

    # -- the one way work is sent to the workers
    def _run(self, fn, broadcast: Any = None, per_chunk: list | None = None, *, count: bool = True,
             reduce: bool = False, name: str | None = None):
        """``[fn(chunk_i, broadcast, per_chunk[i]) for every chunk]``, computed where the chunks live.

        With ``name`` the task is ``fn(name, token, i, chunk_i, broadcast, per_chunk[i])``
        (:func:`_cached_part`: the product on the chunk's cached worker-side copies).
        With ``reduce`` the partial results are summed on the workers, by a pairwise tree in chunk
        order (the same additions in the same order wherever the tasks run), and only the sum
        comes back: ``[sum]``. Every subtree whose chunks one worker holds is one task there
        (:func:`_sum_plan`, :func:`_group_sum`: its partials in reused buffers, added in place);
        only the tree's top crosses between workers.
        """
        client = self.client
        last: BaseException | None = None
        for _attempt in range(self.max_retries + 1):
            try:
                t0 = time.perf_counter()
                wait_on(client, self._futures)    # chunks being made (or made again after a lost worker)
                for f in self._futures:
                    if f.status == "error":
                        f.result()            # a bad chunk: its task's error
                # every block straight between the client and a worker (not through the scheduler):
                # the broadcast block to one worker (the others fetch it from there), each chunk's
                # own block to the worker holding the chunk, the results straight back
                b = client.scatter(broadcast, hash=False, direct=direct(client)) if broadcast is not None else None
                held = holders(client, self._futures)
                per = [None] * len(self._futures) if per_chunk is None else self._scatter_to_chunks(per_chunk, held)
                head = (name, self._token) if name is not None else ()
                # each chunk's task on the worker holding the chunk: left to itself the scheduler
                # copies a chunk to wherever the (larger) broadcast block is, so chunks would
                # spread to every worker (memory a spread language may not have)
                if reduce:            # each worker's chunks summed in one task, then pairwise across
                    futs = [self._submit_sum(_sum_plan([h[0] if h else None for h in held]), fn, head, b, per)]
                else:
                    futs = [client.submit(fn, *head, *((i,) if head else ()), f, b, per[i], pure=False,
                                          workers=held[i][:1] if held[i] else None, allow_other_workers=False)
                            for i, f in enumerate(self._futures)]
                out = gather_watching(client, futs, self._futures, direct=direct(client))
            except (WorkerLost, *lost_errors()) as exc:   # a worker died: chunks recomputed, again
                last = exc
                self.n_retries += 1
                continue
            if count:
                cols = (broadcast if broadcast is not None else per_chunk[0]).shape[1] if (  # type: ignore[index]
                    broadcast is not None or per_chunk) else 0
                self._count(name or getattr(fn, "__name__", "?"), "chunks", cols, 0, t0,
                            _nbytes(broadcast) + _nbytes(per_chunk), sum(_nbytes(o) for o in out))
            return out
        raise RuntimeError(f"{self.name}: a product on the dask cluster failed {self.max_retries + 1} times "
                           f"(workers lost?); last error: {last!r}")

    def _submit_sum(self, plan: tuple, fn, head: tuple, b, per: list):
        """The future of the sum :func:`_sum_plan`'s ``plan`` describes: a group's chunks summed in one
        task on the worker holding them (:func:`_group_sum`), groups added pairwise (``_add``)."""
        n = len(self._futures)

        def group(level: int, j: int, owner):
            lo, hi = j << level, min((j + 1) << level, n)
            return self.client.submit(_group_sum, fn, head, level, j, n, b, hi - lo, *self._futures[lo:hi],
                                      *per[lo:hi], pure=False, workers=[owner] if owner else None,
                                      allow_other_workers=False)
        return _submit_plan(self.client, plan, group)

    # -- every chunk on one worker: one task per product or solve, on the stacked chunks
    def local_worker(self) -> str | None:
        """The worker that holds every chunk now, or None (the chunks are spread, or some is lost).

        Then products run as one task there on the stacked chunks, and Gram solves run there whole
        (:meth:`solve_local`): only the right-hand sides and the results travel."""
        if not self._futures:
            return None
        who = holders(self.client, self._futures)
        if any(w is None for w in who):
            return None
        common = set(who[0]).intersection(*[set(w) for w in who[1:]])   # type: ignore[misc]
        if not common:
            return None
        # a replica made elsewhere (e.g. by a task the scheduler ran on another worker) does not
        # move a placed language: its own worker stays first
        return self.home if self.home in common else min(common)

    def _run_local(self, fn, *args):
        """``fn(token, *args, *chunks)`` as one task on the worker holding every chunk (``args``
        scattered straight to it), or None when no worker holds them all. Retried when the worker
        is lost (the chunks are recomputed, perhaps spread: then None, and the caller goes chunk
        by chunk)."""
        client = self.client
        for _attempt in range(self.max_retries + 1):
            t0 = time.perf_counter()
            w = self.local_worker()
            if w is None:
                return None
            try:
                sent = [client.scatter(a, workers=[w], hash=False, direct=direct(client))
                        if isinstance(a, np.ndarray) else a
                        for a in args]
                fut = client.submit(fn, self._token, *sent, *self._futures, workers=[w],
                                    allow_other_workers=False, pure=False)
                out = gather_watching(client, [fut], self._futures, direct=direct(client))[0]
            except (WorkerLost, *lost_errors()):
                self.n_retries += 1
                continue
            arr = next(a for a in args if isinstance(a, np.ndarray))
            self._count(args[0] if isinstance(args[0], str) else "solve", "local",
                        int(arr.shape[1]) if arr.ndim == 2 else 1, int(getattr(out, "n_iter", 1)), t0,
                        sum(_nbytes(a) for a in args if isinstance(a, np.ndarray)), _nbytes(getattr(out, "x", out)))
            return out
        return None

    def consolidate(self, worker: str) -> None:
        """Move every chunk onto ``worker`` as one stacked chunk (one task there, which fetches
        the chunks held elsewhere once; the old chunks are released). A placement wish: when the
        worker is lost, the scheduler recomputes the stacked chunk on another."""
        fut = self.client.submit(_stack_chunks, *self._futures, workers=[worker], allow_other_workers=True,
                                 pure=False)
        wait_on(self.client, [fut])
        if fut.status != "finished":
            fut.result()                   # re-raises the task's error
        old, self._futures = self._futures, [fut]
        for f in old:
            f.release()
        self.row_offsets = np.array([0, self.shape[0]], dtype=np.int64)
        self.n_chunks = 1
        self.home = worker

    def solve_local(self, R, alpha: float, d, X0=None, *, rtol: float, maxiter: Any = None,
                    krylov: str = "columns"):
        """Solve ``(XᵀX + alpha I) Z = R`` by the Jacobi-preconditioned block CG on the worker that
        holds every chunk (the fused in-memory kernels, one task), or return None when the chunks
        are spread over workers (the caller then runs the CG here, one product per iteration)."""
        R = np.ascontiguousarray(R)
        d = np.ascontiguousarray(d, dtype=R.dtype)
        X0 = None if X0 is None else np.ascontiguousarray(X0, dtype=R.dtype)
        return self._run_local(_local_solve, float(alpha), R, d, X0, float(rtol), maxiter, krylov)

    def _product(self, name: str, V, per_chunk: bool):
        out = self._run_local(_local_product, name, V)
        if out is not None:
            return out
        if name == "matmat":
            return np.vstack(self._run(_cached_part, V, None, name=name))
        if name == "rmatmat":
            per = [V[a:b] for a, b in zip(self.row_offsets[:-1], self.row_offsets[1:], strict=True)]
            return self._run(_cached_part, None, per, reduce=True, name=name)[0]
        return self._run(_cached_part, V, reduce=True, name=name)[0]

    def matmat(self, V):
        V = np.ascontiguousarray(V)
        return self._product("matmat", V, False) if self.n_chunks else np.empty((0, V.shape[1]), V.dtype)

    def rmatmat(self, W):
        return self._product("rmatmat", np.ascontiguousarray(W), True)

    def gram_matmat(self, V):
        return self._product("gram", np.ascontiguousarray(V), False)

    def _compute_stats(self):
        parts = self._run(_part_stats, count=False)
        s = parts[0]
        for o in parts[1:]:
            s.merge(o)
        return s

    def _compute_gram(self):
        parts = self._run(_part_gram_sparse, count=False)
        G = parts[0]
        for o in parts[1:]:
            G = G + o
        return sp.csr_matrix(G)

    def row_nnz(self):
        return np.concatenate(self._run(_part_row_nnz, count=False))

    def head(self, n_rows):
        [fut] = self._futures[:1]
        [where] = holders(self.client, [fut])      # run where the chunk is: no copy of it
        return self.client.submit(_part_head, fut, int(n_rows), None, pure=False, workers=where,
                                  allow_other_workers=True).result()

    def close(self) -> None:
        """Release the persisted chunks on the cluster."""
        futs, self._futures = self._futures, []
        for f in futs:
            f.release()
        try:
            self.client.run(_drop_copies, self._token)
        except Exception:      # noqa: BLE001 - a closed cluster has nothing left to drop
            pass


# ---------------------------------------------------------------------------------------------
# DaskDiskSource: a corpus on a filesystem every worker reads, no chunk kept on any worker
# ---------------------------------------------------------------------------------------------

def _disk_read(path: str, group: str, r0: int, r1: int, dtype: Any, generation: str):
    """Worker side: rows ``r0:r1`` of ``group`` read from the file in ``dtype``; a damaged file
    is a :class:`linxling._dask.CorpusReadError` (not a lost worker: not retried)."""
    from linxling._dask import _FILE_ERRORS, CorpusReadError
    from linxling.io._chunks import read_rows
    try:
        return read_rows(path, group, r0, r1, dtype, generation)
    except _FILE_ERRORS:
        raise
    except OSError as exc:      # h5py's error for a damaged file
        raise CorpusReadError(f"reading rows {r0}:{r1} of {group!r} from the corpus file {path!r} on a "
                              f"dask worker failed: {exc}") from exc


def _disk_rows(path: str, group: str, generation: str, ranges: list, V):
    """Worker side: ``X_i V`` (or ``(Xᵀ)_c W``) of consecutive ``ranges``, read one after
    another, into one block of their rows (each range's product the same as alone)."""
    from linxling._dask import kernel_threads
    from linxling.kernels.spmm import csr_matmat
    base = ranges[0][0]
    out = np.empty((ranges[-1][1] - base, V.shape[1]), dtype=V.dtype)
    for r0, r1 in ranges:
        X = _disk_read(path, group, r0, r1, V.dtype, generation)
        with kernel_threads():
            csr_matmat(X, V, out[r0 - base:r1 - base])
    return out


def _disk_part(fn_name: str, path: str, group: str, generation: str, _index: int, rng: tuple, V, W_i,
               out=None):
    """Worker side: one range's part of a summed product, for :func:`_group_sum`: ``X_iᵀ (X_i V)``
    (fn "gram", ``V`` the whole block) or ``X_iᵀ W_i`` (fn "rmatmat", ``W_i`` the range's rows of
    ``W``: a corpus without its stored transpose), into ``out`` when given (overwritten; a pooled
    buffer) else a new array. The same additions either way."""
    from linxling._dask import kernel_threads
    from linxling.kernels.spmm import csr_gram_accumulate, csr_rmatmat_accumulate
    B = V if fn_name == "gram" else W_i
    X = _disk_read(path, group, rng[0], rng[1], B.dtype, generation)
    if out is None:
        out = np.zeros((X.shape[1], B.shape[1]), dtype=B.dtype)
    else:
        out.fill(0)
    with kernel_threads():
        if fn_name == "gram":
            return csr_gram_accumulate(X, V, out)
        return csr_rmatmat_accumulate(X, np.ascontiguousarray(W_i), out)


def _disk_solve(path: str, generation: str, read_bytes: int, alpha: float, R, d, X0, rtol: float,
                maxiter: Any, krylov: str):
    """Worker side: the whole Jacobi block CG of ``(XᵀX + alpha I) Z = R`` with the corpus read
    from the file at every iteration (a :class:`~linxling.operators._source.ChunkedSource` here,
    ``read_bytes`` at a time, each read's ``X_iᵀ (X_i V)`` added at once, as the out-of-core fit
    does in one process): one task per solve, only ``R`` and the solution travel."""
    from linxling._dask import _FILE_ERRORS, CorpusReadError, kernel_threads
    from linxling.io import ChunkedCSR
    from linxling.operators._source import ChunkedSource
    from linxling.operators.gram import SourceGram
    from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg
    solver = jacobi_block_cg if krylov == "columns" else krylov_block_cg
    try:
        chunked = ChunkedCSR(path)
        if chunked.generation != generation:
            raise RuntimeError(f"the corpus file {path!r} was rewritten since it was opened (generation "
                               f"{chunked.generation!r}, opened as {generation!r})")
        op = SourceGram(ChunkedSource(chunked, R.dtype, read_bytes), alpha, dtype=R.dtype)
        with kernel_threads():
            return solver(op, R, d, X0, rtol=rtol, maxiter=maxiter, gram=None)
    except _FILE_ERRORS:
        raise
    except OSError as exc:      # h5py's error for a damaged file
        raise CorpusReadError(f"reading the corpus file {path!r} on a dask worker during a block-CG "
                              f"solve failed: {exc}") from exc


def _disk_check(path: str, generation: str) -> str:
    """Worker side, once: the file opens here and is the one the client saw (empty string), or why not."""
    import h5py

    from linxling.io._chunks import _generation
    try:
        with h5py.File(path, "r") as fh:
            got = _generation(fh)
    except OSError as exc:
        return f"cannot open it ({exc})"
    return "" if got == generation else f"it holds another version (generation {got!r}, the client saw {generation!r})"


class DaskDiskSource(_ProductCounters, ChunkedSource):
    """A corpus on disk (:class:`linxling.io.ChunkedCSR`) whose products run on the workers of a
    ``dask.distributed`` cluster, every task reading its rows from the file.

    No worker keeps any of the corpus: a product sends the dense block ``V`` once (scattered; the
    workers fetch it from each other), and each worker's task reads its consecutive ranges of
    stored chunks (at most ``read_bytes`` each) from the HDF5 file one after another, multiplies
    and returns its rows of the result. So a cluster can fit a corpus no worker could hold (each
    holds one range, ``V`` and its result), and a worker lost mid-product costs that product
    only: it is submitted again (``max_retries`` times) with the same result, since the data are
    in the file, not on the worker. ``X V`` reads the row chunks (group ``"X"``), ``Xᵀ W`` the
    stored transpose's (``"XT"``), so both are the row-parallel gathers of the in-memory
    products. ``Xᵀ (X V)`` is made per range, ``X_iᵀ (X_i V)``, and the ranges' p × m parts are
    summed by the pairwise tree in range order, each worker's subtrees in its own task, so only
    the tree's top crosses between workers and no n × m block travels. A corpus written without
    its transpose is multiplied by a scatter per range, summed the same way.

    A block-CG solve of ``(XᵀX + alpha I) Z = R`` (Cr5's ``block_method="cg"``) runs whole as one
    task on one worker (:meth:`solve_local`; the language's :attr:`home` when the fit placed it,
    different languages side by side), reading the file at every iteration: ``R`` goes out and
    the solution comes back, instead of a p × m block each way per CG iteration. Set
    :attr:`whole_solves` False (Cr5's ``placement="spread"``) to run the CG on the client instead.

    The file must be readable by every worker at the same path (a shared filesystem; checked at
    construction, with its generation stamp: a rewritten file is an error, never mixed). The
    one-time passes (column statistics; ``XᵀX`` for a dense or CHOLMOD factor; the head) are
    read on the client, one stored chunk at a time.

    Bytes counted (``bytes_sent`` / ``bytes_received``), as :class:`DaskSource`: the NumPy
    ``nbytes`` of the blocks this client sends and receives per product.

    Parameters
    ----------
    chunked : ChunkedCSR
    dtype : float dtype the products run in (values cast while read; default the file's float dtype)
    client : distributed.Client, optional (default: the current default client)
    name : str, for error messages
    read_bytes : int, optional
        Bytes per read (consecutive stored chunks read together). Default: the corpus split into
        about two reads per worker, between 4 MiB and ``ChunkedSource.READ_BYTES`` (64 MiB).
    max_retries : int, default 3
    """

    kind = "dask"
    #: whether :meth:`solve_local` runs whole solves on a worker (else it returns None)
    whole_solves = True
    #: the Gram product is summed on the workers and returned, not into a block here
    gram_into = False

    def __init__(self, chunked: Any, dtype: Any = None, *, client: Any = None, name: str = "X",
                 read_bytes: int | None = None, max_retries: int = 3) -> None:
        self.client = get_client(client)
        if read_bytes is None:
            from linxling._dask import n_workers
            share = chunked.nbytes // max(1, 2 * n_workers(self.client))
            read_bytes = int(min(max(share, 4 * 2 ** 20), self.READ_BYTES))
        super().__init__(chunked, dtype, read_bytes)
        self.name = name
        self.max_retries = int(max_retries)
        self.path = os.path.abspath(os.fspath(chunked.path))
        self.generation = chunked.generation
        self._init_counters()
        #: the worker its whole block-CG solves run on (:func:`place_sources`; None: the first)
        self.home: str | None = None
        why = {w: msg for w, msg in self.client.run(_disk_check, self.path, self.generation).items() if msg}
        if why:
            w, msg = sorted(why.items())[0]
            raise ValueError(f"{name}: every dask worker must read the corpus file {self.path!r} at that "
                             f"path (a filesystem they share); worker {w}: {msg}")

    @property
    def n_chunks(self) -> int:
        """Tasks per product (ranges of stored chunks, at most ``read_bytes`` each)."""
        return len(self._row_ranges)

    def _submit(self, kind: str, group: str, ranges: list, V: Any = None, per_range: list | None = None,
                fn: str | None = None):
        """The product over ``ranges`` on the workers, retried when a worker is lost.

        Consecutive ranges go to one worker (:func:`_wished` over the sorted workers; loosely:
        another worker takes them when that one is gone): a row product (``per_range`` None and
        ``fn`` not "gram") is one task per worker returning its ranges' rows (a list of blocks
        in order); a summed one (``per_range`` given, or ``fn`` "gram") is the pairwise tree over
        the ranges in order (:func:`_sum_plan`), every subtree of one worker's ranges summed in
        one task there (:func:`_group_sum`: the ranges read one after another, their parts in
        reused buffers), and only the tree's top crossing between workers: ``[sum]``. The tree
        is the same wherever the tasks run, so is the sum, to the bit."""
        from linxling._dask import _FILE_ERRORS
        client = self.client
        fn = fn or ("matmat" if per_range is None else "rmatmat")
        summed = per_range is not None or fn == "gram"
        n = len(ranges)
        last: BaseException | None = None
        for _attempt in range(self.max_retries + 1):
            t0 = time.perf_counter()
            try:
                workers = worker_list(client)
                owners = [workers[_wished(i, n, len(workers))] if workers else None for i in range(n)]
                b = None
                if V is not None:
                    b = client.scatter(V, hash=False, direct=direct(client))
                if not summed:
                    groups: dict = {}
                    for i, w in enumerate(owners):
                        groups.setdefault(w, []).append(ranges[i])
                    futs = [client.submit(_disk_rows, self.path, group, self.generation, rs, b, pure=False,
                                          workers=None if w is None else [w], allow_other_workers=w is not None)
                            for w, rs in groups.items()]
                else:
                    per = [None] * n if per_range is None else \
                        self._scatter_to_chunks(per_range, [[w] if w else None for w in owners])  # to its worker
                    head = (fn, self.path, group, self.generation)

                    def one_group(level: int, j: int, owner, per=per, head=head, b=b):
                        lo, hi = j << level, min((j + 1) << level, n)
                        return client.submit(_group_sum, _disk_part, head, level, j, n, b, hi - lo,
                                             *ranges[lo:hi], *per[lo:hi], pure=False,
                                             workers=None if owner is None else [owner],
                                             allow_other_workers=owner is not None)
                    futs = [_submit_plan(client, _sum_plan(owners), one_group)]
                out = client.gather(futs, direct=direct(client))
            except _FILE_ERRORS:
                raise
            except lost_errors() as exc:          # a worker died: the file is still there, again
                last = exc
                self.n_retries += 1
                continue
            self.n_reads += n
            cols = (V if V is not None else per_range[0]).shape[1]        # type: ignore[index]
            self._count(kind, "chunks", cols, 0, t0, _nbytes(V) + _nbytes(per_range), sum(_nbytes(o) for o in out))
            return out
        raise RuntimeError(f"{self.name}: a product on the dask cluster failed {self.max_retries + 1} times "
                           f"(workers lost?); last error: {last!r}")

    #: a whole solve runs on one worker when its vectors (about this many blocks of ``R``'s shape,
    #: the block CG's and the product's) and two reads fit ``COPY_MEMORY_SHARE`` of its memory limit
    SOLVE_BLOCKS = 8

    def solve_local(self, R, alpha: float, d, X0=None, *, rtol: float, maxiter: Any = None,
                    krylov: str = "columns"):
        """Solve ``(XᵀX + alpha I) Z = R`` by the Jacobi-preconditioned block CG as one task on one
        worker (:attr:`home` when the fit placed this language, else the first), which reads the
        corpus from the file at every iteration (:func:`_disk_solve`): per solve ``R`` goes out
        and the solution comes back, where a CG run here sends and receives a p × m block per
        iteration. Returns None (the caller then runs the CG here, one product per iteration)
        when that worker's memory limit could not hold the solve (``SOLVE_BLOCKS`` blocks of
        ``R``'s shape and two reads within ``COPY_MEMORY_SHARE`` of it). A worker lost during the
        solve costs that solve: it runs again on another, with the same result."""
        from linxling._dask import _FILE_ERRORS, worker_memory_limits
        R = np.ascontiguousarray(R)
        d = np.ascontiguousarray(d, dtype=R.dtype)
        X0 = None if X0 is None else np.ascontiguousarray(X0, dtype=R.dtype)
        if not self.whole_solves:
            return None
        client = self.client
        last: BaseException | None = None
        for _attempt in range(self.max_retries + 1):
            limits = worker_memory_limits(client)
            if not limits:
                return None
            w = self.home if self.home in limits else min(limits)
            need = self.SOLVE_BLOCKS * R.nbytes + 2 * self.max_chunk_nbytes()
            if limits[w] and need > COPY_MEMORY_SHARE * limits[w]:
                return None
            t0 = time.perf_counter()
            try:
                sent = [None if a is None else client.scatter(a, workers=[w], hash=False, direct=direct(client))
                        for a in (R, d, X0)]
                fut = client.submit(_disk_solve, self.path, self.generation, self.read_bytes, float(alpha),
                                    *sent, float(rtol), maxiter, krylov, workers=[w],
                                    allow_other_workers=True, pure=False)
                out = client.gather([fut], direct=direct(client))[0]
            except _FILE_ERRORS:
                raise
            except lost_errors() as exc:
                last = exc
                self.n_retries += 1
                continue
            self._count("solve", "local", int(R.shape[1]), int(out.n_iter), t0,
                        R.nbytes + d.nbytes + _nbytes(X0), _nbytes(out.x))
            return out
        raise RuntimeError(f"{self.name}: a block-CG solve on the dask cluster failed {self.max_retries + 1} "
                           f"times (workers lost?); last error: {last!r}")

    # the products run on the workers, so ChunkedSource's products summed read by read on this
    # process are not used (the cross-covariance's take X V and Xᵀ W whole)
    sums_by_chunk = False
    rmatmat_rows = RowSource.rmatmat_rows

    def gram_matmat(self, V):
        """``Xᵀ (X V)`` with each task's part ``X_iᵀ (X_i V)`` made where it reads its rows and
        the parts summed on the workers (pairwise, in range order): ``V`` goes out once and one
        p × m block comes back, no n × m block travels."""
        V = np.ascontiguousarray(V)
        return self._submit("gram", "X", self._row_ranges, V, fn="gram")[0]

    def matmat(self, V):
        V = np.ascontiguousarray(V)
        return np.vstack(self._submit("matmat", "X", self._row_ranges, V))

    def rmatmat(self, W):
        W = np.ascontiguousarray(W)
        if self._col_ranges is not None:
            return np.vstack(self._submit("rmatmat", "XT", self._col_ranges, W))
        per = [np.ascontiguousarray(W[r0:r1]) for r0, r1 in self._row_ranges]
        return self._submit("rmatmat", "X", self._row_ranges, per_range=per)[0]

    def close(self) -> None:
        """Nothing is kept on the cluster (the method of every dask source)."""
