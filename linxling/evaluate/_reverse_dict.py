"""Cross-lingual reverse dictionary retrieval (BilDRL, Chen et al. 2019, Sec. 4.1, Table 2).

For each query (the vector of a definition), every candidate word is scored, and the rank of
the gold target among the candidates is recorded: ``rank = #{candidates c : score(c) >= score(gold)}``
(ties count against the query, so a constant or zero query vector gets the worst rank, not the
best). Metrics over all queries: P@1, P@10 (proportion of ranks <= 10 -- the authors' tester
printed hits within the top 11 under that name; this is the top 10), and MRR. A gold target
that is not among the candidates (e.g. no vector in the embedding space) gets rank ``inf``
(reciprocal rank 0) and is counted in ``n_gold_missing``: it is a miss, not dropped.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from linxling._backend import get_namespace
from linxling._validation import check_int
from linxling.evaluate._retrieval import _check_embeddings, _check_ks

__all__ = ["reverse_dictionary"]


def _normalise(A: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(A, axis=1, keepdims=True)
    return A / np.where(n > 0, n, 1.0)


def reverse_dictionary(queries: Any, gold: Sequence[str], candidate_words: Sequence[str], candidate_vectors: Any,
                       *, metric: str = "cosine", ks: Sequence[int] = (1, 10),
                       block_size: int = 1024) -> dict:
    """Rank the gold target of each definition among the candidate words.

    Parameters
    ----------
    queries : array (n_queries, d)
        Definition vectors in the word space (e.g. ``BilDRL.transform``).
    gold : sequence of str, length n_queries
        The target word of each definition.
    candidate_words : sequence of str, length n_candidates (unique)
    candidate_vectors : array (n_candidates, d)
    metric : {"cosine", "euclidean"}
        Scores are cosine similarity or minus the Euclidean distance (the kNN of the ``L2`` loss).
    ks : ints
        Cut-offs of P@k.

    block_size : int, default 1024
        Query rows scored at a time (``>= 1``).

    Returns
    -------
    dict
        ``"p@k"`` for each k, ``"mrr"``, ``"ranks"`` (float array, ``inf`` for a missing gold),
        ``"n_queries"``, ``"n_gold_missing"``. The rank of a query is the number of candidates
        scoring *at least* as high as its gold word (ties count against the query, unlike
        :func:`retrieval`); ``p@k = mean(rank <= k)``, ``mrr = mean(1 / rank)``.

    Raises
    ------
    ValueError
        Empty, non-2-D or non-finite arrays, mismatched lengths or dimensions, duplicated
        candidate words, an unknown ``metric``, ``k < 1`` or ``block_size < 1``.
    TypeError
        ``gold`` or ``candidate_words`` given as a single string, or holding an item that is not a str.
    """
    ns = get_namespace()  # NumPy
    Q = np.asarray(_check_embeddings(np.asarray(queries), "queries", ns), dtype=np.float64)
    C = np.asarray(_check_embeddings(np.asarray(candidate_vectors), "candidate_vectors", ns), dtype=np.float64)
    if C.shape[1] != Q.shape[1]:
        raise ValueError(f"candidate_vectors must have shape (n_candidates, {Q.shape[1]}), got {C.shape}")
    for name, words in (("gold", gold), ("candidate_words", candidate_words)):
        if isinstance(words, (str, bytes)):   # a single string was read as its characters
            raise TypeError(f"{name} must be a sequence of words, not a single string")
    gold = list(gold)
    cands = list(candidate_words)
    for name, words in (("gold", gold), ("candidate_words", cands)):
        for i, w in enumerate(words):      # a non-str word matched no candidate: counted missing, in silence
            if not isinstance(w, str):
                raise TypeError(f"{name}[{i}] is a {type(w).__name__} ({w!r}), not a str (a word)")
    if len(gold) != Q.shape[0]:
        raise ValueError(f"gold has {len(gold)} items but queries has {Q.shape[0]} rows")
    if len(cands) != C.shape[0]:
        raise ValueError(f"candidate_words has {len(cands)} items but candidate_vectors {C.shape[0]} rows")
    if len(set(cands)) != len(cands):
        raise ValueError("candidate_words contains duplicates")
    if metric not in ("cosine", "euclidean"):
        raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")
    ks = _check_ks(ks)
    block_size = check_int(block_size, "block_size")
    index = {w: i for i, w in enumerate(cands)}
    gidx = np.array([index.get(g, -1) for g in gold], dtype=np.int64)
    if metric == "cosine":
        Q, C = _normalise(Q), _normalise(C)
    else:
        csq = (C * C).sum(axis=1)
    ranks = np.full(len(gold), np.inf)
    for s in range(0, Q.shape[0], block_size):
        q = Q[s:s + block_size]
        S = q @ C.T
        if metric == "euclidean":   # -||q - c||^2 up to the per-query constant ||q||^2
            S = 2.0 * S - csq[None, :]
        gi = gidx[s:s + block_size]
        ok = gi >= 0
        rows = np.flatnonzero(ok)
        gs = S[rows, gi[rows]]
        ranks[s + rows] = (S[rows] >= gs[:, None]).sum(axis=1)
    out: dict[str, Any] = {f"p@{k}": float(np.mean(ranks <= k)) for k in ks}
    out["mrr"] = float(np.mean(1.0 / ranks))
    out["ranks"] = ranks
    out["n_queries"] = len(gold)
    out["n_gold_missing"] = int((gidx < 0).sum())
    return out
