"""Memory budgets: one parser for every ``memory_budget`` argument, and the process's RSS."""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

__all__ = ["current_rss", "parse_budget"]

_UNITS = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
#: a size: a number, then K, M, G or T with an optional "B" or "iB" (any case), or "B" alone
_SIZE = re.compile(r"^\s*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|nan))"
                   r"\s*(?:([KMGT])(?:i?B)?|B)?\s*$", re.I)


def parse_budget(value: Any, name: str = "memory_budget") -> int | None:
    """``None``, or a number of bytes: a positive number or a size such as ``"12G"``, ``"12GiB"``,
    ``"800M"``, ``"512MB"``, ``"12 GB"`` (binary units). Anything else, or less than one byte, is
    a ValueError naming ``name``."""
    if value is None:
        return None
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m is None:
            raise ValueError(f"{name} must be None, a number of bytes or a size like '12G', got {value!r}")
        value = float(m.group(1)) * _UNITS.get((m.group(2) or "").upper(), 1)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not value > 0:
        raise ValueError(f"{name} must be None, a positive number of bytes or a size like '12G', got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number of bytes (None for no budget), got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least one byte, got {value!r}")
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
