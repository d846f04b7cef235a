"""Fuzzing the model loader (issue #29, slow pass): damaged and crafted files give a model or a
ModelFormatError, never another exception, a crash or a hang.

Kinds of files, from three saved models (a store test model, a BiCVM and a Cr5):

- ``flip``: 1-3 random bytes flipped anywhere (header included);
- ``truncate``: the file cut at a random length;
- ``attribute``: a root or dataset attribute rewritten (the model's class, the format version, the
  parameters' JSON, a dataset's kind, checksum or sparse shape), the file's SHA-256 recomputed so
  that the edit reaches the layout checks (a forged file, not a damaged one);
- ``shape``: a dataset replaced by one of another shape, dtype or a huge declared size, resealed.

Each load runs in a worker process that reports one line per file; a file that takes more than
10 s is a hang (the worker is killed and a new one goes on), a worker that dies is a crash.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import h5py
import numpy as np
import pytest
from test_io import Dummy, _reseal

pytestmark = pytest.mark.slow

_WORKER = r"""
import sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import test_io                      # registers the store test model
import linxling
from linxling.io import ModelFormatError
for line in sys.stdin:
    i, path = line.rstrip("\n").split("\t", 1)
    try:
        linxling.load(path)
        out = "ok"
    except ModelFormatError:
        out = "ModelFormatError"
    except FileNotFoundError:
        out = "ModelFormatError"
    except BaseException as exc:                      # what the fuzz is looking for
        out = "other " + type(exc).__name__ + ": " + str(exc)[:200].replace("\n", " ")
    print(i, out, flush=True)
