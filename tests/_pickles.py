"""A model as a pickle written before some of its parameters existed would give it back."""
from __future__ import annotations

import pickle
from typing import Any


def unpickled_without(model: Any, *names: str) -> Any:
    """``model`` pickled and unpickled with the attributes ``names`` missing from its state, as
    an object saved by an earlier version, whose class had no such parameters, comes back."""
    state = {k: v for k, v in model.__dict__.items() if k not in names}
    old = type(model).__new__(type(model))
    old.__dict__.update(state)
    return pickle.loads(pickle.dumps(old))
