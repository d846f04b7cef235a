"""Semantic textual similarity (STS) evaluation: cosine of paired embeddings vs gold scores."""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.stats

from linxling._backend import get_namespace, to_numpy
from linxling.evaluate._retrieval import _check_embeddings, _has_direction, _normalize_rows

__all__ = ["sts", "read_sts"]

# read_sts lives with the data loaders (linxling.datasets); re-exported here for compatibility
from linxling.datasets.shared import read_sts  # noqa: E402


def sts(emb1: Any, emb2: Any, gold: Any, centre: bool = False) -> dict:
    """Pearson and Spearman correlation between paired cosine similarities and gold scores.

    Parameters
    ----------
    emb1, emb2 : array, shape (n, d)
        Embeddings of the first and second sentence of each pair (NumPy or CuPy).
    gold : array-like, shape (n,)
        Gold similarity scores.
    centre : bool, default False
        Subtract from each side its mean embedding (over its non-zero rows) before the
        cosines. In a crosslingual space each language's sentence vectors share an offset (the
        language's mean direction, plus the common direction of frequent words) that adds the
        same amount to every cosine and hides the differences STS measures; removing each side's
        mean is the "language-specific centring" of Libovický et al. (2020, *On the Language
        Neutrality of Pre-trained Multilingual Representations*). It reads no gold score. On
        the Bible-trained leaderboard spaces it lifts the crosslingual STS 2017 Pearson of every
        method (benchmarks/README.md); ``False`` is the plain protocol.

    Returns
    -------
    dict
        ``pearson``, ``spearman`` (floats, via :mod:`scipy.stats`), ``n`` (pairs) and
        ``n_zero`` (pairs where either embedding is the zero vector; their cosine is taken
        as 0 and they are included in the correlations). When the cosines or the gold scores
        are all equal (e.g. every pair has a zero embedding) the correlations are undefined:
        they are NaN, with SciPy's ``ConstantInputWarning``.

    Raises
    ------
    ValueError
        Shape mismatches, fewer than 2 pairs, non-finite values.
    """
    if not isinstance(centre, (bool, np.bool_)):
        raise TypeError(f"centre must be a bool, got {type(centre).__name__} {centre!r}")
    ns = get_namespace(emb1, emb2)
    xp = ns.xp
    A = _check_embeddings(emb1, "emb1", ns)
    B = _check_embeddings(emb2, "emb2", ns)
    if A.shape != B.shape:
        raise ValueError(f"emb1 has shape {A.shape} but emb2 has shape {B.shape}; rows must be paired")
    try:
        g = np.asarray(to_numpy(gold), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"gold must hold numbers (the gold similarity scores): {exc}") from None
    if g.ndim != 1 or g.shape[0] != A.shape[0]:
        raise ValueError(f"gold must have shape ({A.shape[0]},), got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError(f"gold contains {int(np.sum(~np.isfinite(g)))} non-finite value(s)")
    if g.shape[0] < 2:
        raise ValueError(f"sts needs at least 2 pairs, got {g.shape[0]}")
    if np.all(g == g[0]):                    # a correlation with a constant is undefined (SciPy: NaN)
        raise ValueError(f"gold is constant (every score {g[0]:g}): the correlations with it are "
                         "undefined; pass the pairs' gold similarity scores")
    ka, kb = _has_direction(A, xp), _has_direction(B, xp)
    n_zero = int(to_numpy(xp.sum(~(ka & kb))))
    if centre:
        A, B = _centred(A, ka, xp), _centred(B, kb, xp)
    # unit rows (scaled first: no overflow); a zero row, or one equal to its side's mean, stays
    # zero and gets cosine 0
    cos = xp.sum(_normalize_rows(A, xp) * _normalize_rows(B, xp), axis=1)
    cos = np.asarray(to_numpy(cos), dtype=np.float64)
    return {"pearson": float(scipy.stats.pearsonr(cos, g)[0]),
            "spearman": float(scipy.stats.spearmanr(cos, g)[0]),
            "n": int(g.shape[0]),
            "n_zero": n_zero}


def _centred(X: Any, keep: Any, xp: Any) -> Any:
    """``X`` minus the mean of its non-zero rows ``keep`` (zero rows stay zero: no vector, no cosine)."""
    n_keep = int(to_numpy(xp.sum(keep)))
    if n_keep == 0:
        return X
    mean = xp.sum(X[keep], axis=0) / n_keep
    return xp.where(keep[:, None], X - mean[None, :], 0.0)
