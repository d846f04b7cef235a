"""Reliability, round 3 (issue #29): hostile and damaged files, and writes that keep their promises.

A model file that was crafted (its SHA-256 recomputed after the edit, so that the checksum does not
stop it) is still refused before any of its data is read when its layout is not what the store
writes: external raw storage (which read a secret file into the model), external and soft links,
a dataset declaring far more bytes than the file holds. Writes: a read-only target is refused, a
symbolic link is replaced (its target untouched), a full disk and Ctrl-C leave the old model and
the interpreter healthy.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from test_io import Dummy, _reseal

from linxling.io import ModelFormatError, load


def _saved(tmp_path, name="m.h5"):
    path = tmp_path / name
    Dummy({"k": 1}, {"A": np.arange(6.0)}).save(path)
    return path


def test_external_raw_storage_is_refused_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOKEN-1234567890" * 4)
    path = _saved(tmp_path)
    with h5py.File(path, "a") as f:
        ds = f["arrays"].create_dataset("leak", shape=(64,), dtype="u1", external=[(str(secret), 0, 64)])
        ds.attrs["kind"] = "array"
    _reseal(path)
    with pytest.raises(ModelFormatError, match=r"arrays/leak keeps its data in external file"):
        load(path)


@pytest.mark.parametrize("kind", ["external", "soft"])
def test_links_to_other_data_are_refused(tmp_path, kind):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(5.0)
    path = _saved(tmp_path)
    with h5py.File(path, "a") as f:
        f["arrays"]["B"] = (h5py.ExternalLink(str(other), "x") if kind == "external"
                            else h5py.SoftLink("/arrays/A"))
    _reseal(path)
    with pytest.raises(ModelFormatError, match=r"arrays/B is a (ExternalLink|SoftLink)"):
        load(path)


def test_a_small_file_declaring_a_huge_dataset_is_refused_at_once(tmp_path):
    path = _saved(tmp_path)
    with h5py.File(path, "a") as f:
        ds = f["arrays"].create_dataset("big", shape=(2 ** 33,), dtype="f8")     # 64 GiB, no storage
        ds.attrs["kind"] = "array"
    _reseal(path)
    t = time.perf_counter()
    with pytest.raises(ModelFormatError, match=r"arrays/big declares shape \(8589934592,\)"):
        load(path)
    assert time.perf_counter() - t < 5


def test_a_fifo_is_not_opened(tmp_path):
    fifo = tmp_path / "m.h5"
    os.mkfifo(fifo)
    with pytest.raises(ModelFormatError, match="not a regular file"):
        load(fifo)


def test_a_file_written_before_the_header_still_loads(tmp_path):
    from linxling.io._store import HEADER_SIZE
    path = _saved(tmp_path)
    data = Path(path).read_bytes()
    legacy = tmp_path / "legacy.h5"
    legacy.write_bytes(data[HEADER_SIZE:])             # an HDF5 file from before the header
    np.testing.assert_array_equal(load(legacy).arrays["A"], np.arange(6.0))


def test_a_read_only_target_is_refused_and_a_symlink_replaced_not_followed(tmp_path):
    path = _saved(tmp_path)
    os.chmod(path, 0o444)
    before = Path(path).read_bytes()
    with pytest.raises(PermissionError, match="read-only"):
        Dummy({"k": 2}, {"A": np.zeros(3)}).save(path)
    assert Path(path).read_bytes() == before
    target = tmp_path / "target.bin"
    target.write_bytes(b"precious")
    link = tmp_path / "link.h5"
    os.symlink(target, link)
    Dummy({"k": 3}, {"A": np.zeros(3)}).save(link)
    assert target.read_bytes() == b"precious" and not os.path.islink(link)
    assert load(link).params["k"] == 3


@pytest.mark.parametrize("bad", ["", "x.h5/"])
def test_bad_paths_are_named_not_the_temporary(tmp_path, bad, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises((ValueError, IsADirectoryError)) as exc:
        Dummy({}, {}).save(bad)
    assert ".tmp" not in str(exc.value)



@pytest.mark.parametrize("bad, exc, match", [
    (None, TypeError, r"^path must be a str or os.PathLike \(the file to write\), got NoneType"),
    (3, TypeError, r"^path must be a str or os.PathLike .*got int"),
    ("a\0b.h5", ValueError, r"^path 'a\\x00b.h5' contains a NUL character"),
])
def test_a_path_that_is_no_file_name_is_named(tmp_path, bad, exc, match, monkeypatch):
    """save(None) and save(3) raised os.fsdecode's "expected str, bytes or os.PathLike object,
    not NoneType", and a NUL os.stat's "embedded null byte": neither named the path."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(exc, match=match):
        Dummy({}, {}).save(bad)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["x" * 240, "é" * 120 + ".h5", "y" * 255])
