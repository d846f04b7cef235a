"""The reproducibility guarantees of docs/reliability.md, section "Reproducibility", one model at a
time on a few real verses (Philemon, 2-3 John and Jude, English and French: 67 training verses):

* the same ``random_state`` fits the same bits twice in one process, also when the estimator
  was fitted before with another seed (no state left from an earlier fit);
* a saved and loaded model embeds to the same bits, and refitting it gives the same bits;
* one and two numba threads give the same bits, except the WMF family's CG solver (equal to
  rounding: each thread sums its own part of the frequent words' products);
* in a fresh process (another hash seed) the same bits (slow: two child processes);
* ``random_state=None`` draws fresh entropy (two fits differ; BilDRL's ridge encoder has nothing
  random and gives the same model); a Generator in the same state gives the same model; a
  negative seed and a legacy ``RandomState`` are refused with an error naming ``random_state``.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import linxling
from linxling.datasets import load_bible

_BIBLE = load_bible(["en", "fr"], unit="verse", books=[57, 63, 64, 65])
EN, FR = list(_BIBLE.texts["en"]), list(_BIBLE.texts["fr"])
N_TRAIN = len(EN) - 10
TRAIN_EN, TRAIN_FR = EN[:N_TRAIN], FR[:N_TRAIN]
TEST = {"en": EN[N_TRAIN:], "fr": FR[N_TRAIN:]}
DOCS = (TRAIN_EN + TRAIN_FR, ["en"] * N_TRAIN + ["fr"] * N_TRAIN, list(range(N_TRAIN)) * 2)
QUIET = dict(show_progress=False)


def _space():
    """A fixed word space for BilDRL: 40 English and 40 French words, translations close."""
    class Space:
        def __init__(self) -> None:
            rng = np.random.default_rng(0)
            base = rng.standard_normal((40, 8))
            self.vecs = {"en": base + 0.05 * rng.standard_normal((40, 8)),
                         "fr": base + 0.05 * rng.standard_normal((40, 8))}

        def word_vectors(self, language):
            return [f"{language[0]}{i}" for i in range(40)], self.vecs[language].copy()
    return Space()


def _dictionary(n=120):
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(n):
        i = int(rng.integers(40))
        src, dst = ("e", "f") if rng.random() < 0.5 else ("f", "e")
        words = [f"{dst}{i}"] + [f"{dst}{int(j)}" for j in rng.integers(40, size=2)]
        rows.append((f"{src}{i}", "en" if src == "e" else "fr", " ".join(words), "fr" if dst == "f" else "en"))
    return rows


def _word_text():
    rng = np.random.default_rng(0)
    mono = {lang: [" ".join(f"{lang[0]}{int(j)}" for j in rng.integers(40, size=8)) for _ in range(40)]
            for lang in ("en", "fr")}
    par = {"en": [" ".join(f"e{int(j)}" for j in rng.integers(40, size=4)) for _ in range(20)]}
    par["fr"] = [s.replace("e", "f") for s in par["en"]]
    return mono, par


PAIRS = {"en": TRAIN_EN, "fr": TRAIN_FR}
DEFINITIONS = {"en": ["e1 e3 e9", "e2"], "fr": ["f1 f3 f9", "f2", "f7 f8"]}

# name -> (unfitted model, fit, languages its outputs are read in)
CASES = {
    "Cr5": (linxling.Cr5(n_components=8, random_state=0, **QUIET), lambda m: m.fit(*DOCS), ("en", "fr")),
    "CLLSI": (linxling.CLLSI(n_components=8, random_state=0), lambda m: m.fit(*DOCS), ("en", "fr")),
    "WMF-cg": (linxling.WMF(n_components=8, max_iter=3, solver="cg", random_state=0, **QUIET),
               lambda m: m.fit(TRAIN_EN), (None,)),
    "WMF-cholesky": (linxling.WMF(n_components=8, max_iter=3, solver="cholesky", random_state=0, **QUIET),
                     lambda m: m.fit(TRAIN_EN), (None,)),
    "BilingualWMF-cg": (linxling.BilingualWMF(n_components=8, max_iter=3, random_state=0, **QUIET),
                        lambda m: m.fit(PAIRS), ("en", "fr")),
    "CrossWMF-cg": (linxling.CrossWMF(n_components=8, max_iter=3, random_state=0, **QUIET),
                    lambda m: m.fit({"fr": (TRAIN_EN, TRAIN_FR)}), ("en", "fr")),
    "BiCVM": (linxling.BiCVM(n_components=8, n_epochs=2, random_state=0, **QUIET),
              lambda m: m.fit(PAIRS), ("en", "fr")),
    "RankingEmbedding": (linxling.RankingEmbedding(n_components=8, n_epochs=2, random_state=0, **QUIET),
                         lambda m: m.fit(PAIRS), ("en", "fr")),
    "CompressTree": (linxling.CompressTree(n_components=6, hidden_size=3, n_epochs=1, tree="random",
                                           random_state=0, **QUIET), lambda m: m.fit(TRAIN_EN), (None,)),
    "BilBOWA": (linxling.BilBOWA(n_components=8, n_epochs=2, min_count=1, n_blocks=3, random_state=0, **QUIET),
                lambda m: m.fit(monolingual=PAIRS, parallel=PAIRS), ("en", "fr")),
    "BilDRL-att": (linxling.BilDRL(encoder="att", hidden_size=8, n_epochs=2, batch_size=16, random_state=0,
                                   **QUIET), lambda m: m.fit(_dictionary(), _space()), ("en", "fr")),
    "BilDRL-ridge": (linxling.BilDRL(encoder="ridge", random_state=0, **QUIET),
                     lambda m: m.fit(_dictionary(), _space()), ("en", "fr")),
    "BilDRL-joint": (linxling.BilDRL(encoder="bow", hidden_size=8, n_epochs=2, batch_size=16, joint=True,
                                     n_blocks=2, random_state=0, **QUIET),
                     lambda m: m.fit(_dictionary(), _space(), *_word_text()), ("en", "fr")),
    "GlossSpace": (linxling.GlossSpace(n_components=8, random_state=0, **QUIET),
                   lambda m: m.fit(*DOCS, {"en": {"grace": ["favour of god"], "newword": ["love one another"]},
                                           "fr": {"grâce": ["faveur de dieu"]}}), ("en", "fr")),
}
IDS = list(CASES)
#: fits whose bits depend on the number of numba threads (equal to rounding)
THREAD_DEPENDENT = {"WMF-cg", "BilingualWMF-cg", "CrossWMF-cg"}
#: fits with nothing random: random_state=None gives the same model every time
DETERMINISTIC = {"BilDRL-ridge"}


def _fit(name, **params):
    model, fit, _ = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(clone(model).set_params(**params))


def _outputs(name, m) -> dict[str, np.ndarray]:
    """The held-out texts' vectors and the word vectors, per language the model reads."""
    out = {}
    for lang in CASES[name][2]:
        if name.startswith("BilDRL"):
            out[f"T_{lang}"] = m.transform(DEFINITIONS[lang], language=lang)
        else:
            out[f"T_{lang}"] = m.transform(TEST[lang or "en"], language=lang)
        if name != "CLLSI":                     # CL-LSI has no word vectors
            out[f"W_{lang}"] = m.word_vectors(lang)[1]
    return out


