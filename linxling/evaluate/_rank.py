"""Etter's exact rank (Algorithm 1) and estimated rank (Algorithm 2) of aligned pairs.

Etter (2009), Sec. 4.2.4: the rank of pair ``i`` is ``k`` when ``targets[i]`` is the ``k``-th
best-scoring target for ``queries[i]`` among all ``N`` targets. Algorithm 2 replaces the ``N``
candidates by ``M`` drawn uniformly at random (with replacement, from all ``N`` targets, ``i``
included) and counts the pairs whose true target beats all ``M`` random ones.

Scores: ``"dot"`` (higher is better), ``"cosine"`` (higher is better) and ``"l1"`` (the L1
distance, lower is better). Ties: a candidate counts ahead of the true target only when it is
*strictly* better (the optimistic rank); Algorithm 1 leaves tie order to its sort.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from linxling._backend import get_namespace
from linxling._validation import check_random_state
from linxling.evaluate._retrieval import _check_embeddings

__all__ = ["SCORES", "RankEstimate", "estimated_rank", "exact_rank"]

SCORES = ("dot", "l1", "cosine")
_BLOCK_MEMORY = 256 * 2 ** 20


def _check_score(score: Any) -> str:
    if not isinstance(score, str) or score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    return score


def _check_pair(queries: Any, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    ns = get_namespace()  # NumPy: the rank kernels are NumPy-only
    Q = _check_embeddings(queries, "queries", ns)
    T = _check_embeddings(targets, "targets", ns)
    if Q.shape != T.shape:
        raise ValueError(f"queries and targets must have the same shape (row i of one aligned with "
                         f"row i of the other), got {Q.shape} and {T.shape}")
    dtype = np.result_type(Q.dtype, T.dtype)
    return Q.astype(dtype, copy=False), T.astype(dtype, copy=False)


def _normalise(X: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    zero = np.flatnonzero(norms[:, 0] == 0)
    if zero.size:
        shown = ", ".join(map(str, zero[:10].tolist())) + (", ..." if zero.size > 10 else "")
        raise ValueError(f"cosine score: {name} has {zero.size} all-zero row(s) (row {shown}); their "
                         f"cosine is undefined (use score='dot' or 'l1', or drop those pairs)")
    return X / norms


def _goodness(Q: np.ndarray, T: np.ndarray, score: str) -> np.ndarray:
    """Score matrix ``(len(Q), len(T))`` where larger is better (L1 distances negated)."""
    if score == "l1":
        return -np.abs(Q[:, None, :] - T[None, :, :]).sum(axis=2)
    return Q @ T.T


def _pair_goodness(Q: np.ndarray, T: np.ndarray, score: str) -> np.ndarray:
    """Row-wise score of (Q[i], T[i]), larger is better (same reduction as the candidates')."""
    if score == "l1":
        return -np.abs(Q - T).sum(axis=1)
    return (Q * T).sum(axis=1)


def _block_rows(n_cols: int, d: int, score: str, itemsize: int, block_size: Any) -> int:
    if block_size is not None:
        if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        return int(block_size)
    per_row = n_cols * itemsize * (d if score == "l1" else 1) * 3
    return int(max(1, min(4096, _BLOCK_MEMORY // max(per_row, 1))))


def exact_rank(queries: Any, targets: Any, score: str = "dot", *, block_size: int | None = None
               ) -> np.ndarray:
    """Exact rank of every aligned pair (Etter 2009, Algorithm 1), computed in row blocks.

    ``rank[i] = 1 + #{j : score(queries[i], targets[j]) strictly better than score(queries[i],
    targets[i])}``; 1 is perfect. Returns an int64 array of length ``N``; ``ranks.mean()`` is
    Etter's average rank. Memory per block is bounded (``block_size`` query rows at a time).
    """
    score = _check_score(score)
    Q, T = _check_pair(queries, targets)
    if score == "cosine":
        Q, T = _normalise(Q, "queries"), _normalise(T, "targets")
    n, d = Q.shape
    true = _pair_goodness(Q, T, score)
    b = _block_rows(n, d, score, Q.itemsize, block_size)
    ranks = np.empty(n, dtype=np.int64)
    for s in range(0, n, b):
        e = min(n, s + b)
        rows = np.arange(e - s)
        if score == "l1":
            # inner blocking over targets too, so the (b, n_t, d) tensor stays small
            count = np.zeros(e - s, dtype=np.int64)
            tb = max(1, _BLOCK_MEMORY // max(1, (e - s) * d * Q.itemsize * 3))
            t_true = true[s:e]
            for ts in range(0, n, tb):
                G = _goodness(Q[s:e], T[ts:ts + tb], score)
                better = G > t_true[:, None]
                own = rows + s - ts                       # column of the true target, if here
                inside = (own >= 0) & (own < G.shape[1])
                better[rows[inside], own[inside]] = False
                count += better.sum(axis=1)
        else:
            G = _goodness(Q[s:e], T, score)
            # the true score from the same product as the candidates' (same rounding)
            t_true = G[rows, rows + s]
            count = (G > t_true[:, None]).sum(axis=1)
        ranks[s:e] = 1 + count
    return ranks


@dataclass(frozen=True)
class RankEstimate:
    """Result of :func:`estimated_rank`.

    ``accuracy`` is Algorithm 2's estimator: the fraction of pairs whose true target beats all
    ``M`` random candidates (Etter's "performance", P(w) for M = 1). ``mean_rank`` is the
    unbiased estimate of the exact average rank: ``1 + beaten / M``, where ``beaten`` counts the
    (pair, candidate) draws strictly better than the true target; since candidates are drawn
    uniformly from all ``N`` targets, a draw for pair ``i`` is better with probability
    ``(rank_i - 1) / N``, so ``E[beaten] / M = sum_i (rank_i - 1) / N = mean(rank) - 1``.
    """
    accuracy: float
    mean_rank: float
    n_pairs: int
    n_candidates: int


def estimated_rank(queries: Any, targets: Any, score: str = "dot", *, n_candidates: int = 1,
                   random_state: Any = None, block_size: int | None = None) -> RankEstimate:
    """Etter's estimated rank (Algorithm 2): ``n_candidates`` (M) random targets per pair.

    Candidates are drawn uniformly with replacement from all ``N`` targets (the true one
    included, which never counts as better). Seeded by ``random_state`` (int, None or a
    ``numpy.random.Generator``); the draws do not depend on ``block_size``.
    """
    score = _check_score(score)
    Q, T = _check_pair(queries, targets)
    if isinstance(n_candidates, bool) or not isinstance(n_candidates, (int, np.integer)) or n_candidates < 1:
        raise ValueError(f"n_candidates must be a positive integer, got {n_candidates!r}")
    M = int(n_candidates)
    if score == "cosine":
        Q, T = _normalise(Q, "queries"), _normalise(T, "targets")
    rng = check_random_state(random_state)   # NumPy's own errors named no argument
    n, d = Q.shape
    cand = rng.integers(0, n, size=(n, M))
    true = _pair_goodness(Q, T, score)
    per_row = M * d * Q.itemsize * 3
    b = int(block_size) if block_size is not None else int(max(1, min(65536, _BLOCK_MEMORY // per_row)))
    if block_size is not None:
        _block_rows(n, d, score, Q.itemsize, block_size)
    beaten = 0
    all_further = 0
    for s in range(0, n, b):
        e = min(n, s + b)
        C = T[cand[s:e]]                        # (b, M, d)
        q = Q[s:e, None, :]
        if score == "l1":
            G = -np.abs(q - C).sum(axis=2)
        else:
            G = (q * C).sum(axis=2)
        better = G > true[s:e, None]
        better &= cand[s:e] != np.arange(s, e)[:, None]   # the true target never beats itself
        beaten += int(better.sum())
        all_further += int((~better.any(axis=1)).sum())
    return RankEstimate(accuracy=all_further / n, mean_rank=1.0 + beaten / M,
                        n_pairs=n, n_candidates=M)
