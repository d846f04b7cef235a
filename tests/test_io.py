"""HDF5 model store: round trips, atomic saves, and clear errors for bad files."""
from __future__ import annotations

import json
import os
from pathlib import Path

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


@pytest.mark.parametrize("compression", ["auto", "gzip", "lzf", None])
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


def test_the_files_root_attributes_and_header_are_those_docs_io_md_lists(tmp_path, rng):
    """docs/io.md's table of root attributes left out params_crc32, and the page did not say that
    the HDF5 data follows a 512-byte header: a reader of the layout met both undocumented."""
    import re
    page = (Path(__file__).resolve().parents[1] / "docs" / "io.md").read_text(encoding="utf-8")
    section = page.split("## File format", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    path = tmp_path / "m.h5"
    Dummy(*_state(rng)).save(path)
    with h5py.File(path, "r") as f:
        assert sorted(f.attrs) == sorted(documented)
        assert f.userblock_size == _store.HEADER_SIZE == 512
    assert path.read_bytes().startswith(b"LINXLING-MODEL 1\n") and "512-byte text header" in section


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
    # 0o027 gives 0o640, which differs from both mkstemp's 0o600 and the 0o644 fallback
    old = os.umask(0o027)
    try:
        Dummy({}, {}).save(tmp_path / "m.h5")
    finally:
        os.umask(old)
    assert (tmp_path / "m.h5").stat().st_mode & 0o777 == 0o640


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.h5")


def test_swapped_or_wrong_type_arguments_are_named(tmp_path, rng):
    """``load(model)`` gave os.fspath's message, ``save(path, model)`` said that str is not a
    registered model."""
    model = Dummy(*_state(rng))
    with pytest.raises(TypeError, match="path must be a str or os.PathLike .*got Dummy"):
        load(model)
    with pytest.raises(TypeError, match=r"save\(model, path\) takes the model first: got a str then a Dummy"):
        save(str(tmp_path / "m.h5"), model)
    assert os.listdir(tmp_path) == []


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
    with pytest.raises(ModelFormatError, match="junk.h5.*not a linxling model file"):
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


def _reseal(path):
    """Recompute the file header's SHA-256 after an edit: a crafted file, not a corrupted one
    (a plain edit fails the checksum before anything else is looked at)."""
    from linxling.io._store import HEADER_SIZE, _file_header
    data = Path(path).read_bytes()
    with open(path, "wb") as fh:
        fh.write(_file_header(data[HEADER_SIZE:]) + data[HEADER_SIZE:])


def _rewrite_attr(path, name, value, reseal=True):
    with h5py.File(path, "a") as f:
        f.attrs[name] = value
    if reseal:
        _reseal(path)


def test_any_edit_fails_the_files_checksum(tmp_path):
    """Issue #29: one flipped bit anywhere (an attribute, the class name) is caught before HDF5
    parses the file (a flipped bit once made load loop forever inside HDF5's attribute reader)."""
    path = tmp_path / "m.h5"
    Dummy({}, {"A": np.ones(2)}).save(path)
    _rewrite_attr(path, "model", "OtherModel", reseal=False)
    with pytest.raises(ModelFormatError, match="fails its SHA-256 checksum|modified after it was saved"):
        load(path)
    Dummy({}, {"A": np.ones(2)}).save(path)
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2] ^= 0x10
    Path(path).write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="fails its SHA-256 checksum"):
        load(path)
    Path(path).write_bytes(bytes(data[:-100]))
    with pytest.raises(ModelFormatError, match="truncated"):
        load(path)


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
    with pytest.raises(ModelFormatError, match="params attribute fails its checksum"):
        load(path)
    with h5py.File(path, "a") as f:      # a file without checksums (older writer) is parsed
        del f.attrs["params_crc32"]
    _reseal(path)
    with pytest.raises(ModelFormatError, match="JSON"):
        load(path)


