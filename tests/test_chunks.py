"""Out-of-core corpus (linxling.io.write_chunks / ChunkedCSR) and WMF streaming its chunks."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _corpora import sentence_matrix

from linxling.io import ChunkedCSR, write_chunks
from linxling.models.wmf import WMF


def _same(a, b, dtype=np.float64):
    """Equal up to rounding: each row's solve is the same arithmetic in both fits, but the
    kernels' fastmath reductions may be vectorised differently for differently aligned arrays,
    so the last bits can differ (and grow a little over the iterations)."""
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert np.linalg.norm(a - b) <= tol * np.linalg.norm(b), np.linalg.norm(a - b) / np.linalg.norm(b)


def _corpus(n=120, m=45, seed=0, dtype=np.float64):
    return sentence_matrix(n, m, seed=seed, dtype=dtype, density=0.12, empty_row=7, empty_col=3)


@pytest.mark.filterwarnings("ignore:write_chunks. memory_budget:UserWarning")   # a tiny budget on purpose: many passes
def test_write_and_read_round_trip(tmp_path):
    X = _corpus()
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=17, memory_budget=400)
    assert isinstance(C, ChunkedCSR) and C.shape == X.shape and C.nnz == X.nnz
    assert C.n_chunks == int(np.ceil(120 / 17))
    assert (C.to_csr() != X).nnz == 0
    assert (C.T.to_csr() != X.T.tocsr()).nnz == 0
    got = sp.vstack([B for _, B in C.chunks()], format="csr")
    assert (got != X).nnz == 0
    starts = [r0 for r0, _ in C]
    assert starts == list(C.bounds[:-1])
    assert C.nbytes == 8 * 121 + 12 * X.nnz


def test_transpose_chunks_are_bounded_whatever_the_gather_budget(tmp_path, monkeypatch):
    """A large transpose budget means fewer passes over the corpus, not larger stored chunks."""
    import linxling.io._chunks as chunks_mod
    X = _corpus(n=300, m=60)
    passes = []
    orig = chunks_mod.ChunkedCSR.chunks

    def counting(self):
        passes.append(self.group)
        return orig(self)

    monkeypatch.setattr(chunks_mod.ChunkedCSR, "chunks", counting)
    C = write_chunks(tmp_path / "big.h5", X, chunk_rows=7, memory_budget="1G")
    assert np.diff(C.T.bounds).max() <= 7 and C.T.n_chunks >= 60 // 7
    assert passes == ["X", "X"]            # the column counts, then one gather of every column
    assert (C.T.to_csr() != X.T.tocsr()).nnz == 0
    passes.clear()
    monkeypatch.setattr(chunks_mod, "_DEFAULT_CHUNK_BYTES", 12 * 40)      # about 40 nonzeros per chunk
    D = write_chunks(tmp_path / "small.h5", X, memory_budget="1G")
    assert passes == ["X", "X"] and D.T.n_chunks > 10
    nnz_per = np.diff(D.T.indptr[D.T.bounds])
    col_nnz = np.diff(D.T.indptr)
    assert np.all((nnz_per <= 40) | (np.diff(D.T.bounds) == 1)), (nnz_per, col_nnz.max())
    assert (D.T.to_csr() != X.T.tocsr()).nnz == 0


def test_write_from_generator_of_blocks(tmp_path):
    X = _corpus(dtype=np.float32)
    blocks = (X[i:i + 25] for i in range(0, 120, 25))
    C = write_chunks(tmp_path / "g.h5", blocks, chunk_rows=10)
    assert C.dtype == np.float32
    assert (C.to_csr() != X).nnz == 0 and (C.T.to_csr() != X.T.tocsr()).nnz == 0
    assert np.all(np.diff(C.bounds) <= 10)



def test_chunk_rows_sets_the_stored_chunks_whatever_the_blocks(tmp_path):
    """chunk_rows is the rows of every stored chunk (the last may be shorter): a generator of
    one document at a time was stored one row a chunk, and a streamed WMF fit then read the
    corpus row by row (one read per sentence)."""
    X = _corpus(dtype=np.float32)
    C = write_chunks(tmp_path / "rows.h5", (X[i:i + 1] for i in range(120)), chunk_rows=50)
    assert C.bounds.tolist() == [0, 50, 100, 120]
    assert (C.to_csr() != X).nnz == 0 and (C.T.to_csr() != X.T.tocsr()).nnz == 0
    sizes = [7, 0, 30, 1, 45, 37]                          # smaller and larger than a chunk, one empty
    cuts = np.cumsum([0, *sizes])
    D = write_chunks(tmp_path / "mixed.h5", (X[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)), chunk_rows=20)
    assert D.bounds.tolist() == [0, 20, 40, 60, 80, 100, 120]
    assert (D.to_csr() != X).nnz == 0
    E = write_chunks(tmp_path / "given.h5", (X[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)))
    assert E.bounds.tolist() == [0, 7, 37, 38, 83, 120]     # without chunk_rows: the blocks as given
    model = WMF(n_components=4, max_iter=1, random_state=0).fit(C)
    assert model.memory_plan_["reads_per_pass"][0] == 3


def test_n_cols_mismatch_names_the_argument(tmp_path):
    X = _corpus()
    with pytest.raises(ValueError, match=r"X has 45 columns, but n_cols=44"):
        write_chunks(tmp_path / "a.h5", X, n_cols=44)
    with pytest.raises(ValueError, match=r"X chunk 0 has 45 columns, but n_cols=44"):
        write_chunks(tmp_path / "b.h5", [X[:10]], n_cols=44)
    with pytest.raises(ValueError, match=r"X chunk 1 has 30 columns, but the first chunk has 45"):
        write_chunks(tmp_path / "c.h5", [X[:10], X[10:20, :30]])

def test_write_errors(tmp_path):
    X = _corpus()
    write_chunks(tmp_path / "a.h5", X)
    with pytest.raises(FileExistsError, match="exists"):
        write_chunks(tmp_path / "a.h5", X)
    with pytest.raises(ValueError, match="chunk_rows"):
        write_chunks(tmp_path / "b.h5", X, chunk_rows=0)
    with pytest.raises(ValueError, match="columns"):
        write_chunks(tmp_path / "c.h5", [X[:10], X[10:20, :30]])
    with pytest.raises(ValueError, match="non-finite|NaN|inf"):
        Y = X.copy()
        Y.data[0] = np.nan
        write_chunks(tmp_path / "d.h5", Y)
    with pytest.raises(ValueError, match="no row blocks"):
        write_chunks(tmp_path / "e.h5", iter([]))
    assert not (tmp_path / "d.h5").exists()
    with pytest.raises(ValueError, match="XT"):
        ChunkedCSR(write_chunks(tmp_path / "f.h5", X, transpose=False).path, "XT")
    with pytest.raises(FileNotFoundError):
        ChunkedCSR(tmp_path / "missing.h5")
    with pytest.raises(IsADirectoryError, match="is a directory"):          # before any work
        write_chunks(tmp_path, X, overwrite=True)
    with pytest.raises(FileNotFoundError, match="nodir.* does not exist"):    # named, not the temporary file
        write_chunks(tmp_path / "nodir" / "x.h5", X)
    assert not list(tmp_path.glob(".*.tmp")) and not (tmp_path / "nodir").exists()


@pytest.mark.filterwarnings("ignore:write_chunks. memory_budget:UserWarning")   # a tiny budget on purpose: many passes
@pytest.mark.parametrize("solver", ["cg", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wmf_streaming_equals_in_memory(tmp_path, solver, dtype):
    X = _corpus(dtype=dtype)
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=13, memory_budget=300)
    kw = dict(n_components=5, alpha=0.5, max_iter=4, solver=solver, random_state=0)
    ref = WMF(**kw).fit(X)
    got = WMF(**kw).fit(C)
    assert got.components_.dtype == dtype
    # each row's solve is independent of the chunking: the same factors up to rounding
    _same(got.embedding_, ref.embedding_, dtype)
    _same(got.components_, ref.components_, dtype)
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=1e-5 if dtype == np.float32 else 1e-10)
    assert np.all(got.embedding_[7] == 0)


def test_wmf_streaming_with_budget(tmp_path):
    X = _corpus(n=300, m=60)
    C = write_chunks(tmp_path / "c.h5", X)               # one stored chunk: the fit re-slices
    assert C.n_chunks == 1
    k = 4
    fixed = (300 + 60) * k * 8 + 8 * 362 + 2 * k * k * 8
    budget = fixed + 36 * 200                           # ~200 nonzeros per read
    ref = WMF(n_components=k, max_iter=2, random_state=0).fit(X)
    got = WMF(n_components=k, max_iter=2, random_state=0).fit(C, memory_budget=budget)
    assert got.memory_plan_["reads_per_pass"][0] >= X.nnz // 200
    _same(got.embedding_, ref.embedding_)
    with pytest.raises(MemoryError, match="memory_budget"):
        WMF(n_components=k, max_iter=1).fit(C, memory_budget=fixed)
    with pytest.raises(ValueError, match="memory_budget"):
        WMF(n_components=k, max_iter=1).fit(X, memory_budget="1G")
    with pytest.raises(ValueError, match="memory_budget"):
        WMF(n_components=k, max_iter=1).fit(C, memory_budget="lots")


def test_a_refit_in_memory_drops_the_streamed_fits_memory_plan(tmp_path):
    """memory_plan_ (and dask_info_, set the same way) describe the fit that streamed or ran on
    a cluster: an in-memory refit kept the old one, as if it had streamed too."""
    X = _corpus(n=90, m=40)
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=13)
    m = WMF(n_components=3, max_iter=1, random_state=0).fit(C, memory_budget=(90 + 40) * 3 * 8 + 8 * 400 + 36 * 150)
    assert "reads_per_pass" in m.memory_plan_
    m.fit(X)
    assert set(m.__dict__) == set(WMF(n_components=3, max_iter=1, random_state=0).fit(X).__dict__)
    assert not hasattr(m, "memory_plan_") and not hasattr(m, "dask_info_")


def test_a_streamed_fit_records_its_plan_in_fit_info_and_saves_it(tmp_path):
    """The plan of a streamed WMF fit is ``fit_info_["memory_plan"]`` (as Cr5's); the name
    before it, ``memory_plan_``, is that same dict; both come back from a saved model (the
    plan was not saved before)."""
    from linxling import load
    from linxling.models._estimator import jsonable
    X = _corpus(n=90, m=40)
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=13)
    m = WMF(n_components=3, max_iter=1, random_state=0).fit(C, memory_budget="64M")
    assert m.fit_info_["sources"] == {"X": "hdf5"} and m.fit_info_["n_sentences"] == 90
    assert m.memory_plan_ is m.fit_info_["memory_plan"] and m.memory_plan_["reads_per_pass"][0] >= 1
    m.save(tmp_path / "m.h5")
    back = load(tmp_path / "m.h5")
    assert back.fit_info_ == jsonable(m.fit_info_)
    assert back.memory_plan_ == jsonable(m.memory_plan_)


@pytest.mark.parametrize("solver", ["cg", "cholesky"])
def test_bilingual_streaming_equals_in_memory(tmp_path, solver):
    from linxling.models.wmf import BilingualWMF
    Xs = {"en": _corpus(n=90, m=40, seed=1), "es": _corpus(n=90, m=33, seed=2)}
    C = {lang: write_chunks(tmp_path / f"{lang}.h5", X, chunk_rows=11 + 3 * i)
         for i, (lang, X) in enumerate(Xs.items())}
    kw = dict(n_components=4, alpha=0.5, max_iter=3, solver=solver, random_state=0)
    ref = BilingualWMF(**kw).fit(Xs)
    got = BilingualWMF(**kw).fit(C, memory_budget=(90 + 73) * 4 * 8 + 8 * 400 + 36 * 150)
    assert got.memory_plan_["reads_per_pass"][0] > 1
    _same(got.embedding_, ref.embedding_)
    for lang in Xs:
        _same(got.components_[lang], ref.components_[lang])
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=1e-10)
    with pytest.raises(TypeError, match="mixes"):
        BilingualWMF(**kw).fit({"en": C["en"], "es": Xs["es"]})


def test_memory_error_states_the_budget_that_runs(tmp_path):
    """The minimum a MemoryError names is the smallest budget the fit then runs with (issue
    #27: the message once asked for ~38 MB for a fit that ran in 0.7 MB); one byte less fails."""
    import re

    from linxling.models.wmf import BilingualWMF
    Xs = {"en": _corpus(n=90, m=40, seed=1), "es": _corpus(n=90, m=33, seed=2)}
    C = {lang: write_chunks(tmp_path / f"{lang}.h5", X) for lang, X in Xs.items()}
    kw = dict(n_components=4, max_iter=1, random_state=0)
    with pytest.raises(MemoryError, match="give at least") as exc:
        BilingualWMF(**kw).fit(C, memory_budget=1000)
    need = int(re.search(r"give at least (\d+) bytes", str(exc.value)).group(1))
    longest = max(int(np.diff(X.indptr).max()) for X in Xs.values()) * 2   # both languages' rows
    assert need < 1000 + 60 * longest + 16 * (90 + 73) * 4 * 8              # a few kB, not MBs
    got = BilingualWMF(**kw).fit(C, memory_budget=need)
    ref = BilingualWMF(**kw).fit(Xs)
    _same(got.embedding_, ref.embedding_)
    with pytest.raises(MemoryError):
        BilingualWMF(**kw).fit(C, memory_budget=need - 1)


def test_a_corpus_rewritten_during_a_fit_is_an_error_not_a_mix(tmp_path):
    """Issue #29: a chunk file rewritten while WMF streamed it made the fit continue on the new
    data or mix both."""
    X = _corpus(n=120, m=45)
    path = tmp_path / "c.h5"
    C = write_chunks(path, X, chunk_rows=20)
    calls = []

    def rewrite(model, it, loss):
        if it == 0:
            write_chunks(path, _corpus(n=120, m=45, seed=5), chunk_rows=20, overwrite=True)
        calls.append(it)
    with pytest.raises(RuntimeError, match="was rewritten since it was opened"):
        WMF(n_components=3, max_iter=3, random_state=0, callback=rewrite).fit(C)
    assert calls == [0]


def test_out_of_range_chunk_indices_are_a_clear_error(tmp_path):
    import h5py
    X = _corpus(n=60, m=45)
    path = tmp_path / "c.h5"
    write_chunks(path, X, chunk_rows=20, transpose=False)
    with h5py.File(path, "a") as f:
        f["X/indices"][3] = 2_000_000_000            # the crafted index that segfaulted the fit
    C = ChunkedCSR(path)
    with pytest.raises(ValueError, match=r"column index 2000000000 outside \[0, 45\)"):
        C.to_csr()


def test_more_than_2_31_columns_keep_64_bit_indices(tmp_path):
    n_cols = 2 ** 31 + 10
    X = sp.csr_matrix((np.ones(3), ([0, 1, 2], [5, n_cols - 1, 2 ** 31])), shape=(3, n_cols))
    C = write_chunks(tmp_path / "wide.h5", X, transpose=False)
    back = C.to_csr()
    assert back.indices.dtype == np.int64 and list(back.indices) == [5, n_cols - 1, 2 ** 31]


def test_row_ranges_by_nnz_cover_every_row_within_the_limit():
    from linxling._memory import row_ranges_by_nnz
    indptr = np.cumsum([0, 3, 0, 5, 1, 1, 9, 2])         # a 9-nonzero row longer than the limit
    ranges = row_ranges_by_nnz(indptr, 5)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(indptr) - 1
    assert all(a < b for a, b in ranges) and all(b == c for (_, b), (c, _) in zip(ranges[:-1], ranges[1:], strict=True))
    for a, b in ranges:
        assert indptr[b] - indptr[a] <= 5 or b == a + 1
    assert row_ranges_by_nnz(np.array([0]), 5) == []


def test_files_not_written_by_this_write_chunks_are_named(tmp_path):
    """A text file, a directory, a bare HDF5 group or a corpus of another chunk format version
    gave h5py's OSError / KeyError without the path, or (another version) was read as this one."""
    import h5py
    X = _corpus(n=60, m=45)
    (tmp_path / "notes.h5").write_text("not hdf5")
    with pytest.raises(ValueError, match=r"notes\.h5' is not an HDF5 file"):
        ChunkedCSR(tmp_path / "notes.h5")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        ChunkedCSR(tmp_path)
    with h5py.File(tmp_path / "bare.h5", "w") as fh:
        fh.create_group("X")
    with pytest.raises(ValueError, match="not written by linxling.io.write_chunks"):
        ChunkedCSR(tmp_path / "bare.h5")
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=20)
    with h5py.File(C.path, "a") as fh:
        fh["X"].attrs["format_version"] = 2
    with pytest.raises(ValueError, match=r"group 'X' has chunk format version 2, but this linxling reads version 1"):
        ChunkedCSR(C.path)
    D = write_chunks(tmp_path / "d.h5", X, chunk_rows=20)
    with h5py.File(D.path, "a") as fh:
        del fh["XT/bounds"]
    with pytest.raises(ValueError, match=r"group 'XT' lacks \['bounds'\]"):
        ChunkedCSR(D.path, "XT")


def test_damaged_index_arrays_are_named_corrupt_at_open(tmp_path):
    """Chunk bounds past the last row gave an IndexError deep in a fit, row pointers counting
    more nonzeros than stored a shape mismatch in scipy, a damaged object header h5py's bare
    KeyError / TypeError: now a ValueError naming the file and 'corrupt' when it is opened."""
    import h5py
    X = _corpus(n=60, m=45)

    def damaged(name, change):
        C = write_chunks(tmp_path / f"{name}.h5", X, chunk_rows=20)
        with h5py.File(C.path, "a") as fh:
            change(fh["X"])
        return C.path

    def far_bounds(g):
        g["bounds"][-1] = 2 ** 40

    def short_indices(g):
        nnz = int(g["indptr"][-1])
        g["indices"].resize((nnz - 5,))

    def bad_shape(g):
        g.attrs["shape"] = np.array([60.5, 45.0])

    def unreadable(g):                        # what a damaged object header raises in h5py
        del g["indptr"]
        g["indptr"] = h5py.SoftLink("/nowhere")

    for name, change, what in [("bounds", far_bounds, "chunk bounds do not cover rows 0:60"),
                               ("indices", short_indices, "stores .* indices"),
                               ("shape", bad_shape, "not two counts"),
                               ("header", unreadable, "cannot be read as a corpus .*KeyError")]:
        with pytest.raises(ValueError, match=rf"{name}\.h5' group 'X'.*{what}.*the file is corrupt"):
            ChunkedCSR(damaged(name, change))


def test_an_unreadable_chunk_names_the_file_and_rows(tmp_path):
    """A chunk h5py cannot read (a damaged file; here values stored outside it, then removed)
    gave h5py's bare OSError during a fit, without the file: now an OSError naming the file,
    the group and the rows (still an OSError, which a dask worker reports as CorpusReadError)."""
    import h5py
    X = _corpus(n=60, m=45)
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=20)
    with h5py.File(C.path, "a") as fh:
        values = fh["X/data"][...]
        del fh["X/data"]
        (tmp_path / "values.bin").write_bytes(values.tobytes())
        fh["X"].create_dataset("data", shape=values.shape, dtype=values.dtype,
                               external=[(str(tmp_path / "values.bin"), 0, values.nbytes)])
    (tmp_path / "values.bin").unlink()
    with pytest.raises(OSError, match=r"c\.h5' group 'X' rows 0:20 cannot be read .*the corpus file is damaged"):
        WMF(n_components=3, max_iter=1, random_state=0, show_progress=False).fit(ChunkedCSR(C.path))


