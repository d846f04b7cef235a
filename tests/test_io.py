"""HDF5 model store: round trips, atomic saves, and clear errors for bad files."""
from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import linxling
from linxling.io import FORMAT_VERSION, ModelFormatError, load, register_model, save
from linxling.io import _store


@register_model("_TestDummy")
class Dummy:
    def __init__(self, params, arrays):
        self.params, self.arrays = params, arrays

    def _get_state(self):
        return self.params, self.arrays

    @classmethod
    def _from_state(cls, params, arrays):
        return cls(params, arrays)

    def save(self, path, **kw):
        save(self, path, **kw)


def _assert_same(a, b, where="arrays"):
    if isinstance(a, dict):
        assert isinstance(b, dict), where
        assert list(a) == list(b), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}/{k}")
    elif sp.issparse(a):
        assert sp.issparse(b) and a.format == b.format and type(a) is type(b), where
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert (a != b).nnz == 0, where
    else:
        assert isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b, err_msg=where)


def _state(rng):
    return (
        {"k": 5, "alpha": 0.1, "langs": ["en", "zh-Hans"], "nested": {"x": None, "ok": True}},
        {
            "W": rng.standard_normal((7, 3)).astype(np.float32),
            "bias": rng.standard_normal(3),
            "vocab": {
                "zh-Hans": np.array(["中文", "词", ""]),
                "en": np.array(["hello", "world"]),
                "a/b": np.array(["slash", "key"]),
                "%2F": np.arange(3),
                ".": np.array([1.5]),
                "": np.array([True, False]),
            },
            "X": sp.random(20, 9, density=0.2, format="csr", random_state=1, dtype=np.float32),
            "Xc": sp.random(5, 4, density=0.5, format="csc", random_state=2),
            "Xa": sp.csr_array(np.eye(3)),
            "empty": np.zeros((0, 4), dtype=np.float32),
            "scalar": np.array(3.25),
            "obj_words": np.array(["x", "yy"], dtype=object),
            "bytes": np.array([b"ab", b"c"]),
            "ints": np.arange(6, dtype=np.int32).reshape(2, 3),
        },
    )


@pytest.mark.parametrize("compression", ["gzip", None])
def test_round_trip(tmp_path, rng, compression):
    params, arrays = _state(rng)
    path = tmp_path / "m.h5"
    Dummy(params, arrays).save(path, compression=compression)
    m = load(path)
    assert isinstance(m, Dummy)
    assert m.params == json.loads(json.dumps(params))
    _assert_same(arrays, m.arrays)
    assert m.arrays["W"].dtype == np.float32
    assert m.arrays["vocab"]["zh-Hans"].dtype.kind == "U"
    assert m.arrays["obj_words"].dtype == object
    with h5py.File(path, "r") as f:
        assert int(f.attrs["format_version"]) == FORMAT_VERSION == 1
        assert f.attrs["model"] == "_TestDummy"
        assert f.attrs["linxling_version"] == linxling.__version__
        assert f.attrs["dtype"] == "float32"  # W and X dominate the float arrays
        assert f.attrs["created"]
        assert json.loads(f.attrs["params"])["k"] == 5
        assert "a%2Fb" in f["arrays/vocab"]
    assert linxling.load(path).params["k"] == 5
    assert _store.read_info(path)["model"] == "_TestDummy"
    assert not [p for p in os.listdir(tmp_path) if p != "m.h5"]


def test_numpy_scalars_in_params(tmp_path):
    Dummy({"k": np.int64(3), "tol": np.float32(0.5)}, {}).save(tmp_path / "m.h5")
    assert load(tmp_path / "m.h5").params == {"k": 3, "tol": 0.5}