def test_auto_compression_leaves_floating_point_weights_uncompressed(tmp_path):
    """The default "auto": gzip (with the byte shuffle) for indices and vocabularies, no filter for
    floating-point arrays (trained weights compress by ~10 % at 4-6x the save time, docs/io.md)."""
    arrays = {"W": np.arange(600, dtype=np.float32).reshape(20, 30), "X": sp.random(20, 30, density=0.2, format="csr",
                                                                                  random_state=0),
              "ids": np.arange(50, dtype=np.int64), "vocab": np.array(["a", "bb", "ccc"])}
    Dummy({}, arrays).save(tmp_path / "m.h5")
    with h5py.File(tmp_path / "m.h5", "r") as f:
        assert f["arrays/W"].compression is None and f["arrays/X/data"].compression is None
        for name in ("arrays/ids", "arrays/X/indices", "arrays/X/indptr", "arrays/vocab"):
            assert f[name].compression == "gzip", name
        assert f["arrays/ids"].shuffle
    _assert_same(arrays, load(tmp_path / "m.h5").arrays)


def test_bad_compression(tmp_path):
    with pytest.raises(ValueError, match="compression"):
        Dummy({}, {}).save(tmp_path / "m.h5", compression="zstd")


# --------------------------------------------------------------------------- checksums
def _flip_byte_in(path, dataset):
    with h5py.File(path, "r") as f:
        ds = f[dataset]
        offset, nbytes = ds.id.get_offset(), ds.id.get_storage_size()
    assert offset is not None and nbytes > 0
    with open(path, "r+b") as fh:
        fh.seek(offset + nbytes // 2)
        byte = fh.read(1)
        fh.seek(offset + nbytes // 2)
        fh.write(bytes([byte[0] ^ 0x01]))
    _reseal(path)          # past the file's SHA-256: the per-dataset CRC-32 must still catch it


@pytest.mark.parametrize("dataset,where", [("arrays/W", "arrays/W"),
                                           ("arrays/S/data", "arrays/S/data"),
                                           ("arrays/names", "arrays/names")])
def test_uncompressed_corruption_is_detected(tmp_path, rng, dataset, where):
    path = tmp_path / "m.h5"
    arrays = {"W": rng.standard_normal((50, 20)), "S": sp.random(40, 30, density=0.2, format="csr", random_state=0),
              "names": np.array(["alpha", "beta", "gamma"] * 20)}
    Dummy({}, arrays).save(path, compression=None)
    _assert_same(arrays, load(path).arrays)
    if dataset == "arrays/names":          # vlen strings live in the global heap, not the dataset
        with h5py.File(path, "a") as f:
            f["arrays/names"][0] = "alphA"
        _reseal(path)
    else:
        _flip_byte_in(path, dataset)
    with pytest.raises(ModelFormatError, match=f"{where} fails its checksum"):
        load(path)


def test_every_dataset_carries_a_checksum(tmp_path, rng):
    path = tmp_path / "m.h5"
    Dummy({}, _state(rng)[1]).save(path)
    missing = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: missing.append(name)
                     if isinstance(obj, h5py.Dataset) and "crc32" not in obj.attrs else None)
    assert missing == []


# --------------------------------------------------------------------------- faults
def test_save_into_missing_directory_names_the_target(tmp_path):
    target = tmp_path / "no" / "such" / "m.h5"
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        Dummy({}, {}).save(target)
    assert info.value.filename == str(target)


def test_a_directory_that_takes_no_new_file_names_the_target(tmp_path, monkeypatch):
    """A destination whose folder exists but takes no new file (permissions, a read-only or
    special file system): the error names the path asked for, not the temporary file's name."""
    import linxling.io._store as store

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".m.h5.1.x.tmp"))
    (tmp_path / "m.h5").write_bytes(b"old")
    monkeypatch.setattr(store.tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError, match="cannot create a file in .*Permission denied") as info:
        Dummy({}, {}).save(tmp_path / "m.h5")
    assert info.value.filename == str(tmp_path / "m.h5")
    assert (tmp_path / "m.h5").read_bytes() == b"old"


def test_lone_surrogate_is_a_clear_error(tmp_path):
    bad = "caf\udce9"                      # what errors="surrogateescape" makes of latin-1 bytes
    with pytest.raises(ValueError, match=r"arrays/vocab\[1\].*surrogate"):
        Dummy({}, {"vocab": np.array(["ok", bad], dtype=object)}).save(tmp_path / "m.h5")
    assert os.listdir(tmp_path) == []