def test_an_empty_language_is_a_clear_error_at_write(tmp_path):
    """A corpus with no rows made write_chunks fail in numpy ("need at least one array to
    concatenate")."""
    with pytest.raises(ValueError, match="X has no rows: nothing to write"):
        write_chunks(tmp_path / "e.h5", sp.csr_matrix((0, 50)))
    with pytest.raises(ValueError, match="X has no rows: nothing to write"):
        write_chunks(tmp_path / "e.h5", iter([sp.csr_matrix((0, 50))]))
    assert not (tmp_path / "e.h5").exists()


def test_an_all_zero_corpus_is_an_error_streamed_as_in_memory(tmp_path):
    """In memory an all-zero X is "nothing to fit"; streamed from a file it fitted in silence,
    every factor zero."""
    from linxling.models.wmf import BilingualWMF
    Z = sp.csr_matrix((30, 20))
    C = write_chunks(tmp_path / "z.h5", Z)
    with pytest.raises(ValueError, match="X is all zero: there is nothing to fit"):
        WMF(n_components=3, max_iter=1).fit(C)
    X = write_chunks(tmp_path / "x.h5", _corpus(n=30, m=25))
    with pytest.raises(ValueError, match=r"X\['es'\] is all zero: there is nothing to fit"):
        BilingualWMF(n_components=3, max_iter=1).fit({"en": X, "es": C})


