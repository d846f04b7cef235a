"""Crosslingual embedding estimators, loaded lazily.

Names are resolved on first access (module ``__getattr__``), so a model module that is
missing or fails to import does not break ``import linxling.models`` or the other models.
:func:`_import_all` imports every model module that exists (each registers its classes with the
model store); :func:`load` (``linxling.load``) calls it before reading a file, so the store
(:mod:`linxling.io`) never imports the models.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from linxling._registry import MODELS as _REGISTRY

if TYPE_CHECKING:   # what editors and type checkers see; at run time the names load lazily
    from linxling.models._single_block import SingleBlock as SingleBlock
    from linxling.models.bicvm import BiCVM as BiCVM
    from linxling.models.bilbowa import BilBOWA as BilBOWA
    from linxling.models.bildrl import BilDRL as BilDRL
    from linxling.models.cllsi import CLLSI as CLLSI
    from linxling.models.compress_tree import CompressTree as CompressTree
    from linxling.models.cr5 import Cr5 as Cr5
    from linxling.models.gloss_space import GlossSpace as GlossSpace
    from linxling.models.ranking import RankingEmbedding as RankingEmbedding
    from linxling.models.wmf import WMF as WMF
    from linxling.models.wmf import BilingualWMF as BilingualWMF
    from linxling.models.xwmf import CrossWMF as CrossWMF

#: class name -> module, from the registry (linxling/_registry.py)
_LAZY = {e.name: e.module for e in _REGISTRY}
_MODULES = tuple(dict.fromkeys(e.module for e in _REGISTRY))

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'linxling.models' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def load(path):
    """Load any saved linxling model or search index (:class:`linxling.search.Index`, written by
    ``linxling index``): registers every built-in model and the index, then :func:`linxling.io.load`."""
    from linxling.io import load as _load  # lazy: ``import linxling.models`` stays free of h5py
    _import_all()
    importlib.import_module("linxling.search")   # registers "SearchIndex" (not a model of the registry)
    return _load(path)


def _import_all() -> list[str]:
    """Import every model module that exists (registering its classes); return their names.

    Modules that are not present are skipped; a module that exists but fails to import
    raises, so a broken model is not hidden.
    """
    imported = []
    for mod in _MODULES:
        if importlib.util.find_spec(mod) is None:
            continue
        importlib.import_module(mod)
        imported.append(mod)
    return imported