def _digest(out: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for key in sorted(out):
        h.update(key.encode() + np.ascontiguousarray(out[key]).tobytes())
    return h.hexdigest()


def _assert_same_bits(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.parametrize("name", IDS)
def test_same_seed_same_bits_in_one_process(name):
    """Two fits with one seed: the same bits; and an estimator fitted before with another seed
    (set_params, refit) gives them too, so nothing of the earlier fit is left in it."""
    first = _outputs(name, _fit(name))
    _assert_same_bits(first, _outputs(name, _fit(name)))
    m = _fit(name, random_state=1)
    assert _digest(_outputs(name, m)) != _digest(first) or name in DETERMINISTIC
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CASES[name][1](m.set_params(random_state=0))
    _assert_same_bits(first, _outputs(name, m))


@pytest.mark.parametrize("name", IDS)
def test_saved_model_embeds_and_refits_to_the_same_bits(name, tmp_path):
    m = _fit(name)
    out = _outputs(name, m)
    m.save(tmp_path / "m.h5")
    loaded = linxling.load(tmp_path / "m.h5")
    _assert_same_bits(out, _outputs(name, loaded))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CASES[name][1](loaded)                 # the saved parameters, random_state included
    _assert_same_bits(out, _outputs(name, loaded))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has a single thread here")
@pytest.mark.parametrize("name", IDS)
def test_one_and_two_threads(name):
    """The same bits on one and two numba threads, except the WMF family's CG half-steps: the
    frequent words' products are summed per thread part (as many parts as threads), so the
    models agree to rounding (1e-14 relative in float64 here)."""
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _outputs(name, _fit(name))
        numba.set_num_threads(2)
        two = _outputs(name, _fit(name))
    finally:
        numba.set_num_threads(before)
    if name in THREAD_DEPENDENT:
        for key in one:
            np.testing.assert_allclose(one[key], two[key], rtol=0, atol=1e-10 * np.abs(one[key]).max(),
                                       err_msg=key)
    else:
        _assert_same_bits(one, two)


@pytest.mark.parametrize("name", IDS)
def test_random_state_none_fresh_generator_same_state(name):
    """None: fresh entropy (two fits differ) unless nothing is random; two Generators in one
    state: the same model (the fit draws from the one it is given)."""
    a, b = (_digest(_outputs(name, _fit(name, random_state=None))) for _ in range(2))
    assert (a == b) == (name in DETERMINISTIC)
    g1, g2 = (_outputs(name, _fit(name, random_state=np.random.default_rng(7))) for _ in range(2))
    _assert_same_bits(g1, g2)


@pytest.mark.parametrize("name", IDS)
@pytest.mark.parametrize("seed", [-1, np.random.RandomState(0)], ids=["negative", "RandomState"])
def test_refused_random_states_name_the_parameter(name, seed):
    """A negative int and a legacy RandomState are refused at the start of fit, naming
    random_state (a negative seed used to fail inside NumPy: 'expected non-negative integer')."""
    model, fit, _ = CASES[name]
    m = clone(model).set_params(random_state=seed)
    with pytest.raises(InvalidParameterError, match=f"'random_state' parameter of {type(model).__name__}"):
        fit(m)


_CHILD = """
import sys, warnings
warnings.simplefilter("ignore")
from tests.test_reproducibility import IDS, _digest, _fit, _outputs
for name in IDS:
    print(name, _digest(_outputs(name, _fit(name))))
"""


@pytest.mark.slow
def test_two_fresh_processes_give_the_same_bits(tmp_path):
    """Two fresh processes with different hash seeds fit every case to the same bits, and to
    this process's bits except the CG fits (the process that compiles the CG kernel may differ
    at the rounding level from those that load it from numba's cache, docs/wmf.md)."""
    root = Path(__file__).resolve().parents[1]
    here = {name: _digest(_outputs(name, _fit(name))) for name in IDS}     # compiles, caches
    children = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, LINXLING_NO_PROGRESS="1",
                   PYTHONPATH=os.pathsep.join([str(root), str(Path(linxling.__file__).resolve().parents[1])]))
        run = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        children.append(dict(line.split() for line in run.stdout.splitlines() if line.count(" ") == 1))
    assert children[0] == children[1]
    assert set(children[0]) == set(IDS)
    for name in IDS:
        if name not in THREAD_DEPENDENT:
            assert children[0][name] == here[name], name


def test_check_random_state_refuses_a_negative_seed_by_name():
    """The helper of the solvers and evaluation functions (eigsh, paraphrase_pairs, ...): a
    negative seed is a ValueError naming random_state, not NumPy's 'expected non-negative integer'."""
    from linxling._validation import check_random_state
    with pytest.raises(ValueError, match="random_state must be"):
        check_random_state(-3)
    assert check_random_state(np.int64(3)).integers(1 << 30) == np.random.default_rng(3).integers(1 << 30)