def test_a_transpose_of_another_matrix_is_refused(tmp_path):
    """A file whose XT group is not the transpose of its X (another matrix's, copied in): the
    streamed WMF fit read it as the word side and fitted in silence."""
    import h5py
    C = write_chunks(tmp_path / "c.h5", _corpus(n=60, m=45), chunk_rows=20)
    other = write_chunks(tmp_path / "o.h5", _corpus(n=60, m=40, seed=3))
    with h5py.File(C.path, "a") as fh, h5py.File(other.path, "r") as fo:
        del fh["XT"]
        fo.copy("XT", fh)
    with pytest.raises(ValueError, match=r"group 'XT' has shape \(40, 60\).* not one matrix and its transpose"):
        WMF(n_components=3, max_iter=1).fit(ChunkedCSR(C.path))


def test_memory_budget_sizes_are_read_strictly():
    """"12BB" was read as 12 bytes and a budget under one byte ("0.5", 0.5) as 0 bytes."""
    from linxling._memory import parse_budget
    for text, want in [("12G", 12 * 2 ** 30), ("12GiB", 12 * 2 ** 30), ("12 GB", 12 * 2 ** 30),
                       ("800mb", 800 * 2 ** 20), (" 64M ", 64 * 2 ** 20), ("1.5K", 1536), ("512", 512),
                       ("512B", 512), (12e9, 12_000_000_000)]:
        assert parse_budget(text) == want, text
    for bad in ("12BB", "12iB", "12 G B", "lots", "12P", ""):
        with pytest.raises(ValueError, match=rf"memory_budget must be None, a number of bytes or a size "
                                             rf"like '12G', got {bad!r}"):
            parse_budget(bad)
    for tiny in ("0.5", 0.5):
        with pytest.raises(ValueError, match="memory_budget must be at least one byte, got 0.5"):
            parse_budget(tiny)
    with pytest.raises(ValueError, match="memory_budget must be None, a positive number of bytes"):
        parse_budget("-1G")