def test_stale_temporaries_are_removed_by_the_next_save(tmp_path):
    """A temporary file is stale when no process holds its lock: the one a killed save left is
    removed; one that a live writer locks (here another process) is left alone, whatever PID
    its name shows (a writer in another PID namespace); another model's are not touched."""
    import subprocess
    import sys
    path = tmp_path / "m.h5"
    dead = _dead_pid()
    stale = tmp_path / f".m.h5.{dead}.abcd1234.tmp"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f".m.h5.{dead}.live0000.tmp"           # locked by a live writer elsewhere
    live.write_bytes(b"y")
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, sys, time; f = open(sys.argv[1], 'rb'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
                               str(live)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        other = tmp_path / f".other.h5.{dead}.abcd1234.tmp"       # another model's: not ours to touch
        other.write_bytes(b"z")
        Dummy({}, {}).save(path)
        assert sorted(os.listdir(tmp_path)) == sorted(["m.h5", live.name, other.name])
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    Dummy({}, {}).save(path)                    # the writer is gone: its temporary is now stale
    assert sorted(os.listdir(tmp_path)) == sorted(["m.h5", other.name])


def _dead_pid():
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _generation(gen):
    """The state a killed child saves as generation ``gen`` (regenerated to check bit-identity)."""
    rng = np.random.default_rng(gen + 1)
    return {"gen": gen}, {f"A{i}": rng.standard_normal((300, 400)) for i in range(4)} | {
        "names": np.array([f"w{gen}_{i}" for i in range(500)], dtype=object)}


_KILL_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
from test_io import Dummy, _generation
print("ready", flush=True)
for gen in range(int(sys.argv[2]), int(sys.argv[2]) + 10_000):
    Dummy(*_generation(gen)).save(sys.argv[1], compression=None)
"""


@pytest.mark.slow
def test_sigkill_during_save_never_damages_the_previous_model(tmp_path, rng):
    """A child saves model after model to one path and is SIGKILLed at random moments: every time,
    the file is a complete model bit-identical to the last one saved, and the temporary file the
    killed save leaves is removed by the next save."""
    import signal
    import subprocess
    import sys
    import time
    path = tmp_path / "m.h5"
    Dummy(*_generation(-1)).save(path)
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    last, left_temporaries = -1, 0
    for trial in range(20):
        start = 1000 * (trial + 1)
        child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(path), str(start), tests_dir],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready"
        time.sleep(float(rng.uniform(0.05, 0.4)))
        child.send_signal(signal.SIGKILL)
        child.wait()
        loaded = load(path)
        gen = loaded.params["gen"]
        assert gen == last or start <= gen < start + 10_000, (gen, last)
        params, arrays = _generation(gen)
        assert loaded.params == params
        _assert_same(arrays, loaded.arrays)          # bit-identical, never a mix of two saves
        last = gen
        temporaries = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
        assert len(temporaries) <= 1
        left_temporaries += len(temporaries)
        Dummy(*_generation(gen)).save(path)          # the next save cleans up after the killed one
        assert sorted(os.listdir(tmp_path)) == ["m.h5"]
    assert left_temporaries >= 5                     # the kills did land inside saves


# --------------------------------------------------------------------------- model classes
def test_class_load_checks_the_model_type(tmp_path):
    from linxling.models._estimator import LinxlingEstimator

    @register_model("_TestEstimatorA")
    class A(LinxlingEstimator):
        _fitted_attr = "w_"

        def __init__(self, k=1):
            self.k = k

        def _get_state(self):
            return self.get_params(), {"w": self.w_}

        @classmethod
        def _from_state(cls, params, arrays):
            m = cls(**params)
            m.w_ = arrays["w"]
            return m

    @register_model("_TestEstimatorB")
    class B(A):
        pass

    @register_model("_TestEstimatorC")
    class C(A):
        pass

    a = A(k=3)
    with pytest.raises(linxling.models._estimator.NotFittedError):
        a.save(tmp_path / "a.h5")
    a.w_ = np.arange(3.0)
    a.save(tmp_path / "a.h5")
    b = B()
    b.w_ = np.ones(2)
    b.save(tmp_path / "b.h5")
    assert A.load(tmp_path / "a.h5").k == 3
    assert type(A.load(tmp_path / "b.h5")) is B           # a subclass is an A
    with pytest.raises(ModelFormatError, match="holds a _TestEstimatorA model, not a B"):
        B.load(tmp_path / "a.h5")
    with pytest.raises(ModelFormatError, match="holds a _TestEstimatorB model, not a C"):
        C.load(tmp_path / "b.h5")
