"""Blocked cosine / CSLS retrieval evaluation (P@k, MRR) that never builds an n_q x n_c matrix."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from linxling._backend import get_namespace, to_numpy
from linxling._progress import progress
from linxling._threads import numba_one_thread, numba_serialised
from linxling._validation import check_int, n_distinct_rows, refuse_sparse, refuse_texts_as_vectors
from linxling._warnings import find_stack_level

__all__ = ["retrieval"]

_SIMILARITIES = ("cosine", "csls")


# --------------------------------------------------------------------------- validation helpers
BLOCK_MEMORY = 512 * 2 ** 20
# on a GPU: larger score blocks, fewer kernel launches per score (CSLS 200,000² on an H200:
# 21.7 s at 223-row blocks, 4.5 s at 2,048 rows), capped by a quarter of the free device memory
DEVICE_BLOCK_MEMORY = 6 * 2 ** 30
# entries of a score row per chunk of the CSLS top-k kernel (see topk_block_update)
TOPK_CHUNK = 64


def _auto_block_size(block_size: Any, n_cols: int, itemsize: int, xp: Any = np) -> int:
    """``block_size`` checked, or (None) chosen so ~3 score blocks of n_cols fit the memory budget:
    BLOCK_MEMORY on the CPU, DEVICE_BLOCK_MEMORY (at most a quarter of the free memory) on a GPU."""
    if block_size is None:
        budget = BLOCK_MEMORY
        if xp is not np:
            free = int(xp.cuda.Device().mem_info[0])
            budget = max(BLOCK_MEMORY, min(DEVICE_BLOCK_MEMORY, free // 4))
        return int(min(4096, max(64, budget // (3 * n_cols * itemsize))))
    return check_int(block_size, "block_size")


def _check_embedding_pair(A: Any, B: Any, name_a: str, name_b: str, ns) -> tuple[Any, Any]:
    """Validate two embedding matrices of the same dimension; return them in a common dtype."""
    A = _check_embeddings(A, name_a, ns)
    B = _check_embeddings(B, name_b, ns)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"{name_b} have dimension {B.shape[1]} but {name_a} have dimension {A.shape[1]}")
    dtype = np.result_type(A.dtype, B.dtype)
    return A.astype(dtype, copy=False), B.astype(dtype, copy=False)


def _check_embeddings(X: Any, name: str, ns) -> Any:
    """Return ``X`` as a finite 2-D float32/float64 array of the namespace ``ns``."""
    xp = ns.xp
    refuse_sparse(X, name)
    refuse_texts_as_vectors(X, name)
    X = xp.asarray(X)
    if X.dtype == object or X.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be a real numeric array, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, d), got {X.ndim}-D with shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {X.shape}")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    finite = xp.isfinite(X)
    if not bool(xp.all(finite)):
        raise ValueError(f"{name} contains {int(X.size - xp.sum(finite))} non-finite value(s) (NaN or inf)")
    return X


def _check_ks(ks: Any) -> tuple[int, ...]:
    if isinstance(ks, (int, np.integer)) and not isinstance(ks, bool):
        ks = (ks,)
    try:
        ks = tuple(ks)
    except TypeError as exc:
        raise TypeError(f"ks must be a sequence of positive integers, got {ks!r}") from exc
    if not ks:
        raise ValueError("ks must contain at least one k")
    return tuple(check_int(k, "ks") for k in ks)


def _check_similarity(similarity: Any) -> str:
    if similarity not in _SIMILARITIES:
        raise ValueError(f"similarity must be one of {_SIMILARITIES}, got {similarity!r}")
    return similarity


# --------------------------------------------------------------------------- blocked kernels
def _normalize_rows(X: Any, xp) -> Any:
    """Rows scaled to unit L2 norm, in a new array; zero rows stay zero (so their cosine with
    anything is 0). A finite row whose sum of squares overflows or underflows its dtype is first
    divided by its largest absolute entry, so it keeps its direction instead of becoming zero
    (or staying unnormalised); the other rows are divided by their norm alone. Also the last
    step of :class:`linxling.search.Index`'s input check."""
    with np.errstate(over="ignore", under="ignore"):
        norms = xp.linalg.norm(X, axis=1)
    Xn = X.copy()
    # below sqrt(tiny) every square of the row is subnormal or zero: precision lost, or none left
    far = xp.flatnonzero(~xp.isfinite(norms) | (norms < float(xp.finfo(X.dtype).tiny) ** 0.5))
    if far.size:                                  # zero rows too: their largest entry is 0, kept
        top = xp.max(xp.abs(Xn[far]), axis=1, keepdims=True)
        Xn[far] = Xn[far] / xp.where(top > 0, top, xp.ones_like(top))
        norms[far] = xp.linalg.norm(Xn[far], axis=1)
    Xn /= xp.where(norms > 0, norms, xp.ones_like(norms))[:, None]
    return Xn


