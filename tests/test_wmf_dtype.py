"""WMF family: ``dtype=None`` (the default) follows the data (issue #8/#11)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from linxling.models.wmf import WMF, BilingualWMF
from linxling.models.xwmf import CrossWMF


def _X(dtype, n=40, m=25, seed=0):
    X = sp.random(n, m, density=0.2, random_state=seed, format="csr", dtype=np.float64)
    X.data[:] = 1.0
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wmf_default_dtype_follows_data(dtype):
    X = _X(dtype)
    model = WMF(n_components=4, max_iter=2, random_state=0).fit(X)
    assert model.dtype is None
    assert model.components_.dtype == dtype and model.embedding_.dtype == dtype
    assert model.transform(X).dtype == dtype
    assert model.transform(X.astype(np.float64 if dtype == np.float32 else np.float32)).dtype == dtype


def test_wmf_integer_input_gives_float64_and_explicit_dtype_wins():
    X = _X(np.float64)
    Xi = X.astype(np.int64)
    assert WMF(n_components=3, max_iter=1, random_state=0).fit(Xi).components_.dtype == np.float64
    m = WMF(n_components=3, max_iter=1, random_state=0, dtype=np.float32).fit(X)
    assert m.components_.dtype == np.float32
    m = WMF(n_components=3, max_iter=1, random_state=0, dtype="float64").fit(X.astype(np.float32))
    assert m.components_.dtype == np.float64


def test_wmf_default_dtype_same_result_as_explicit():
    X = _X(np.float32)
    a = WMF(n_components=4, max_iter=3, random_state=0).fit(X)
    b = WMF(n_components=4, max_iter=3, random_state=0, dtype=np.float32).fit(X)
    # the same computation; fastmath reductions may round differently with other alignment
    np.testing.assert_allclose(a.embedding_, b.embedding_, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-4, atol=1e-5)


def test_bilingual_dtype_follows_data():
    X32 = {"en": _X(np.float32, seed=1), "es": _X(np.float32, m=30, seed=2)}
    model = BilingualWMF(n_components=3, max_iter=2, random_state=0).fit(X32)
    assert model.embedding_.dtype == np.float32
    assert all(c.dtype == np.float32 for c in model.components_.values())
    mixed = {"en": X32["en"], "es": X32["es"].astype(np.float64)}
    model = BilingualWMF(n_components=3, max_iter=2, random_state=0).fit(mixed)
    assert model.embedding_.dtype == np.float64   # float32 only when every language is float32
    assert model.transform(X32["es"], "es").dtype == np.float64


def test_cross_wmf_dtype_follows_pivot_data():
    Xp, Xl = _X(np.float32, seed=3), _X(np.float32, m=20, seed=4)
    model = CrossWMF(n_components=3, max_iter=2, random_state=0).fit({"es": (Xp, Xl)})
    assert model.components_["en"].dtype == np.float32
    assert model.components_["es"].dtype == np.float32
    assert model.transform(Xl, "es").dtype == np.float32


def test_dtype_none_survives_save_and_load(tmp_path):
    from linxling.io import load, save
    X = _X(np.float32)
    model = WMF(n_components=3, max_iter=1, random_state=0).fit(X)
    path = tmp_path / "m.h5"
    save(model, path)
    back = load(path)
    assert back.dtype is None and back.components_.dtype == np.float32
    np.testing.assert_allclose(back.transform(X), model.transform(X), rtol=1e-5, atol=1e-6)
