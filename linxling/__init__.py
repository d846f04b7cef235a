"""linxling: scalable sparse linear algebra for crosslingual text embeddings.

The public API is loaded lazily (submodules are imported on first attribute access), so
``import linxling`` is cheap and never imports numba kernels, dask or cupy by itself.

Estimators
    :class:`Cr5` (reduced-rank ridge regression, Josifoski et al. 2019),
    :class:`WMF`, :class:`BilingualWMF`, :class:`CrossWMF` (Aldarmaki & Diab 2016),
    :class:`CLLSI` (crosslingual LSI baseline),
    :class:`BiCVM` (Hermann & Blunsom 2014), :class:`RankingEmbedding` and :class:`CompressTree`
    (Etter 2009), :class:`BilBOWA` (Gouws et al. 2015),
    :class:`BilDRL` (bilingual dictionary encoders, Chen et al. 2019).
Store
    :func:`load` reads any saved model; each estimator has ``save(path)``.
Search
    :class:`linxling.search.Index`: exact top-k search of one language's document vectors.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from linxling._cpuquota import apply_cpu_limit as _apply_cpu_limit
from linxling._forksafe import install_fork_check as _install_fork_check
from linxling._forksafe import load_tbb as _load_tbb
from linxling._registry import names as _model_names
from linxling._version import __version__

if TYPE_CHECKING:   # what editors and type checkers see; at run time the names load lazily
    from linxling import cli as cli
    from linxling import datasets as datasets
    from linxling import evaluate as evaluate
    from linxling import io as io
    from linxling import kernels as kernels
    from linxling import models as models
    from linxling import operators as operators
    from linxling import search as search
    from linxling import solvers as solvers
    from linxling import text as text
    from linxling._progress import set_show_progress as set_show_progress
    from linxling.io import save as save
    from linxling.models import load as load
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
    from linxling.text import TfidfVectorizer as TfidfVectorizer
    from linxling.text import tokenize as tokenize

_apply_cpu_limit()       # numba's threads within a container's CPU quota (linxling/_cpuquota.py)
_load_tbb()              # numba on TBB, fork-safe, where the tbb wheel is (linxling/_forksafe.py)
_install_fork_check()
_MODELS = tuple(_model_names())     # the registry (linxling/_registry.py), resolved by linxling.models
_LAZY = {
    **{name: "linxling.models" for name in _MODELS},
    "load": "linxling.models",          # registers the built-in models, then linxling.io.load
    "save": "linxling.io",
    "TfidfVectorizer": "linxling.text",
    "tokenize": "linxling.text",
    "set_show_progress": "linxling._progress",
}
_SUBMODULES = {"text", "evaluate", "io", "operators", "solvers", "kernels", "models", "datasets", "cli", "search"}

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