def _csls_radii(An: Any, Bn: Any, knn: int, block_size: int, xp, show_progress=None) -> tuple[Any, Any]:
    """Mean cosine of each row of ``An`` to its ``knn`` nearest rows of ``Bn`` and vice versa.

    One blocked pass over row blocks of ``An``: each block ``S = An[b] @ Bn.T`` gives ``r_A``
    for the block directly (row-wise top ``knn``, :func:`_top_k_desc`) and is merged into a
    running top-``knn`` buffer per column for ``r_B``. Memory is O((block_size + 2 knn) * n_B).

    Parameters
    ----------
    An : array, shape (n_A, d)
        Row-normalised vectors.
    Bn : array, shape (n_B, d)
        Row-normalised vectors.
    knn : int
        ``1 <= knn <= min(n_A, n_B)``.

    Returns
    -------
    r_A : array, shape (n_A,)
    r_B : array, shape (n_B,)
    """
    n_a = An.shape[0]
    if xp is np:
        return _csls_radii_numpy(An, Bn, knn, block_size, show_progress)
    r_a = xp.empty(n_a, dtype=An.dtype)
    top_b = None  # (n_b, knn): running largest similarities of each B row to the A rows seen, largest first
    starts = range(0, n_a, block_size)
    for start in progress(starts, show=show_progress, desc="CSLS radii", total=len(starts), delay=1.0):
        stop = min(start + block_size, n_a)
        S = An[start:stop] @ Bn.T
        top_a, where = _top_k_desc(S, knn, xp)
        r_a[start:stop] = xp.mean(top_a, axis=1)
        S[xp.arange(S.shape[0])[:, None], where] = top_a    # put back what the row pass took
        cols, _ = _top_k_desc(S.T, min(knn, S.shape[0]), xp)
        if top_b is not None:
            merged = xp.concatenate([top_b, cols], axis=1)
            cols, _ = _top_k_desc(merged, min(knn, merged.shape[1]), xp)
        top_b = cols
    r_b = xp.mean(top_b, axis=1)
    return r_a, r_b


def _top_k_desc(S: Any, k: int, xp) -> tuple[Any, Any]:
    """The ``k`` largest entries of each row of ``S``, largest first, and where they were.

    ``k`` passes of a row-wise argmax, each taking its maximum out (``-inf`` in its place: ``S``
    is overwritten). On a GPU this reads ``S`` ``k`` times at the device's bandwidth, where
    CuPy's ``partition`` of long rows costs a sort (issue #28's CSLS row: 38 s at 200,000²
    before, on an H200). Ties are taken one per pass, so the values are those of a sort.
    """
    rows = xp.arange(S.shape[0])
    vals = xp.empty((S.shape[0], k), dtype=S.dtype)
    where = xp.empty((S.shape[0], k), dtype=xp.int64)
    for j in range(k):
        i = xp.argmax(S, axis=1)
        where[:, j] = i
        vals[:, j] = S[rows, i]
        S[rows, i] = -xp.inf
    return vals, where