def test_a_long_legal_file_name_saves_and_its_stale_temporaries_are_removed(tmp_path, name):
    """A name of 228-255 bytes is legal, but the temporary file (the name plus ~28 bytes) was
    not: every save to it failed with 'File name too long'."""
    import linxling.io._store as st
    path = tmp_path / name
    stale = tmp_path / (st._tmp_prefix(str(path)) + "99999999.abcdefgh.tmp")   # of a killed save
    assert len(os.fsencode(stale.name)) <= 255
    stale.write_bytes(b"half a model")
    Dummy({"k": 1}, {"A": np.arange(3.0)}).save(path)
    assert load(path).params["k"] == 1 and load(str(path)).params["k"] == 1
    assert sorted(os.listdir(tmp_path)) == [name]
    other = tmp_path / (name[:-1] + "z")            # the same first 183 bytes: its own temporaries
    assert st._tmp_prefix(str(other)) != st._tmp_prefix(str(path))


def test_bytes_paths_save_and_load(tmp_path):
    """A bytes path (os.fsencode) loaded but did not save: 'path is empty'."""
    path = os.fsencode(tmp_path / "m.h5")
    Dummy({"k": 4}, {"A": np.arange(3.0)}).save(path)
    assert load(path).params["k"] == 4 and load(tmp_path / "m.h5").params["k"] == 4


_CHILD = r"""
import os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from test_io import Dummy
from linxling.io import load
path, mode = sys.argv[1], sys.argv[3]
big = {"A": np.random.default_rng(0).standard_normal((400, 1000))}
if mode == "full":
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))   # the disk is full at 100 kB
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        Dummy({"k": 2}, big).save(path, compression=None)
    except OSError as exc:
        print("OSError", exc.errno, flush=True)
elif mode == "sigint":
    import linxling.io._store as st
    real = st._file_header
    def header_then_interrupt(image):
        os.kill(os.getpid(), signal.SIGINT)             # Ctrl-C in the middle of the save
        return real(image)
    st._file_header = header_then_interrupt
    try:
        Dummy({"k": 2}, big).save(path)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
print("old", load(path).params["k"], flush=True)
"""


@pytest.mark.parametrize("mode", ["full", "sigint"])
def test_a_full_disk_or_ctrl_c_keeps_the_old_model_and_the_interpreter_healthy(tmp_path, mode):
    """Issue #29: a disk-full save used to end in "RuntimeError: Can't destroy cache" and a
    crash at exit; SIGINT during a save was swallowed and the save completed."""
    path = _saved(tmp_path)
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), here, mode], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]       # no crash at exit
    assert "Can't destroy cache" not in out.stderr and "Exception ignored" not in out.stderr
    first = "OSError 27" if mode == "full" else "KeyboardInterrupt"
    assert out.stdout.splitlines() == [first, "old 1"], out.stdout
    assert sorted(os.listdir(tmp_path)) == ["m.h5"]       # no temporary left


def test_a_crafted_vector_table_smaller_than_its_vocabulary_is_refused(tmp_path):
    """A 1 MB BiCVM file with 100,000 words and a 1 x 4096 table made transform read out of
    bounds (a segfault); a table shorter than the word list gave garbage."""
    from linxling import BiCVM

    m = BiCVM(n_components=8, n_epochs=1, random_state=0, show_progress=False).fit(
        {"en": ["a b c", "b c d", "c d a"], "de": ["x y z", "y z w", "z w x"]})
    path = tmp_path / "b.h5"
    m.save(path)
    with h5py.File(path, "a") as f:
        del f["arrays/vectors/en"]
        ds = f["arrays/vectors"].create_dataset("en", data=np.zeros((1, 4096), np.float32))
        ds.attrs["kind"] = "array"
        del f["arrays/words/en"]
        ws = f["arrays/words"].create_dataset("en", data=np.array([f"w{i}" for i in range(100_000)], dtype=object),
                                             dtype=h5py.string_dtype("utf-8"))
        ws.attrs["kind"] = "str"
    _reseal(path)
    with pytest.raises(ModelFormatError, match=r"arrays/vectors/en has shape \(1, 4096\) but arrays/words/en "
                                               r"lists 100000 words"):
        load(path)