def test_a_chunked_corpus_given_to_a_model_that_does_not_stream_is_named(tmp_path):
    """CrossWMF (or CLLSI) given a ChunkedCSR said "must be a numeric sparse or dense 2-D matrix,
    got an object array that does not convert to numbers": now which models stream one."""
    from linxling.models import CLLSI, CrossWMF
    X = _corpus(n=60, m=45)
    C = write_chunks(tmp_path / "c.h5", X, chunk_rows=20)
    with pytest.raises(TypeError, match=r"parallel\['it'\]\[0\] is a ChunkedCSR .*only WMF.fit, BilingualWMF.fit "
                                        r"and Cr5.fit_matrices stream.*\.to_csr\(\)"):
        CrossWMF(pivot_language="en", n_components=2, max_iter=1, show_progress=False).fit({"it": (C, X)})
    with pytest.raises(TypeError, match=r"blocks\['en'\] is a ChunkedCSR"):
        CLLSI(n_components=2).fit_matrices({"en": C, "it": X}, {"en": np.arange(60), "it": np.arange(60)})


def test_a_path_given_for_a_matrix_says_to_open_it(tmp_path):
    """A corpus file's path given where a matrix goes said "must be 2-D ... got 0-D with shape
    (): Reshape your data, e.g. X[None, :]" (Cr5), or was read a character a block (write_chunks)."""
    from linxling import Cr5
    X = _corpus()
    path = write_chunks(tmp_path / "c.h5", X).path
    with pytest.raises(TypeError, match=r"blocks\['en'\] is a str .*ChunkedCSR\(path\)"):
        Cr5(n_components=2).fit_matrices({"en": str(path), "it": X}, {"en": np.arange(120), "it": np.arange(120)})
    with pytest.raises(TypeError, match=r"blocks\['en'\] is a PosixPath|blocks\['en'\] is a WindowsPath"):
        Cr5(n_components=2).fit_matrices({"en": path, "it": X}, {"en": np.arange(120), "it": np.arange(120)})
    with pytest.raises(TypeError, match="X must be a sparse matrix or an iterable of sparse row blocks, got a str"):
        write_chunks(tmp_path / "d.h5", str(path))


