"""Concept ids: one type, no None, kept with their type through the store (Cr5 and CL-LSI)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from linxling.models import CLLSI, Cr5
from linxling.models._base import classes_from_state, classes_state, encode_concepts


def _blocks(rng, ids_en, ids_fr, p=(30, 25)):
    return {"en": sp.random(len(ids_en), p[0], density=0.4, random_state=1, format="csr"),
            "fr": sp.random(len(ids_fr), p[1], density=0.4, random_state=2, format="csr")}


@pytest.mark.parametrize("bad,match", [
    ([1, "1"], r"concepts\['en'\]\[1\] = '1' is str, but concepts\['en'\]\[0\] = 1 is int"),
    ([0, None], r"concepts\['en'\]\[1\] is None"),
    ([(1, 0), (1, "0")], r"tuple of \(int, str\).*tuple of \(int, int\)"),
    ([1, True], r"is bool, but .* is int"),
])
def test_bad_ids_are_errors(bad, match):
    with pytest.raises(TypeError, match=match):
        encode_concepts({"en": bad}, ["en"])


def test_mixed_types_across_languages_and_int_arrays():
    with pytest.raises(TypeError, match=r"concepts\['fr'\]\[0\] = '0' is str"):
        encode_concepts({"en": np.arange(3), "fr": ["0", "1"]}, ["en", "fr"])
    labels, classes = encode_concepts({"en": np.arange(3), "fr": [np.int64(2), 0]}, ["en", "fr"])
    assert classes == [0, 1, 2] and all(type(c) is int for c in classes)
    np.testing.assert_array_equal(labels["fr"], [2, 0])


@pytest.mark.parametrize("model", [Cr5(n_components=3, random_state=0), CLLSI(n_components=3, random_state=0)])
def test_mixed_ids_refused_by_models(rng, model):
    ids_en = list(range(20))
    ids_fr = [str(i) for i in range(20)]    # the same concepts written as strings: a user mistake
    with pytest.raises(TypeError, match="one type"):
        model.fit_matrices(_blocks(rng, ids_en, ids_fr), {"en": ids_en, "fr": ids_fr})


@pytest.mark.parametrize("ids", [list(range(20)), [f"c{i}" for i in range(20)], [(i, i % 3) for i in range(20)],
                                 [("verse", i) for i in range(20)], [i + 0.5 for i in range(20)]])
@pytest.mark.parametrize("cls", [Cr5, CLLSI])
def test_ids_survive_save_load_with_their_type(tmp_path, rng, ids, cls):
    model = cls(n_components=3, random_state=0).fit_matrices(_blocks(rng, ids, ids[::-1]),
                                                              {"en": ids, "fr": ids[::-1]})
    model.save(tmp_path / "m.h5")
    back = cls.load(tmp_path / "m.h5")
    assert back.classes_ == model.classes_
    assert [type(c) for c in back.classes_] == [type(c) for c in model.classes_]


def test_unstorable_ids_are_refused_at_save(tmp_path, rng):
    ids = [frozenset({i}) for i in range(20)]
    model = CLLSI(n_components=3, random_state=0).fit_matrices(_blocks(rng, ids, ids), {"en": ids, "fr": ids})
    with pytest.raises(TypeError, match="frozenset cannot be stored"):
        model.save(tmp_path / "m.h5")
    assert not (tmp_path / "m.h5").exists()


_SCALAR = st.one_of(st.integers(-2**62, 2**62), st.text(max_size=8),
                    st.floats(allow_nan=False, allow_infinity=False))
_ID_LISTS = st.one_of(
    st.lists(st.integers(-2**62, 2**62), min_size=1, max_size=30),
    st.lists(st.text(max_size=8), min_size=1, max_size=30),
    st.lists(st.tuples(st.integers(-5, 5), st.text(max_size=3)), min_size=1, max_size=30),
)


@settings(max_examples=200, deadline=None)
@given(_ID_LISTS, st.randoms(use_true_random=False))
def test_encoding_is_a_bijection_and_stores_exactly(ids, rnd):
    other = list(ids)
    rnd.shuffle(other)
    labels, classes = encode_concepts({"a": ids, "b": other}, ["a", "b"])
    assert len(set(classes)) == len(classes) == len(set(ids))
    for lang, seq in (("a", ids), ("b", other)):
        assert [classes[j] for j in labels[lang]] == list(seq)
    kind, arr = classes_state(classes)
    assert classes_from_state(kind, arr) == classes


@settings(max_examples=100, deadline=None)
@given(st.lists(_SCALAR, min_size=2, max_size=10))
def test_mixed_scalar_types_always_refused(ids):
    kinds = {type(x) for x in ids}
    if len(kinds) == 1:
        encode_concepts({"a": ids}, ["a"])
    else:
        with pytest.raises(TypeError, match="one type"):
            encode_concepts({"a": ids}, ["a"])


def test_integer_arrays_fast_path_equals_the_general_path(monkeypatch):
    # encode_concepts numbers integer arrays without a Python loop; the loop over the ids (what
    # lists and mixed inputs take) is the reference: the same labels and classes, as Python ints
    import linxling.models._base as base
    rng = np.random.default_rng(0)
    cases = [{"a": np.array([5, 3, 5, 9]), "b": np.array([9, 1, 3], dtype=np.int32), "c": np.array([2**40, 1])},
             {"a": rng.integers(0, 50, 200, dtype=np.uint16), "b": rng.integers(0, 80, 300, dtype=np.uint16)},
             {"a": rng.permutation(1000), "b": rng.permutation(1000)[:500], "c": rng.integers(-5, 5, 40)},
             # ids in a narrow range take a table (_encode_dense_ids), others a sort: both, with
             # types whose subtraction of the smallest id would overflow in their own width
             {"a": np.array([100, -100, 7, 100], dtype=np.int8), "b": np.array([-128, 127], dtype=np.int8)},
             {"a": np.array([2**63 + 5, 2**63 + 1], dtype=np.uint64), "b": np.array([2**63 + 9, 2**63 + 1],
                                                                                  dtype=np.uint64)},
             {"a": rng.integers(0, 10**12, 300), "b": rng.integers(0, 10**12, 30)},
             {"a": np.repeat(np.arange(40), 3)[::-1], "b": np.arange(40)[::-1], "c": np.arange(35, 60)}]
    for concepts in cases:
        langs = list(concepts)
        fast = base._encode_integer_arrays(concepts, langs)
        with monkeypatch.context() as m:
            m.setattr(base, "_encode_integer_arrays", lambda *a: None)
            slow = base.encode_concepts(concepts, langs)
        assert fast is not None and fast[1] == slow[1]
        assert all(type(x) is int for x in fast[1])
        for lang in langs:
            np.testing.assert_array_equal(fast[0][lang], slow[0][lang])
            assert fast[0][lang].dtype == np.int64
    # int64 with uint64 would promote to float64: the general path takes it
    assert base._encode_integer_arrays({"a": np.arange(3), "b": np.arange(3, dtype=np.uint64)}, ["a", "b"]) is None
