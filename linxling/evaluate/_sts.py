"""Semantic textual similarity (STS) evaluation: cosine of paired embeddings vs gold scores."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.stats

from linxling._backend import get_namespace, to_numpy
from linxling._validation import tsv_fields
from linxling.evaluate._retrieval import _check_embeddings

__all__ = ["sts", "read_sts"]


def read_sts(path: str | os.PathLike) -> tuple[np.ndarray, list[str], list[str]]:
    """Read an STS file with lines ``gold<TAB>sentence1<TAB>sentence2`` (e.g. SemEval-2017).

    ``path`` is taken as given (relative paths from the working directory). For the shared data
    folder use :func:`linxling.datasets.shared_data_dir`, which honours ``LINXLING_SHARED_DATA``
    from any working directory: ``read_sts(shared_data_dir() / "sts17" / "track4a.es-en.tsv")``
    (or :func:`linxling.datasets.load_sts17`).

    The columns' languages are per file, not in the order of the file name: in SemEval-2017's
    crosslingual tracks ``track2.ar-en`` and ``track4b.es-en`` have the **English** sentence
    first, ``track4a.es-en`` the Spanish one. Embed each column in its own language (reading
    track 2 as Arabic-then-English gives every pair a zero vector on one side).

    Returns
    -------
    gold : ndarray of float64, shape (n,)
    s1, s2 : list of str, length n

    Raises
    ------
    ValueError
        On a line without exactly 3 tab-separated fields or a non-numeric gold score.
    FileNotFoundError
        If ``path`` does not exist (the message names the shared data folder).
    """
    gold, s1, s2 = [], [], []
    if not os.path.isfile(path):
        from linxling.datasets import shared_data_dir
        raise FileNotFoundError(f"STS file not found: {os.fspath(path)} (relative to {os.getcwd()}); for the "
                                f"shared data use linxling.datasets.shared_data_dir() / 'sts17' / ..., "
                                f"currently {shared_data_dir()} (set LINXLING_SHARED_DATA)")
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = tsv_fields(line, 3, f"{os.fspath(path)}:{lineno}", "gold, sentence1, sentence2")
            try:
                gold.append(float(fields[0]))
            except ValueError as exc:
                raise ValueError(f"{os.fspath(path)}:{lineno}: gold score {fields[0]!r} is not a number") from exc
            s1.append(fields[1])
            s2.append(fields[2])
    return np.asarray(gold, dtype=np.float64), s1, s2


def sts(emb1: Any, emb2: Any, gold: Any) -> dict:
    """Pearson and Spearman correlation between paired cosine similarities and gold scores.

    Parameters
    ----------
    emb1, emb2 : array, shape (n, d)
        Embeddings of the first and second sentence of each pair (NumPy or CuPy).
    gold : array-like, shape (n,)
        Gold similarity scores.

    Returns
    -------
    dict
        ``pearson``, ``spearman`` (floats, via :mod:`scipy.stats`), ``n`` (pairs) and
        ``n_zero`` (pairs where either embedding is the zero vector; their cosine is taken
        as 0 and they are included in the correlations).

    Raises
    ------
    ValueError
        Shape mismatches, fewer than 2 pairs, non-finite values.
    """
    ns = get_namespace(emb1, emb2)
    xp = ns.xp
    A = _check_embeddings(emb1, "emb1", ns)
    B = _check_embeddings(emb2, "emb2", ns)
    if A.shape != B.shape:
        raise ValueError(f"emb1 has shape {A.shape} but emb2 has shape {B.shape}; rows must be paired")
    g = np.asarray(to_numpy(gold), dtype=np.float64)
    if g.ndim != 1 or g.shape[0] != A.shape[0]:
        raise ValueError(f"gold must have shape ({A.shape[0]},), got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError(f"gold contains {int(np.sum(~np.isfinite(g)))} non-finite value(s)")
    if g.shape[0] < 2:
        raise ValueError(f"sts needs at least 2 pairs, got {g.shape[0]}")
    na, nb = xp.linalg.norm(A, axis=1), xp.linalg.norm(B, axis=1)
    zero = (na == 0) | (nb == 0)
    denom = xp.where(zero, xp.ones_like(na), na * nb)
    cos = xp.where(zero, 0.0, xp.sum(A * B, axis=1) / denom)
    cos = np.asarray(to_numpy(cos), dtype=np.float64)
    return {"pearson": float(scipy.stats.pearsonr(cos, g)[0]),
            "spearman": float(scipy.stats.spearmanr(cos, g)[0]),
            "n": int(g.shape[0]),
            "n_zero": int(to_numpy(xp.sum(zero)))}
