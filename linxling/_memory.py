"""Memory budgets: one parser for every ``memory_budget`` argument, and the process's RSS."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["current_rss", "parse_budget"]

_UNITS = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def parse_budget(value: Any, name: str = "memory_budget") -> int | None:
    """``None``, or a number of bytes: a positive number or a size such as ``"12G"``, ``"12GiB"``,
    ``"800M"``, ``"512MB"`` (binary units). Anything else is a ValueError naming ``name``."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().upper().replace("IB", "").rstrip("B")
        try:
            number = float(text[:-1]) * _UNITS[text[-1]] if text and text[-1] in _UNITS else float(text)
        except (ValueError, KeyError):
            raise ValueError(f"{name} must be None, a number of bytes or a size like '12G', got {value!r}") from None
        value = number
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not value > 0:
        raise ValueError(f"{name} must be None, a positive number of bytes or a size like '12G', got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number of bytes (None for no budget), got {value!r}")
    return int(value)


def current_rss() -> int:
    """Resident memory of this process in bytes (0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def row_ranges_by_nnz(indptr: np.ndarray, max_nnz: int) -> list[tuple[int, int]]:
    """Consecutive row ranges of a CSR matrix (its ``indptr``) holding at most ``max_nnz``
    nonzeros each, at least one row each (a longer row gets a range of its own)."""
    max_nnz = max(1, int(max_nnz))
    n = len(indptr) - 1
    ranges, start = [], 0
    while start < n:
        stop = int(np.searchsorted(indptr, indptr[start] + max_nnz, side="right")) - 1
        stop = min(n, max(stop, start + 1))
        ranges.append((start, stop))
        start = stop
    return ranges