def test_a_corpus_file_is_written_again_with_other_chunks(tmp_path):
    """write_chunks(path, ChunkedCSR) failed with "X chunk 0 must be a numeric sparse or dense
    2-D matrix, got an object array" (a ChunkedCSR iterates as (first_row, chunk) pairs)."""
    X = _corpus(dtype=np.float32)
    C = write_chunks(tmp_path / "a.h5", X, chunk_rows=10)
    D = write_chunks(tmp_path / "b.h5", C, chunk_rows=45)
    assert D.bounds.tolist() == [0, 45, 90, 120] and D.dtype == np.float32
    assert (D.to_csr() != X).nnz == 0 and (D.T.to_csr() != X.T.tocsr()).nnz == 0
    E = write_chunks(tmp_path / "a.h5", C, chunk_rows=60, overwrite=True)   # in place: read, then replaced
    assert E.bounds.tolist() == [0, 60, 120] and (E.to_csr() != X).nnz == 0


def test_a_corpus_file_name_given_for_texts_says_how_to_open_it(tmp_path):
    """WMF().fit("corpus.h5") said only "got a single str; wrap it in a list"; a str that names an
    HDF5 file (or an existing file) now says to open it with ChunkedCSR."""
    from linxling import WMF, BiCVM
    with pytest.raises(TypeError, match=r"got a single str; 'corpus.h5' looks like a file: .*ChunkedCSR\(path\)"):
        WMF().fit("corpus.h5")
    existing = tmp_path / "en.txt"
    existing.write_text("a b\n")
    with pytest.raises(TypeError, match=r"not a single string; '.*en.txt' looks like a file"):
        BiCVM().fit({"en": str(existing), "de": ["a b"]})
    with pytest.raises(TypeError, match=r"got a single str; wrap it in a list$"):
        WMF().fit("hello world")