def _csls_radii_numpy(An: np.ndarray, Bn: np.ndarray, knn: int, block_size: int,
                      show_progress=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_csls_radii` on the CPU: one GEMM per block, both top-k's from one read of it.

    :func:`linxling.kernels.retrieval.topk_block_update` keeps each column's ``knn`` largest
    scores in a running buffer and each row's per thread range of columns; the ranges' row
    buffers are merged here. Memory is O(block_size * n_B + knn * (threads * block_size + n_B)).
    """
    import numba

    from linxling.kernels.retrieval import topk_block_update
    n_a, n_b = An.shape[0], Bn.shape[0]
    dtype = An.dtype
    r_a = np.empty(n_a, dtype=dtype)
    # thread ranges of at least TOPK_CHUNK columns each
    nparts = max(1, min(numba.get_num_threads(), n_b // TOPK_CHUNK))
    row_part = np.empty((nparts, min(block_size, n_a), knn), dtype=dtype)
    top_b = np.full((n_b, knn), -np.inf, dtype=dtype)
    thr = np.full(n_b, -np.inf, dtype=dtype)
    amin = np.zeros(n_b, dtype=np.int64)
    BnT = Bn.T
    starts = range(0, n_a, block_size)
    for start in progress(starts, show=show_progress, desc="CSLS radii", total=len(starts), delay=1.0):
        stop = min(start + block_size, n_a)
        S = An[start:stop] @ BnT
        # one column range (fewer than 2 TOPK_CHUNK columns, e.g. a search's few queries): the
        # kernel runs on this thread, without a parallel launch that waits for every numba thread
        with numba_one_thread(nparts == 1):
            topk_block_update(S, row_part, top_b, thr, amin, TOPK_CHUNK)   # the whole buffer: one
        part = row_part[:, :stop - start]                              # compiled signature
        # each row's knn largest of its ranges' knn largest, summed largest first (as sorted)
        top = np.sort(part.transpose(1, 0, 2).reshape(stop - start, nparts * knn), axis=1)[:, -knn:]
        r_a[start:stop] = np.mean(top[:, ::-1], axis=1)
    top_b.sort(axis=1)
    return r_a, np.mean(top_b[:, ::-1], axis=1)


def _has_direction(Xn: Any, xp) -> Any:
    """Rows of a row-normalised matrix that have a direction (are not all zero)."""
    return xp.any(Xn != 0, axis=1)


def _warn_tied_candidates(Cn: Any, xp, who: str = "retrieval", what: str = "candidates") -> None:
    """Warn when half of the candidates (with a direction) or more share their direction with
    another: ties count in the gold's favour, so vectors that collapsed to a few directions (a
    degenerate model, one text repeated) score as a good model would (all candidates one vector:
    P@1 1.0)."""
    if xp is not np:
        return
    C = Cn[np.any(Cn != 0, axis=1)]
    n = C.shape[0]
    if n < 4:
        return
    k = n_distinct_rows(C, n // 2 + 1)
    if k is not None and k <= n // 2:
        warnings.warn(f"{who}: the {n} {what} have only {k} distinct direction{'' if k == 1 else 's'} "
                      "(vectors collapsed, or one text repeated); a gold candidate tied with others ranks "
                      "first, so P@k and the MRR overstate such a model", UserWarning, stacklevel=find_stack_level())


def _blocked_ranks(Qn: Any, Cn: Any, rows: Any, cols: Any, r_q: Any, r_c: Any, block_size: int, xp,
                   show_progress=None) -> Any:
    """Rank of the best-scoring gold candidate of every query, computed in row blocks.

    ``rows``/``cols`` (sorted by ``rows``) list the gold (query, candidate) pairs; every query
    must have at least one. The score is ``Qn @ Cn.T`` (cosine) or, when ``r_q``/``r_c`` are
    given, ``2 cos - r_q[:, None] - r_c[None, :]`` (CSLS). Rank = 1 + number of candidates with
    a score strictly greater than the best gold score. A gold pair whose query or candidate has
    no direction (an all-zero row) can never be a hit: a query left without any such pair gets
    rank ``n_c + 1``, after every candidate (see :func:`_summarise`).

    Returns
    -------
    ranks : array of int64, shape (n_q,)
    """
    n_q = Qn.shape[0]
    ranks = xp.empty(n_q, dtype=xp.int64)
    q_ok, c_ok = _has_direction(Qn, xp), _has_direction(Cn, xp)
    bounds = xp.searchsorted(rows, xp.arange(0, n_q + block_size, block_size))
    bounds = [int(b) for b in to_numpy(bounds)]
    starts = list(range(0, n_q, block_size))
    for i, start in enumerate(progress(starts, show=show_progress, desc="ranking", total=len(starts), delay=1.0)):
        stop = min(start + block_size, n_q)
        S = Qn[start:stop] @ Cn.T
        fused = r_q is not None and xp is np   # CSLS counted by a kernel, scores never written
        if r_q is not None and not fused:  # CSLS, in place: 2 cos - r_q - r_c
            S *= 2
            S -= r_q[start:stop, None]
            S -= r_c[None, :]
        lo, hi = bounds[i], bounds[i + 1]
        local, gold_cols = rows[lo:hi] - start, cols[lo:hi]
        vals = S[local, gold_cols]
        if fused:  # the same operations, in the same order, as the in-place branch
            vals = (2 * vals - r_q[rows[lo:hi]]) - r_c[gold_cols]
        vals = xp.where(q_ok[rows[lo:hi]] & c_ok[gold_cols], vals, -xp.inf)
        if hi - lo == stop - start:  # one gold per query
            best = vals
        else:  # best gold score per query: sort by (row, value), take each row's last entry
            order = xp.lexsort(xp.stack([vals, local.astype(vals.dtype)]))
            srt = local[order]
            last = xp.concatenate([srt[1:] != srt[:-1], xp.ones(1, dtype=bool)])
            best = vals[order][last]
        if xp is np:    # counted by a kernel: no boolean block (nor CSLS scores) written
            from linxling.kernels.retrieval import count_greater, csls_count_greater
            count = np.empty(stop - start, dtype=np.int64)
            best = best.astype(S.dtype, copy=False)
            if fused:
                csls_count_greater(S, r_q[start:stop], r_c, best, count)
            else:
                count_greater(S, best, count)
            ranks[start:stop] = 1 + count
        else:
            ranks[start:stop] = 1 + xp.count_nonzero(S > best[:, None], axis=1)
    return ranks


def _summarise(ranks: Any, ks: Sequence[int], xp, n_candidates: int) -> dict:
    """P@k and MRR; rank ``n_candidates + 1`` is a miss (no direction) at every k, 0 in the MRR."""
    hit = ranks <= n_candidates
    out = {f"P@{k}": float(xp.mean(hit & (ranks <= k))) for k in ks}
    out["MRR"] = float(xp.mean(xp.where(hit, 1.0 / ranks, 0.0)))
    return out


# --------------------------------------------------------------------------- public
@numba_serialised
def retrieval(queries: Any, candidates: Any, gold: Any = None, ks: Sequence[int] = (1, 5, 10),
              similarity: str = "cosine", knn: int = 10, block_size: int | None = None, *,
              return_ranks: bool = False, show_progress: bool | None = None) -> dict:
    """Precision at k and mean reciprocal rank of retrieving each query's gold candidate.

    Scores are computed in blocks of ``block_size`` query rows, so memory is
    O(block_size * n_c + (n_q + n_c) * d): a 200,000 x 200,000 similarity matrix is never built.

    Parameters
    ----------
    queries : array, shape (n_q, d)
        Query embeddings (NumPy or CuPy, float32/float64; other real dtypes become float64).
    candidates : array, shape (n_c, d)
        Candidate embeddings, same array library as ``queries``.
    gold : array of int, shape (n_q,), optional
        ``gold[i]`` is the index into ``candidates`` of the correct answer for query ``i``.
        Default ``gold[i] = i`` (parallel data), which requires ``n_c >= n_q``.
    ks : sequence of int
        Cut-offs for precision at k (each ``>= 1``).
    similarity : {"cosine", "csls"}
        ``"cosine"``, or cross-domain similarity local scaling as in MUSE (Conneau et al. 2018):
        ``score(q, c) = 2 cos(q, c) - r_q - r_c`` with ``r_q`` the mean cosine of ``q`` to its
        ``knn`` nearest candidates and ``r_c`` the mean cosine of ``c`` to its ``knn`` nearest
        queries. Zero vectors have cosine 0 with everything.
    knn : int
        Neighbourhood size for CSLS, ``1 <= knn <= min(n_q, n_c)`` (only checked for CSLS).
    block_size : int, optional
        Number of query rows scored at a time. Default: as many as keep the score block and its
        temporaries (about 3 x block_size x n_c numbers) under 512 MiB, between 64 and 4096
        rows (about 220 rows for 200,000 float32 candidates). With CuPy arrays the budget is
        6 GiB or a quarter of the free device memory, whichever is less (about 2,700 rows at
        that size): fewer, larger kernel launches (measured on an H200, 200,000² CSLS: 21.7 s
        at 223-row blocks, 4.5 s at 2,048).
    return_ranks : bool
        Also return the per-query ranks under key ``"ranks"``.
    show_progress : bool, optional
        Progress bar over blocks; ``None`` follows :func:`linxling.set_show_progress`.

    Returns
    -------
    dict
        ``"P@k"`` for each ``k`` in ``ks`` and ``"MRR"`` (Python floats);
        ``"n_zero_queries"`` / ``"n_zero_candidates"``: how many rows had no direction (all
        zero, e.g. an empty or out-of-vocabulary text); with ``return_ranks`` also ``"ranks"``:
        NumPy int64 array, shape (n_q,). The rank of query ``i`` is 1 + the number of candidates
        scoring *strictly* higher than ``gold[i]`` (ties favour the gold candidate: a
        ``UserWarning`` says when half of the candidates or more share their direction with
        another, as the vectors of a collapsed model do, which would otherwise score P@1 1.0).
        ``P@k = mean(rank <= k)``, ``MRR = mean(1 / rank)``. A query without a direction, or
        whose gold candidate has none, can never be a hit: its rank is ``n_c + 1``, it counts
        as a miss at every k and adds 0 to the MRR.

    Raises
    ------
    ValueError
        Non-finite values, empty or non-2-D inputs, dimension mismatch, bad ``gold``
        (length, range), ``k < 1``, ``knn`` out of range, ``block_size < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.eye(3)
    >>> retrieval(X, X, ks=(1,))
    {'P@1': 1.0, 'MRR': 1.0, 'n_zero_queries': 0, 'n_zero_candidates': 0}
    """
    ns = get_namespace(queries, candidates)
    xp = ns.xp
    Q, C = _check_embedding_pair(queries, candidates, "queries", "candidates", ns)
    n_q, n_c = Q.shape[0], C.shape[0]
    ks = _check_ks(ks)
    similarity = _check_similarity(similarity)
    block_size = _auto_block_size(block_size, max(C.shape[0], 1), C.dtype.itemsize, xp)
    if similarity == "csls":
        knn = check_int(knn, "knn", high=min(n_q, n_c), what=" (min(n_queries, n_candidates))")
    if gold is None:
        if n_c < n_q:
            raise ValueError(f"gold=None means gold[i] = i, which needs at least as many candidates as "
                             f"queries; got {n_q} queries and {n_c} candidates")
        cols = xp.arange(n_q, dtype=xp.int64)
    else:
        cols = xp.asarray(gold)
        if cols.ndim != 1 or cols.shape[0] != n_q:
            raise ValueError(f"gold must have shape ({n_q},) (one index per query), got shape {cols.shape}")
        if cols.dtype.kind not in "iu":
            if cols.dtype.kind == "f" and bool(xp.all(xp.isfinite(cols))) and bool(xp.all(cols == xp.round(cols))):
                pass
            else:
                raise TypeError(f"gold must hold integer indices, got dtype {cols.dtype}")
        cols = cols.astype(xp.int64)
        bad = (cols < 0) | (cols >= n_c)
        if bool(xp.any(bad)):
            raise ValueError(f"gold has {int(xp.sum(bad))} index(es) out of range [0, {n_c}) "
                             f"(n_candidates={n_c})")
    rows = xp.arange(n_q, dtype=xp.int64)

    Qn, Cn = _normalize_rows(Q, xp), _normalize_rows(C, xp)
    _warn_tied_candidates(Cn, xp)
    r_q = r_c = None
    if similarity == "csls":
        r_q, r_c = _csls_radii(Qn, Cn, knn, block_size, xp, show_progress)
    ranks = _blocked_ranks(Qn, Cn, rows, cols, r_q, r_c, block_size, xp, show_progress)
    out = _summarise(ranks, ks, xp, n_c)
    out["n_zero_queries"] = n_q - int(xp.count_nonzero(_has_direction(Qn, xp)))
    out["n_zero_candidates"] = n_c - int(xp.count_nonzero(_has_direction(Cn, xp)))
    if return_ranks:
        out["ranks"] = np.asarray(to_numpy(ranks))
    return out
