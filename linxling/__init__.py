"""linxling: scalable sparse linear algebra for crosslingual text embeddings.

The public API is loaded lazily (submodules are imported on first attribute access), so
``import linxling`` is cheap and never imports numba kernels, dask or cupy by itself.

Estimators
    :class:`Cr5` (reduced-rank ridge regression, Josifoski et al. 2019),
    :class:`WMF`, :class:`BilingualWMF`, :class:`CrossWMF` (Aldarmaki & Diab 2016),
    :class:`CLLSI` (crosslingual LSI baseline),
    :class:`BilDRL` (bilingual dictionary encoders, Chen et al. 2019).
Store
    :func:`load` reads any saved model; each estimator has ``save(path)``.
"""
from __future__ import annotations

import importlib

from linxling._version import __version__

_MODELS = ("Cr5", "CLLSI", "WMF", "BilingualWMF", "CrossWMF", "CompressTree", "BiCVM",
           "RankingEmbedding", "BilDRL",
           "BilBOWA", "GlossSpace")   # resolved by linxling.models
_LAZY = {
    **{name: "linxling.models" for name in _MODELS},
    "load": "linxling.models",          # registers the built-in models, then linxling.io.load
    "save": "linxling.io",
    "TfidfVectorizer": "linxling.text",
    "tokenize": "linxling.text",
    "set_show_progress": "linxling._progress",
}
_SUBMODULES = {"text", "evaluate", "io", "operators", "solvers", "kernels", "models", "datasets", "cli"}

__all__ = ["__version__", *sorted(_LAZY), *sorted(_SUBMODULES)]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = importlib.import_module(f"linxling.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'linxling' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