def test_a_budget_that_makes_the_transpose_read_the_corpus_many_times_warns(tmp_path):
    """memory_budget="1K" wrote Xᵀ in one pass over the corpus per few columns, in silence (on a
    large vocabulary it looked like a hang); more than 16 passes now warn, and the file is right."""
    import warnings

    from linxling.io import ChunkedCSR, write_chunks
    X = sp.random(300, 120, density=0.1, format="csr", random_state=0)
    with pytest.warns(UserWarning, match=r"writing Xᵀ reads the corpus \d+ times"):
        write_chunks(tmp_path / "a.h5", X, memory_budget="1K")
    np.testing.assert_array_equal(ChunkedCSR(tmp_path / "a.h5", "XT").to_csr().toarray(), X.T.toarray())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_chunks(tmp_path / "b.h5", X)                      # the default budget: one pass



def test_a_corpus_rewritten_since_it_was_opened_says_to_open_it_again(tmp_path):
    """A ChunkedCSR kept from before its file was rewritten: the error said "start the fit again",
    which failed the same way with the same object; and when the new corpus had another shape,
    the transpose check called the file corrupt instead."""
    path = tmp_path / "c.h5"
    old = write_chunks(path, _corpus(n=60, m=45), chunk_rows=20)
    write_chunks(path, _corpus(n=60, m=30, seed=2), chunk_rows=20, overwrite=True)
    with pytest.raises(RuntimeError, match=r"was rewritten since it was opened .* open it again "
                                           r"\(ChunkedCSR\(path\)\)"):
        WMF(n_components=3, max_iter=1).fit(old)
    with pytest.raises(RuntimeError, match="was rewritten since it was opened"):
        _ = old.T
    WMF(n_components=3, max_iter=1).fit(ChunkedCSR(path))         # opened again: it fits