def test_an_npy_export_writes_both_files_or_neither(tmp_path, monkeypatch):
    """A failure while writing the vocabulary left a new matrix next to the old vocabulary."""
    from linxling.io import export_vectors
    path = str(tmp_path / "v.npy")
    export_vectors(path, np.ones((3, 2)), ["a", "b", "c"], format="npy")
    before = (Path(path).read_bytes(), Path(tmp_path / "v.vocab.txt").read_bytes())
    # the words are checked before anything is written (a lone surrogate is refused naming it);
    # with that check off, the surrogate makes the vocabulary's write fail after the matrix's
    monkeypatch.setattr("linxling.io._export.check_unicode", lambda *args: None)
    with pytest.raises(UnicodeEncodeError):
        export_vectors(path, np.zeros((3, 2)), ["x", "y", "\udcff"], format="npy")   # the vocabulary fails
    assert (Path(path).read_bytes(), Path(tmp_path / "v.vocab.txt").read_bytes()) == before
    assert sorted(os.listdir(tmp_path)) == ["v.npy", "v.vocab.txt"]


def test_silent_and_obscure_cases_are_said():
    """Issue #29, "silent or obscure": each an error or a result that names the problem."""
    import scipy.sparse as sp

    from linxling import WMF, CompressTree, Cr5, CrossWMF
    from linxling._memory import parse_budget
    X = sp.random(40, 20, density=0.3, random_state=0, format="csr")
    with pytest.raises(ValueError, match=r"'max_iter' parameter of WMF must be an int in the range \[1, inf\)\. Got 0"):
        WMF(max_iter=0).fit(X)                              # used to return random factors as fitted
    with pytest.raises(ValueError, match=r"concepts\['en'\]\[1\] is NaN"):
        Cr5(n_components=2, min_df=1, doc_filter=None).fit(["a b", "b c", "x y", "y z"], ["en", "en", "es", "es"],
                                [0.0, float("nan"), 0.0, 1.0])
    en = [f"w{i % 7} w{(i * 3) % 11} w{i % 5}" for i in range(30)]
    es = [t.replace("w", "p") for t in en]
    m = CrossWMF(n_components=2, max_iter=2, min_df=1, random_state=0, show_progress=False)
    m.fit({"es": ((t for t in en), (t for t in es))})      # generators: said "X is empty"
    assert m.transform(es[:3], "es").shape == (3, 2)
    ct = CompressTree(n_components=4, n_epochs=1, random_state=0, show_progress=False).fit(en)
    Z = ct.transform(["w1 w2", "", "w3"])                   # the CLI's empty line: a zero row
    assert Z.shape == (3, 4) and not Z[1].any() and Z[0].any()
    with pytest.raises(ValueError, match="memory_budget must be a finite number"):
        parse_budget("inf")


