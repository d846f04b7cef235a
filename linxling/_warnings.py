"""Where a linxling warning points: the user's line, however deep inside linxling it was raised.

``warnings.warn(msg, category, stacklevel=find_stack_level())`` names the first frame outside the
linxling package (as pandas does), so a warning raised in a fit points at the user's ``fit`` call
whether the fit went through the estimator's atomic wrapper, a base class or a helper.
"""
from __future__ import annotations

import inspect
import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def find_stack_level() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called from the caller of this function that
    points at the first frame outside linxling (counting the caller's frame as 1)."""
    frame = inspect.currentframe()
    inside = 0                       # linxling's frames from the one calling warnings.warn outwards
    try:
        frame = frame.f_back if frame is not None else None     # the function calling warnings.warn
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            frame = frame.f_back
            inside += 1
    finally:
        del frame
    return inside + 1                # the first frame outside
