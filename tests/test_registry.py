"""The one list of models (linxling/_registry.py) and everything that reads it."""
from __future__ import annotations

import subprocess
import sys

import pytest

import linxling
from linxling import _registry
from linxling.io import registered_models


def test_every_entry_resolves_everywhere():
    store = registered_models()
    for e in _registry.MODELS:
        cls = _registry.model_class(e.name)
        assert cls.__name__ == e.name and cls.__module__ == e.module
        assert getattr(linxling, e.name) is cls                    # the package's lazy name
        assert getattr(linxling.models, e.name) is cls             # linxling.models
        assert registered_models()[e.name] is cls or store.get(e.name) is cls   # the store's key
        assert e.input in _registry.INPUT_KINDS and e.summary
    assert set(linxling.__all__) >= set(_registry.names())
    assert set(linxling.models.__all__) == set(_registry.names())


def test_lookup_is_case_insensitive_with_aliases_and_a_clear_error():
    assert _registry.entry("cr5").name == "Cr5"
    assert _registry.entry("X-WMF").name == "CrossWMF"
    assert _registry.entry("cl-lsi").name == "CLLSI"
    with pytest.raises(ValueError, match="unknown model 'nope'; choose one of Cr5, CLLSI"):
        _registry.entry("nope")
    aliases = [a.lower() for e in _registry.MODELS for a in (e.name, *e.aliases)]
    assert len(aliases) == len(set(aliases))                       # no name means two models


def test_the_store_imports_a_model_module_on_load(tmp_path):
    """``linxling.io.load`` alone finds a model whose module was never imported (the registry
    names it), in a fresh interpreter."""
    from linxling import WMF
    X = [f"w{i} w{(i * 7) % 13} w{(i * 3) % 11}" for i in range(40)]
    path = tmp_path / "m.h5"
    WMF(n_components=2, max_iter=1, min_df=1, random_state=0, show_progress=False).fit(X).save(path)
    code = ("import sys, linxling.io as io; m = io.load(sys.argv[1]); "
            "assert 'linxling.models.cr5' not in sys.modules; print(type(m).__name__)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "WMF"


def test_contract_cases_cover_the_registry():
    from tests.test_contract import IDS
    assert set(IDS) | {"SingleBlock"} == set(_registry.names())   # SingleBlock: tests/test_sklearn.py


def test_static_imports_name_every_registered_model():
    """Editors and type checkers read the TYPE_CHECKING imports of the two lazy packages: they
    must name every model of the registry, from its module."""
    import ast
    from pathlib import Path
    for pkg in ("linxling", "linxling.models"):
        src = Path(__import__(pkg, fromlist=["_"]).__file__).read_text(encoding="utf-8")
        block = next(n for n in ast.parse(src).body if isinstance(n, ast.If)
                     and getattr(n.test, "id", None) == "TYPE_CHECKING")
        seen = {a.asname or a.name: node.module for node in block.body if isinstance(node, ast.ImportFrom)
                for a in node.names}
        for e in _registry.MODELS:
            assert seen.get(e.name) == e.module, (pkg, e.name)