def test_a_corpus_locked_by_its_writer_is_not_called_a_non_hdf5_file(tmp_path):
    """A corpus another process still holds open for writing (HDF5 file locking) was refused as
    "not an HDF5 file"."""
    import os
    import subprocess
    import sys
    if os.environ.get("HDF5_USE_FILE_LOCKING", "").upper() == "FALSE":
        pytest.skip("HDF5 file locking is off in this environment")
    path = tmp_path / "c.h5"
    write_chunks(path, _corpus(n=30, m=20), chunk_rows=10)
    writer = subprocess.Popen([sys.executable, "-c", "import sys, h5py; f = h5py.File(sys.argv[1], 'a'); "
                               "print('open', flush=True); sys.stdin.read()", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "open"
        with pytest.raises(BlockingIOError, match="is locked: another process has it open for writing"):
            ChunkedCSR(path)
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    assert ChunkedCSR(path).shape == (30, 20)


def test_a_dask_array_is_written_by_its_row_chunks(tmp_path):
    """write_chunks takes "any iterable of sparse row blocks", but a dask array iterates by rows:
    its first row failed as "X chunk 0 must be 2-D" (dense) or "an object array that does not
    convert to numbers" (scipy.sparse chunks). Its row chunks are now computed one at a time."""
    da = pytest.importorskip("dask.array")
    X = _corpus(n=90, m=30)
    sparse = write_chunks(tmp_path / "s.h5", da.from_array(X, chunks=(40, -1), asarray=False))
    assert sparse.n_chunks == 3 and (sparse.to_csr() != X).nnz == 0
    assert (sparse.T.to_csr() != X.T.tocsr()).nnz == 0
    dense = write_chunks(tmp_path / "d.h5", da.from_array(X.toarray(), chunks=(40, -1)), chunk_rows=50)
    assert dense.n_chunks == 2 and (dense.to_csr() != X).nnz == 0
    with pytest.raises(ValueError, match=r"X is a dask array .* 2 column chunks; .* X.rechunk\(\{1: -1\}\)"):
        write_chunks(tmp_path / "c.h5", da.from_array(X, chunks=(40, 20), asarray=False))