def test_unregistered_and_bad_state(tmp_path):
    class NotRegistered:
        def _get_state(self):
            return {}, {}

    with pytest.raises(TypeError, match="not a registered model"):
        save(NotRegistered(), tmp_path / "x.h5")
    with pytest.raises(TypeError, match="JSON"):
        Dummy({"f": object()}, {}).save(tmp_path / "x.h5")
    with pytest.raises(TypeError, match="arrays/bad"):
        Dummy({}, {"bad": np.array([1, "a", None], dtype=object)}).save(tmp_path / "x.h5")
    with pytest.raises(TypeError, match="keys must be str"):
        Dummy({}, {1: np.zeros(2)}).save(tmp_path / "x.h5")
    assert os.listdir(tmp_path) == []


def test_register_conflict():
    with pytest.raises(ValueError, match="already registered"):
        @register_model("_TestDummy")
        class Other:  # noqa: F841
            def _get_state(self):
                return {}, {}

            @classmethod
            def _from_state(cls, params, arrays):
                return cls()


@pytest.mark.parametrize("exc", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_interrupted_save_keeps_old_file(tmp_path, rng, monkeypatch, exc):
    path = tmp_path / "m.h5"
    params, arrays = _state(rng)
    Dummy(params, arrays).save(path)
    before = path.read_bytes()
    mode = path.stat().st_mode

    original = h5py.Group.create_dataset
    calls = {"n": 0}

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 1:
            raise exc
        return original(self, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", failing)
    with pytest.raises(type(exc)):
        Dummy({"k": 99}, {"A": np.ones(3), "B": np.ones(4)}).save(path)
    monkeypatch.undo()
    assert calls["n"] == 2
    assert path.read_bytes() == before
    assert path.stat().st_mode == mode
    assert os.listdir(tmp_path) == ["m.h5"]
    assert load(path).params["k"] == 5


def test_interrupted_replace(tmp_path, monkeypatch):
    path = tmp_path / "m.h5"
    Dummy({"k": 1}, {"A": np.ones(3)}).save(path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        Dummy({"k": 2}, {"A": np.zeros(3)}).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.h5"]


def test_new_file_permissions_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        Dummy({}, {}).save(tmp_path / "m.h5")
    finally:
        os.umask(old)
    assert (tmp_path / "m.h5").stat().st_mode & 0o777 == 0o644


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.h5")


def test_truncated_file(tmp_path, rng):
    path = tmp_path / "m.h5"
    params, arrays = _state(rng)
    arrays["big"] = rng.standard_normal((200, 50))
    Dummy(params, arrays).save(path, compression=None)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFormatError, match="m.h5") as info:
        load(path)
    assert "truncated" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_random_bytes(tmp_path, rng):
    path = tmp_path / "junk.h5"
    path.write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(ModelFormatError, match="junk.h5.*not an HDF5 file"):
        load(path)
    (tmp_path / "empty.h5").write_bytes(b"")
    with pytest.raises(ModelFormatError):
        load(tmp_path / "empty.h5")


def test_foreign_hdf5(tmp_path):
    path = tmp_path / "foreign.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(ModelFormatError, match="foreign.h5.*not written by linxling"):
        load(path)


def _rewrite_attr(path, name, value):
    with h5py.File(path, "a") as f:
        f.attrs[name] = value


def test_future_version(tmp_path):
    path = tmp_path / "m.h5"
    Dummy({}, {"A": np.ones(2)}).save(path)
    _rewrite_attr(path, "format_version", FORMAT_VERSION + 1)
    with pytest.raises(ModelFormatError, match=r"m.h5.*format version 2.*Upgrade"):
        load(path)


def test_unknown_model_lists_known(tmp_path):
    path = tmp_path / "m.h5"
    Dummy({}, {}).save(path)
    _rewrite_attr(path, "model", "NoSuchModel")
    with pytest.raises(ModelFormatError, match=r"unknown model 'NoSuchModel'.*_TestDummy"):
        load(path)


def test_bad_params_json(tmp_path):
    path = tmp_path / "m.h5"
    Dummy({}, {}).save(path)
    _rewrite_attr(path, "params", "{not json")
    with pytest.raises(ModelFormatError, match="JSON"):
        load(path)


def test_bad_compression(tmp_path):
    with pytest.raises(ValueError, match="compression"):
        Dummy({}, {}).save(tmp_path / "m.h5", compression="zstd")
