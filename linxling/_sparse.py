"""Index helpers shared by the sparse paths (plain NumPy: no numba import)."""
from __future__ import annotations

import numpy as np

__all__ = ["used_columns", "renumbered"]


def used_columns(indices: np.ndarray, n: int) -> np.ndarray:
    """The distinct values of ``indices`` (column numbers below ``n``), sorted, as int64."""
    used = np.zeros(n, dtype=bool)
    used[indices] = True
    return np.flatnonzero(used)


def renumbered(indices: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """``indices`` (each a value of the sorted ``cols``, all below ``n``) replaced by their
    positions in ``cols``, in ``indices``' dtype: the column numbers of a matrix cut down to
    the columns ``cols``. Order and duplicates are kept."""
    remap = np.zeros(n, dtype=indices.dtype)
    remap[cols] = np.arange(cols.size, dtype=indices.dtype)
    return remap[indices]