def test_cli_errors_are_one_line(tmp_path, monkeypatch, capsys):
    """A PermissionError (a read-only output) is the CLI's one-line error, not a traceback."""
    from linxling.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / "en.txt").write_text("a b c\nb c d\nc d e\n", encoding="utf-8")
    assert main(["--no-progress", "fit", "wmf", "--input", "en.txt", "--output", "m.h5", "--n-components", "2",
                 "--min-df", "1", "--max-iter", "1"]) == 0
    capsys.readouterr()                        # the fit's confirmation line, on stderr
    os.chmod(tmp_path / "m.h5", 0o444)
    assert main(["--no-progress", "fit", "wmf", "--input", "en.txt", "--output", "m.h5", "--n-components", "2",
                 "--min-df", "1", "--max-iter", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("linxling: error:") and "read-only" in err and "Traceback" not in err


# --------------------------------------------------------------------------- inconsistent model files
# A file whose datasets disagree with each other (crafted, or assembled from two models, with its
# SHA-256 recomputed) loaded without complaint into Cr5, CL-LSI, the WMF models, BilBOWA and
# GlossSpace, then failed in transform (an IndexError, a shape error in a kernel) or gave word lists
# of another length than their vectors; BiCVM, which checked its shapes, took NaN and integer
# tables. Each model's _from_state now checks what it relies on; the store reports its ValueError
# as a ModelFormatError naming the file.

def _corpus_pair(n=60, vocab=40, seed=0):
    from tests.test_contract import _corpus
    return _corpus(n, vocab, seed)


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """One small fitted model of each kind, saved: name -> (path, model, language)."""
    import warnings

    from linxling import CLLSI, WMF, BiCVM, BilingualWMF, Cr5, CrossWMF
    from linxling.models.bilbowa import BilBOWA
    from linxling.models.gloss_space import GlossSpace
    en, de = _corpus_pair()
    langs, concepts = ["en"] * 60 + ["de"] * 60, list(range(60)) * 2
    fits = {
        "Cr5": lambda: Cr5(n_components=5, min_df=1, random_state=0).fit(en + de, langs, concepts),
        "CLLSI": lambda: CLLSI(n_components=5, random_state=0).fit(en + de, langs, concepts),
        "WMF": lambda: WMF(n_components=4, max_iter=2, random_state=0, show_progress=False).fit(en),
        "BilingualWMF": lambda: BilingualWMF(n_components=4, max_iter=2, random_state=0,
                                             show_progress=False).fit({"en": en, "de": de}),
        "CrossWMF": lambda: CrossWMF(pivot_language="en", n_components=4, max_iter=2, random_state=0,
                                     show_progress=False).fit({"de": (en, de)}),
        "BilBOWA": lambda: BilBOWA(n_components=4, n_epochs=1, min_count=1, random_state=0,
                                   show_progress=False).fit({"en": en, "de": de}, {"en": en, "de": de}),
        "BiCVM": lambda: BiCVM(n_components=8, n_epochs=1, random_state=0, n_threads=1,
                               show_progress=False).fit({"en": en, "de": de}),
        "GlossSpace": lambda: GlossSpace(n_components=4, min_df=1, random_state=0, show_progress=False).fit(
            en + de, langs, concepts, {"en": {"w1": ["w2 w3"], "gloss": ["w4 w5 w6"]}, "de": {"v1": ["v2 v3"]}}),
    }
    folder = tmp_path_factory.mktemp("models")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fit in fits.items():
            model = fit()
            path = folder / f"{name}.h5"
            model.save(path)
            out[name] = (path, model, "en")
    return out


def _rewrite(path, key, value):
    """Replace dataset ``arrays/<key>`` with ``value``, stored as the store stores it (kind, CRC-32)."""
    from linxling.io._store import _crc32
    value = np.asarray(value)
    with h5py.File(path, "a") as f:
        del f[f"arrays/{key}"]
        if value.dtype.kind in "OU":
            value = value.astype(object)
            ds = f.create_dataset(f"arrays/{key}", data=value, dtype=h5py.string_dtype("utf-8"))
            ds.attrs.update(kind="str", str_dtype="object")
        else:
            ds = f.create_dataset(f"arrays/{key}", data=value)
            ds.attrs["kind"] = "array"
        ds.attrs["crc32"] = np.int64(_crc32(value))


def _read(path, key):
    with h5py.File(path, "r") as f:
        ds = f[f"arrays/{key}"]
        return ds.asstr()[()] if ds.attrs.get("kind") == "str" else ds[()]


def _with_nan(a):
    a = np.array(a, copy=True)
    a.flat[a.size // 2] = np.nan
    return a


def _shorter_vectorizer(prefix):
    """A vectoriser consistent in itself (vocabulary, idf, df) but one word short of its matrix."""
    return [(f"{prefix}/{part}", lambda a: a[:-1]) for part in ("vocabulary", "idf", "df")]


INCONSISTENT = [
    ("Cr5", [("components/de", lambda a: a[:-1])],
     r"arrays/components/de has shape \(4, 40\): 4 components, but arrays/singular_values holds 5"),
    ("Cr5", [("components/en", lambda a: np.rint(a * 10).astype(np.int64))],
     r"arrays/components/en has dtype int64"),
    ("Cr5", [("singular_values", _with_nan)], r"arrays/singular_values holds NaN or infinite values"),
    ("Cr5", _shorter_vectorizer("vectorizers/en"),
     r"arrays/vectorizers/en/vocabulary lists 39 words but arrays/components/en has 40 columns"),
    ("CLLSI", [("singular_values", lambda a: a[:-1])],
     r"arrays/components/en has shape \(5, \d+\): 5 components, but arrays/singular_values holds 4"),
    ("CLLSI", [("components/en", lambda a: a[None])],
     r"arrays/components/en has shape \(1, 5, \d+\); the model stores a 2-D array"),
    ("WMF", [("embedding", lambda a: a[:, :-1])],
     r"arrays/embedding has shape \(60, 3\) but arrays/components has shape \(4, \d+\)"),
    ("WMF", [("components", _with_nan)], r"arrays/components holds NaN or infinite values"),
    ("WMF", _shorter_vectorizer("vectorizer"),
     r"arrays/vectorizer/vocabulary lists (\d+) words but arrays/components has (?!\1)\d+ columns"),
    ("BilingualWMF", [("components/de", lambda a: a[:-1])],
     r"arrays/components/de has shape \(3, \d+\): 3 components, but arrays/embedding \(60, 4\) has 4"),
    ("BilingualWMF", _shorter_vectorizer("vectorizers/de"),
     r"arrays/vectorizers/de/vocabulary lists \d+ words but arrays/components/de has \d+ columns"),
    ("CrossWMF", [("components/de", lambda a: a[:-1])],
     r"arrays/components/de has shape \(3, \d+\): 3 components, but the pivot's arrays/pivot/components"),
    ("CrossWMF", [("pivot/components", lambda a: a.ravel())],
     r"arrays/pivot/components has shape \(\d+,\); the model stores a 2-D array"),
    ("BilBOWA", [("words/en", lambda a: a[:-1])], r"arrays/words/en lists 39 words but arrays/vectors/en \(40, 4\) "
                                                  r"has 40"),
    ("BilBOWA", [("vectors/de", lambda a: a.astype(np.complex64))], r"arrays/vectors/de has dtype complex64"),
    ("BilBOWA", [("vectors/de", lambda a: a[:, :-1])],
     r"arrays/vectors/de has shape \(40, 3\), vectors of dimension 3, but the model has n_components=4"),
    ("BilBOWA", [("words/de", lambda a: np.concatenate([a[:1], a[:-1]]))], r"arrays/words/de lists a word more "
                                                                           r"than once"),
    ("BiCVM", [("vectors/en", _with_nan)], r"arrays/vectors/en holds NaN or infinite values"),
    ("BiCVM", [("means/de", lambda a: a.astype(np.int64))], r"arrays/means/de has dtype int64"),
    ("GlossSpace", [("vectors/en", lambda a: a[:, :-1])],
     r"arrays/vectors/en has shape \(41, 3\), vectors of dimension 3, but the document model has 4 components"),
    ("GlossSpace", [("words/de", lambda a: a[:-2])], r"arrays/words/de lists 38 words but arrays/vectors/de"),
    ("GlossSpace", [("document_model/components/en", lambda a: a[:-1])],
     r"arrays/document_model/components/en has shape \(3, 40\): 3 components, but "
     r"arrays/document_model/singular_values holds 4"),
]


@pytest.mark.parametrize("name, edits, message", INCONSISTENT,
                         ids=[f"{c[0]}-{c[1][0][0].replace('/', '.')}-{i}" for i, c in enumerate(INCONSISTENT)])
def test_a_model_file_whose_arrays_disagree_is_refused_at_load(model_files, tmp_path, name, edits, message):
    import shutil

    import linxling
    source, model, _ = model_files[name]
    path = tmp_path / f"{name}.h5"
    shutil.copy(source, path)
    for key, edit in edits:
        _rewrite(path, key, edit(_read(path, key)))
    _reseal(path)                              # crafted: the checksum does not stop it
    with pytest.raises(ModelFormatError, match=message) as info:
        linxling.load(path)
    assert str(info.value).startswith(f"{path}: its {name} state is inconsistent (ValueError: ")
    with pytest.raises(ModelFormatError, match=message):
        type(model).load(path)


@pytest.mark.parametrize("name", ["Cr5", "CLLSI", "WMF", "BilingualWMF", "CrossWMF", "BilBOWA", "BiCVM",
                                  "GlossSpace"])
def test_the_unedited_files_load_and_embed_alike(model_files, tmp_path, name):
    """The checks refuse only what disagrees: each file as saved (and rewritten unchanged by the
    tests' own helper) loads into a model that embeds as the fitted one."""
    import shutil

    import linxling
    source, model, lang = model_files[name]
    path = tmp_path / f"{name}.h5"
    shutil.copy(source, path)
    key = {"WMF": "components", "CrossWMF": "pivot/components", "BilBOWA": "vectors/en", "BiCVM": "vectors/en",
           "GlossSpace": "vectors/en"}.get(name, "components/en")
    _rewrite(path, key, _read(path, key))
    _reseal(path)
    back = linxling.load(path)
    texts = ["w1 w2 w3", "w4 w5"]
    np.testing.assert_allclose(back.transform(texts, language=lang), model.transform(texts, language=lang),
                               rtol=1e-12, atol=0)
    words, vectors = back.word_vectors(lang)
    assert words is None or len(words) == len(vectors)
