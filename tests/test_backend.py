"""Backend dispatch: NumPy/SciPy here; CuPy paths skip with a reason when there is no GPU."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from linxling import _backend
from linxling._backend import get_namespace, is_cupy_array, to_numpy


def test_numpy_dispatch():
    ns = get_namespace(np.zeros(3), sp.csr_matrix((2, 2)), None)
    assert ns.name == "numpy" and ns.xp is np and ns.sparse is sp
    import scipy.linalg
    assert ns.linalg is scipy.linalg


def test_no_cupy_import_at_import_time():
    code = "import sys, linxling, linxling._backend; import linxling.operators, linxling.solvers; " \
           "print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_has_cupy_reports_reason():
    ok, reason = _backend.cupy_status()
    assert isinstance(ok, bool) and isinstance(reason, str) and reason
    assert _backend.HAS_CUPY is ok and _backend.CUPY_REASON == reason
    # the status agrees with what this environment actually has
    import importlib.util
    if importlib.util.find_spec("cupy") is None:
        assert ok is False
        assert reason.startswith("cupy is not importable") and "pip install linxling[gpu]" in reason
    else:  # pragma: no cover - depends on the machine
        assert reason.startswith("cupy ") and (ok == ("device(s)" in reason))


def test_cupy_status_reports_a_failed_import(monkeypatch):
    """A broken CuPy install is reported with the exception, not as available."""
    import importlib
    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "cupy":
            raise ImportError("libcudart.so.12: cannot open shared object file")
        return real(name, *a, **k)
    monkeypatch.setattr(_backend, "_CUPY_STATE", {})
    monkeypatch.setattr(_backend.importlib, "import_module", fake)
    ok, reason = _backend.cupy_status()
    assert ok is False and "ImportError: libcudart.so.12" in reason


class FakeCupyArray:
    """Looks like a CuPy array to the type-based check, without importing CuPy."""
    __module__ = "cupy._core.core"


def test_type_based_detection_and_mixing_error():
    fake = FakeCupyArray()
    assert is_cupy_array(fake) and not is_cupy_array(np.zeros(1))
    with pytest.raises(TypeError, match="different devices"):
        get_namespace(fake, np.zeros(2))


def test_to_numpy_passthrough():
    a = np.arange(3.0)
    assert to_numpy(a) is a


@pytest.mark.gpu
@pytest.mark.skipif(not _backend.HAS_CUPY, reason=f"no usable CuPy/GPU: {_backend.CUPY_REASON}")
def test_cupy_dispatch_and_centered_gram():  # pragma: no cover - needs a GPU
    import cupy as cp
    import cupyx.scipy.sparse as csp

    from linxling.operators import CenteredGram
    X = sp.random(50, 20, density=0.2, random_state=0, format="csr")
    ns = get_namespace(cp.zeros(2))
    assert ns.name == "cupy"
    V = np.random.default_rng(0).standard_normal((20, 3))
    ref = CenteredGram(X, 0.5).matmat(V)
    got = CenteredGram(csp.csr_matrix(X), 0.5).matmat(cp.asarray(V))
    np.testing.assert_allclose(cp.asnumpy(got), ref, rtol=1e-10)
