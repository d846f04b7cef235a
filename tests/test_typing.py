"""Editors and type checkers see the public API (issue #27 item 2).

``import linxling`` loads its names lazily; the ``TYPE_CHECKING`` imports in linxling/__init__.py,
``py.typed`` and the annotations are what jedi (editor completion and signatures) and mypy read.
These tests ask both tools, as a user's editor or CI would, from a file outside the checkout."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import linxling
from linxling._registry import names

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_ships():
    assert (Path(linxling.__file__).parent / "py.typed").is_file()


def _public_callables():
    """(where, function) of every model's public fit/transform/... and the public functions of
    linxling.evaluate, search, io, datasets and text."""
    import importlib
    out = []
    methods = ("__init__", "fit", "transform", "fit_transform", "word_vectors", "predict", "save",
               "load", "from_paper", "score", "fit_matrices", "transform_matrix")
    for n in names():
        cls = getattr(linxling, n)
        for m in methods:
            f = getattr(cls, m, None)
            if f is None:
                continue
            out.append((f"{n}.{m}", getattr(f, "__func__", f)))
    for mn in ("linxling.evaluate", "linxling.search", "linxling.io", "linxling.datasets", "linxling.text"):
        mod = importlib.import_module(mn)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                out.append((f"{mn}.{name}", obj))
            elif inspect.isclass(obj):
                out += [(f"{mn}.{name}.{m}", f) for m, f in vars(obj).items()
                        if inspect.isfunction(f) and (m == "__init__" or not m.startswith("_"))]
    return out


def test_every_public_parameter_and_return_is_annotated():
    missing = []
    for where, f in _public_callables():
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            continue
        missing += [f"{where}({p.name})" for p in sig.parameters.values()
                    if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
        if sig.return_annotation is inspect.Signature.empty and not where.endswith("__init__"):
            missing.append(f"{where} -> return")
    assert not missing, f"{len(missing)} unannotated: {missing[:20]}"


def test_jedi_completes_and_signs_linxling_cr5(tmp_path):
    jedi = pytest.importorskip("jedi", reason="jedi is in the 'test' extra")
    env = jedi.create_environment(sys.executable, safe=False)
    where = str(tmp_path / "user.py")
    done = jedi.Script("import linxling\nlinxling.Cr", path=where, environment=env).complete(2, 11)
    assert {"Cr5", "CrossWMF"} <= {c.name for c in done}
    for src in ("import linxling\nlinxling.Cr5(", "from linxling import Cr5\nCr5("):
        line = src.splitlines()[-1]
        sigs = jedi.Script(src, path=where, environment=env).get_signatures(2, len(line))
        assert [s.name for s in sigs] == ["Cr5"], src
        params = [p.name for p in sigs[0].params]
        assert params[:2] == ["n_components", "alpha"] and "random_state" in params, params


@pytest.mark.slow
def test_mypy_sees_the_constructor_signature(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the 'test' extra")
    (tmp_path / "user.py").write_text(
        "import linxling\n"
        "from linxling import BiCVM\n"
        "model = linxling.Cr5(n_components=3, random_state=0)\n"
        "reveal_type(model)\n"
        "reveal_type(linxling.Cr5)\n"
        "reveal_type(BiCVM(n_components=8).transform)\n"
        "bad = linxling.Cr5(n_components='three')\n", encoding="utf-8")
    env = dict(os.environ)
    # a source checkout installed in editable mode: point mypy at it (an installed wheel needs
    # nothing: the package ships py.typed)
    if Path(linxling.__file__).resolve().is_relative_to(ROOT):
        env["MYPYPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
                        "--no-incremental", "--cache-dir", str(tmp_path / ".mypy_cache"), "user.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout
    assert 'Revealed type is "linxling.models.cr5.Cr5"' in out, out
    # the constructor's parameters with their types, as an editor's hover shows them
    assert 'Revealed type is "def (n_components: int =, alpha: float =, *, cg_rtol: float =' in out, out
    assert "show_progress: bool | None =" in out and ") -> linxling.models.cr5.Cr5" in out, out
    assert "def (X: typing.Sequence[str], language: str | None =" in out, out
    assert 'Argument "n_components" to "Cr5" has incompatible type "str"; expected "int"' in out, out
    assert p.returncode == 1, out          # exactly that error
