"""Layering: the store (linxling.io) and evaluation never import the models; models -> io only."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, timeout: float = 120) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_io_and_evaluate_do_not_import_models(tmp_path):
    # the whole io API used, including load of a model file whose class is not registered
    code = f"""
import sys
import numpy as np
import linxling.io as io, linxling.evaluate
io.export_vectors({str(tmp_path / 'v.txt')!r}, np.eye(2), ["a", "b"])
try:
    io.load({str(tmp_path / 'missing.h5')!r})
except FileNotFoundError:
    pass
print(sorted(m for m in sys.modules if m.startswith("linxling.models")))
"""
    assert _run(code) == "[]"


def test_linxling_load_and_io_load_find_builtin_models(tmp_path):
    """Both load a built-in model in a fresh interpreter: the store finds its module in the
    registry (linxling/_registry.py, plain data), not by importing linxling.models."""
    import scipy.sparse as sp

    from linxling.models.wmf import WMF
    X = sp.random(20, 15, density=0.3, random_state=0, format="csr")
    WMF(n_components=2, max_iter=1, random_state=0).fit(X).save(tmp_path / "w.h5")
    path = str(tmp_path / "w.h5")
    assert _run(f"import linxling; print(type(linxling.load({path!r})).__name__)") == "WMF"
    assert _run(f"import linxling.io as io; print(type(io.load({path!r})).__name__)") == "WMF"


@pytest.mark.parametrize("module", ["linxling.io", "linxling.evaluate"])
def test_no_function_local_import_of_models_in_lower_layers(module):
    """The io/evaluate source must not reach into linxling.models, not even inside a function
    (the store finds a model's module through linxling/_registry.py only)."""
    import importlib
    mod = importlib.import_module(module)
    files = [Path(mod.__file__)]
    if files[0].name == "__init__.py":
        files = sorted(files[0].parent.glob("*.py"))
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    assert "linxling.models" not in text and "import_module(" not in text


def test_datasets_do_not_import_evaluate():
    """Layers point one way: evaluate may read datasets, never the reverse (read_sts lives in
    datasets; evaluate re-exports it)."""
    import ast
    for f in sorted((ROOT / "linxling" / "datasets").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("linxling.evaluate"), f
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("linxling.evaluate") for a in node.names), f


def test_cli_bench_outside_a_source_checkout_says_what_it_needs(monkeypatch, capsys):
    from linxling import cli
    monkeypatch.setattr(cli, "_source_checkout", lambda: None)
    assert cli.main(["bench", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "source checkout" in err and "Traceback" not in err


def test_without_dask_the_cluster_paths_name_the_extra(monkeypatch):
    import linxling._dask as ld
    monkeypatch.setitem(sys.modules, "distributed", None)      # import distributed -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'linxling\[dask\]'"):
        ld.get_client()


def test_core_dependencies_are_the_light_ones():
    """pip install linxling needs no compiler and no system package: scikit-sparse (CHOLMOD) and
    dask are extras, never core dependencies (issue #26); every core one has wheels."""
    import tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {d.split(">")[0].split("<")[0].split("[")[0].split("=")[0].strip() for d in meta["dependencies"]}
    assert core == {"numpy", "scipy", "numba", "h5py", "tqdm", "threadpoolctl", "scikit-learn", "tbb"}
    # tbb (numba's fork-safe threading layer, linxling/_forksafe.py) is a binary wheel, and only
    # where PyPI has one: Linux x86-64
    (tbb,) = [d for d in meta["dependencies"] if d.startswith("tbb")]
    assert "sys_platform == 'linux'" in tbb and "platform_machine == 'x86_64'" in tbb
    extras = meta["optional-dependencies"]
    assert any("scikit-sparse" in d for d in extras["cholmod"])
    assert any(d.startswith("dask") for d in extras["dask"]) and any("cupy" in d for d in extras["gpu"])


def test_first_fit_says_it_compiles_once(tmp_path, monkeypatch, capsys):
    """Issue #27: the first fit of a model on a machine says, once, that numba compiles its
    kernels; after it (or `linxling warmup`) nothing is said."""
    import linxling._progress as lp
    import linxling.models._estimator as est
    from linxling import WMF
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))        # where the marker goes
    monkeypatch.setitem(lp._STATE, "show", True)
    monkeypatch.setattr(est, "_NOTED", set())
    X = [f"w{i % 7} w{(i * 3) % 11}" for i in range(30)]
    WMF(n_components=2, max_iter=1, min_df=1, random_state=0, show_progress=False).fit(X)
    assert "first WMF fit on this machine: compiling its numba kernels (once" in capsys.readouterr().err
    assert any(p.name.startswith("linxling-compiled-WMF") for p in tmp_path.iterdir())
    monkeypatch.setattr(est, "_NOTED", set())
    WMF(n_components=2, max_iter=1, min_df=1, random_state=0, show_progress=False).fit(X)
    assert "compiling" not in capsys.readouterr().err


def test_warmup_reaches_the_kernels_behind_size_thresholds():
    """`linxling warmup` promises that a real fit compiles nothing more, but some kernels run only
    past a size threshold (the threaded transpose and rank-one update of Cr5's larger blocks,
    WMF's pushed frequent columns, and WMF's float32 CG): after the tiny warmup fits a verse-sized
    Cr5 fit took 7.5 s instead of 3.8 and a float32 WMF fit 28.3 s instead of 2.4, compiling them
    (benchmarks/README.md, "First and second fit"). The warmup's fits reach them now, in float32
    and float64: checked in a fresh process by the signatures numba holds after it."""
    code = """
import json
from numba.core import types
from linxling._warmup import warmup
from linxling.kernels import als, dense, spmm
warmup(["Cr5", "WMF"], print_fn=lambda s: None)
out = {}
kernels = [(getattr(mod, name), name) for mod, name in [
    (spmm, "_transpose_counts"), (spmm, "_transpose_fill"), (dense, "_add_outer"),
    (als, "_hot_start"), (als, "_hot_step"), (als, "_gram_times")]]
for k in (16, *als.CONST_WIDTHS):                     # any width, and each constant width
    cg, hot = als._cg_kernels(k)
    kernels += [(cg, f"half_step_cg{k}"), (hot, f"hot_pass{k}")]
for fn, name in kernels:
    sigs = fn.signatures
    out[name] = [len(sigs), sorted({str(a.dtype) for sig in sigs for a in sig
                                    if isinstance(a, types.Array) and a.dtype in (types.float32, types.float64)})]
print(json.dumps(out))
"""
    import json
    out = json.loads(_run(code, timeout=600).strip().splitlines()[-1])   # 5 s cached, 2 min cold
    assert out.pop("_transpose_counts")[0] >= 1            # integer arguments only
    for name, (n_sigs, dtypes) in out.items():
        assert n_sigs >= 1 and dtypes == ["float32", "float64"], (name, n_sigs, dtypes)


def test_a_second_process_compiles_nothing():
    """numba caches a kernel on disk under a key that includes a pickle of its closure's cells.
    WMF's CG half-step once closed over an inner jitted function, whose pickle differs in every
    process, so every new process compiled it again (3-5 s at the start of each WMF fit, and a
    new cache file each time; 2026-11-30). Every model's warmup fit in one process, then in a
    second: the second compiles none of linxling's kernels."""
    code = """
import json
from numba.core import event
from linxling._warmup import warmup
names = []
class Count(event.Listener):
    def on_start(self, ev):
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        if (getattr(fn, "__module__", "") or "").startswith("linxling"):
            names.append(fn.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
warmup(print_fn=lambda s: None)
print(json.dumps(names))
"""
    import json
    _run(code, timeout=900)                        # compiles what the cache lacks (a few s if warm)
    assert json.loads(_run(code, timeout=900).splitlines()[-1]) == []


def test_a_fit_inside_a_fit_says_it_compiles_once(tmp_path, monkeypatch, capsys):
    """CrossWMF fits a WMF for its pivot, SingleBlock fits the model it wraps: one notice, for
    the model the user fitted (CrossWMF) or the one that compiles (Cr5), not two."""
    import numpy as np
    import scipy.sparse as sp

    import linxling._progress as lp
    import linxling.models._estimator as est
    from linxling import CrossWMF
    from linxling.models import Cr5, SingleBlock
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(lp._STATE, "show", True)
    monkeypatch.setattr(est, "_NOTED", set())
    X = [f"w{i % 7} w{(i * 3) % 11}" for i in range(30)]
    CrossWMF(pivot_language="en", n_components=2, max_iter=1, min_df=1, random_state=0,
             show_progress=False).fit({"de": (X, X)})
    err = capsys.readouterr().err
    assert err.count("compiling its numba kernels") == 1 and "first CrossWMF fit" in err
    rng = np.random.default_rng(0)
    SingleBlock(Cr5(n_components=2, random_state=0, show_progress=False)).fit(
        sp.random(40, 12, density=0.3, random_state=0, format="csr"), rng.integers(0, 10, 40))
    err = capsys.readouterr().err
    assert err.count("compiling its numba kernels") == 1 and "first Cr5 fit" in err


def test_warnings_point_at_the_users_line():
    """A warning raised deep inside a fit (through the atomic wrapper and helpers) names the
    caller's file and line, not linxling's."""
    import warnings

    from linxling import BilingualWMF
    X = [f"w{i % 7} w{(i * 3) % 11}" for i in range(30)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        BilingualWMF(n_components=4, alpha=60.0, max_iter=5, random_state=0, show_progress=False).fit(
            {"en": X, "es": X})
    assert w and all(x.filename == __file__ for x in w), [(x.filename, x.lineno) for x in w]
