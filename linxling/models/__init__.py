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

_LAZY = {
    "Cr5": "linxling.models.cr5",
    "CLLSI": "linxling.models.cllsi",
    "WMF": "linxling.models.wmf",
    "BilingualWMF": "linxling.models.wmf",
    "CrossWMF": "linxling.models.wmf",
    "CompressTree": "linxling.models.compress_tree",
    "BiCVM": "linxling.models.bicvm",
    "RankingEmbedding": "linxling.models.ranking",
    "BilDRL": "linxling.models.bildrl",
    "BilBOWA": "linxling.models.bilbowa",
    "GlossSpace": "linxling.models.gloss_space",
    "SingleBlock": "linxling.models._single_block",
}
_MODULES = ("linxling.models.cr5", "linxling.models.cllsi", "linxling.models.wmf",
            "linxling.models.compress_tree", "linxling.models.bicvm", "linxling.models.ranking",
            "linxling.models.bildrl",
            "linxling.models.bilbowa", "linxling.models.gloss_space",
            "linxling.models._single_block")

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
    """Load any saved linxling model: registers every built-in model, then :func:`linxling.io.load`."""
    from linxling.io import load as _load  # lazy: ``import linxling.models`` stays free of h5py
    _import_all()
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