"""


def _bases(tmp_path):
    from linxling import BiCVM, Cr5
    rng = np.random.default_rng(0)
    paths = []
    p = tmp_path / "dummy.h5"
    import scipy.sparse as sp
    Dummy({"k": 1, "name": "x"}, {"W": rng.standard_normal((20, 5)), "names": np.array(["a", "b", "c"]),
                                  "S": sp.random(10, 8, density=0.3, random_state=0, format="csr"),
                                  "sub": {"v": np.arange(4)}}).save(p)
    paths.append(p)
    en = [f"w{i % 9} w{(i * 3) % 11} w{i % 4}" for i in range(40)]
    de = [t.replace("w", "v") for t in en]
    p = tmp_path / "bicvm.h5"
    BiCVM(n_components=8, n_epochs=1, random_state=0, show_progress=False).fit({"en": en, "de": de}).save(p)
    paths.append(p)
    p = tmp_path / "cr5.h5"
    Cr5(n_components=3, min_df=1, doc_filter=None, random_state=0, show_progress=False).fit(
        en + de, ["en"] * 40 + ["de"] * 40, list(range(40)) * 2).save(p)
    paths.append(p)
    return paths


def _flip(data, rng):
    data = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(0, len(data)))
        data[i] ^= 1 << int(rng.integers(0, 8))
    return bytes(data)


def _edit_attribute(path, rng):
    with h5py.File(path, "a") as f:
        datasets = []
        f.visititems(lambda n, o: datasets.append(n) if isinstance(o, h5py.Dataset) else None)
        choice = int(rng.integers(0, 7))
        if choice == 0:
            f.attrs["model"] = str(rng.choice(["Cr5", "BiCVM", "WMF", "CompressTree", "BilDRL", "Nope", ""]))
        elif choice == 1:
            f.attrs["format_version"] = int(rng.integers(-3, 5))
        elif choice == 2:
            params = json.loads(f.attrs["params"])
            key = str(rng.choice(sorted(params) or ["x"]))
            params[key] = [None, -1, 1e300, "x", [1, 2], {"a": 1}][int(rng.integers(0, 6))]
            f.attrs["params"] = json.dumps(params)
            if "params_crc32" in f.attrs:
                del f.attrs["params_crc32"]
        elif choice == 3:
            f.attrs["params"] = "{" + "x" * int(rng.integers(0, 50))
        elif datasets:
            ds = f[str(rng.choice(datasets))]
            if choice == 4:
                ds.attrs["kind"] = str(rng.choice(["array", "str", "dict", "sparse", "weird"]))
            elif choice == 5:
                ds.attrs["crc32"] = np.int64(rng.integers(0, 2 ** 31))
            else:
                parent = ds.parent
                if parent.attrs.get("kind") == "sparse":
                    parent.attrs["shape"] = np.asarray(rng.integers(-5, 10 ** 6, 2), dtype=np.int64)
                else:
                    ds.attrs["crc32"] = np.int64(0)
    _reseal(path)


def _edit_shape(path, rng):
    with h5py.File(path, "a") as f:
        datasets = []
        f.visititems(lambda n, o: datasets.append(n) if isinstance(o, h5py.Dataset) else None)
        name = str(rng.choice(datasets))
        attrs = dict(f[name].attrs)
        del f[name]
        kind = int(rng.integers(0, 4))
        if kind == 0:
            shape = tuple(int(x) for x in rng.integers(1, 50, int(rng.integers(1, 3))))
            ds = f.create_dataset(name, data=np.zeros(shape))
        elif kind == 1:
            ds = f.create_dataset(name, shape=(int(rng.integers(2 ** 30, 2 ** 40)),), dtype="f8")
        elif kind == 2:
            ds = f.create_dataset(name, data=np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]))
        else:
            ds = f.create_dataset(name, data=np.arange(int(rng.integers(0, 5)), dtype=np.int8))
        for k, v in attrs.items():
            if k != "crc32":
                ds.attrs[k] = v
    _reseal(path)


def _make_cases(tmp_path, n_flip=600, n_trunc=200, n_attr=200, n_shape=100):
    rng = np.random.default_rng(2026)
    bases = _bases(tmp_path)
    blobs = [open(p, "rb").read() for p in bases]
    cases = []
    for kind, n in (("flip", n_flip), ("truncate", n_trunc), ("attribute", n_attr), ("shape", n_shape)):
        for i in range(n):
            b = int(rng.integers(0, len(bases)))
            path = tmp_path / f"{kind}_{i}.h5"
            if kind == "flip":
                path.write_bytes(_flip(blobs[b], rng))
            elif kind == "truncate":
                path.write_bytes(blobs[b][:int(rng.integers(0, len(blobs[b])))])
            else:
                path.write_bytes(blobs[b])
                try:
                    (_edit_attribute if kind == "attribute" else _edit_shape)(path, rng)
                except (OSError, ValueError, TypeError, KeyError):
                    continue                           # an edit h5py refuses: not a file to try
            cases.append((kind, str(path)))
    return cases


def _run(cases, timeout=10.0):
    here = os.path.dirname(os.path.abspath(__file__))
    results = {}
    start = 0
    while start < len(cases):
        w = subprocess.Popen([sys.executable, "-c", _WORKER, here], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        for i in range(start, len(cases)):
            w.stdin.write(f"{i}\t{cases[i][1]}\n")
        w.stdin.close()
        i = start
        while i < len(cases):
            ready, _, _ = select.select([w.stdout], [], [], timeout)
            if not ready:
                results[i] = "hang"
                w.kill()
                break
            line = w.stdout.readline()
            if not line:
                results[i] = f"crash (exit {w.wait()})"
                break
            j, out = line.rstrip("\n").split(" ", 1)
            results[int(j)] = out
            i = int(j) + 1
        w.kill()
        w.wait()
        start = i + 1 if i < len(cases) and i in results else i
    return results


def test_damaged_and_crafted_files_are_model_format_errors(tmp_path):
    cases = _make_cases(tmp_path)
    results = _run(cases)
    table: dict = {}
    for i, (kind, _) in enumerate(cases):
        out = results.get(i, "missing").split(":")[0]
        table.setdefault(kind, {}).setdefault(out, 0)
        table[kind][out] += 1
    print(json.dumps(table, indent=1))
    bad = [(cases[i][0], out) for i, out in results.items() if out.split(" ")[0] not in ("ok", "ModelFormatError")]
    assert not bad, (table, bad[:10])
    assert sum(v.get("ModelFormatError", 0) for v in table.values()) > 0.8 * len(cases)
    assert all(v.get("ModelFormatError", 0) == sum(v.values()) for k, v in table.items() if k in ("flip", "truncate"))
