"""Progress bars (tqdm) that the user can turn off globally or per call."""
from __future__ import annotations

import os
from typing import Iterable

from tqdm.auto import tqdm

# LINXLING_NO_PROGRESS: any value turns the bars off but the empty string and the usual words for
# "no" ("0", "false", "no", "off", in any case): LINXLING_NO_PROGRESS=false turned them off
_OFF_WORDS = ("", "0", "false", "no", "off")


def _shown_by_env(value: str | None) -> bool:
    return (value or "").strip().lower() in _OFF_WORDS


_STATE = {"show": _shown_by_env(os.environ.get("LINXLING_NO_PROGRESS"))}


def set_show_progress(show: bool) -> None:
    """Turn progress bars on or off for the whole process (``LINXLING_NO_PROGRESS=1`` does the same)."""
    _STATE["show"] = bool(show)


def progress(iterable: Iterable | None = None, *, show: bool | None = None, **kwargs):
    """A tqdm bar; ``show=None`` follows the global setting, ``False`` disables it."""
    enabled = _STATE["show"] if show is None else bool(show) and _STATE["show"]
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, disable=not enabled, **kwargs)
