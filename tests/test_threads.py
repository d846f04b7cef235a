"""One BLAS-thread policy: limited during every fit, shared by concurrent fits, restored after."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info

from linxling._threads import blas_single_thread
from linxling.models import WMF, Cr5


def _blas_threads() -> int:
    return max((i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"), default=1)


@pytest.fixture
def two_blas_threads():
    # The process's own default, not a threadpool_limits(2) context: threadpoolctl does not let a
    # limit set in another thread override a context active in the main thread.
    if _blas_threads() < 2:
        pytest.skip("BLAS runs one thread here (one core, or OPENBLAS_NUM_THREADS=1): nothing to limit")
    yield


@pytest.fixture
def fake_blas(monkeypatch):
    import linxling._threads as threads_mod
    fake = _FakeBlas()
    monkeypatch.setattr(threads_mod, "_controller", lambda: fake)
    return fake


def test_limit_is_shared_and_lifted_by_the_last_user(fake_blas):
    with blas_single_thread():
        assert fake_blas.threads == 1
        with blas_single_thread():
            assert fake_blas.threads == 1
        assert fake_blas.threads == 1        # the inner end does not lift the outer's limit
    assert fake_blas.threads == 2
    with blas_single_thread(enabled=False):
        assert fake_blas.threads == 2


def test_real_blas_is_limited_and_restored(two_blas_threads):
    # a fresh process: reading the real limit back is reliable only before other runtimes interfere
    import subprocess
    import sys
    code = ("import numpy, scipy.linalg\n"
            "from threadpoolctl import threadpool_info\n"
            "from linxling._threads import blas_single_thread\n"
            "n = lambda: max(i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas')\n"
            "before = n()\n"
            "with blas_single_thread():\n"
            "    inside = n()\n"
            "print(before, inside, n())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    before, inside, after = map(int, out)
    assert inside == 1 and after == before


def test_wmf_fit_runs_with_one_blas_thread(fake_blas):
    seen = []
    X = sp.random(40, 30, density=0.2, random_state=0, format="csr")
    WMF(n_components=3, max_iter=2, random_state=0, show_progress=False,
        callback=lambda *_: seen.append(fake_blas.threads)).fit(X)
    assert seen and set(seen) == {1}
    assert fake_blas.threads == 2


def _problem():
    rng = np.random.default_rng(3)
    blocks = {lang: sp.random(300, p, density=0.05, random_state=i, format="csr")
              for i, (lang, p) in enumerate([("a", 120), ("b", 90), ("c", 100)])}
    concepts = {lang: rng.permutation(300) for lang in blocks}
    return blocks, concepts


class _FakeBlas:
    """Stands in for threadpoolctl's controller: records the process-wide BLAS limit over time.

    (Reading the real limit from worker threads is unreliable once a process has loaded several
    BLAS/OpenMP runtimes, so the policy is checked on what it asks the controller to do.)
    """

    def __init__(self):
        self.threads = 2

    def limit(self, limits, user_api):
        assert user_api == "blas"
        fake, previous = self, self.threads
        self.threads = limits

        class _Limiter:
            def restore_original_limits(self):
                fake.threads = previous
        return _Limiter()


def test_concurrent_cr5_fits_keep_the_limit_and_equal_sequential_fits(monkeypatch):
    """Fit A starts first and ends first while fit B still runs: B must keep one BLAS thread to the
    end (the old per-fit limit was lifted when A ended, and B's Φ then differed by 0.389 from a
    sequential fit), and both equal sequential fits."""
    import time

    fake = _FakeBlas()
    import linxling._threads as threads_mod
    monkeypatch.setattr(threads_mod, "_controller", lambda: fake)
    blocks, concepts = _problem()
    kw = dict(n_components=8, random_state=0, show_progress=False)
    sequential = Cr5(**kw).fit_matrices(blocks, concepts)
    assert fake.threads == 2
    a_running, b_running = threading.Event(), threading.Event()
    seen_by_b = []

    def callback_a(stage, info):
        a_running.set()
        b_running.wait(timeout=30)           # A ends only once B is inside its fit

    def callback_b(stage, info):
        b_running.set()
        seen_by_b.append(fake.threads)
        time.sleep(0.01)                     # B outlasts A

    models = [Cr5(**kw, callback=callback_a), Cr5(**kw, callback=callback_b)]
    ta = threading.Thread(target=models[0].fit_matrices, args=(blocks, concepts))
    tb = threading.Thread(target=models[1].fit_matrices, args=(blocks, concepts))
    ta.start()
    assert a_running.wait(timeout=30)
    tb.start()
    ta.join()
    tb.join()
    assert len(seen_by_b) >= 2 and set(seen_by_b) == {1}, seen_by_b
    assert fake.threads == 2                 # lifted when the last fit ended
    for m in models:
        for lang in blocks:
            np.testing.assert_array_equal(m.components_[lang], sequential.components_[lang])


_CONCURRENT = """
import threading, numpy as np, scipy.sparse as sp, numba, linxling
from linxling.search import Index
X = sp.random(4000, 1500, density=0.01, format="csr", random_state=0)
m = linxling.WMF(n_components=16, max_iter=2, random_state=0, show_progress=False).fit(X)
ref = m.transform(X)
index = Index(ref)
hits = index.search(ref[:500], k=3, similarity="csls")[1]
out, found = [], []
def work():
    out.append(m.transform(X))
    found.append(index.search(ref[:500], k=3, similarity="csls")[1])
ts = [threading.Thread(target=work) for _ in range(6)]
[t.start() for t in ts]
[t.join() for t in ts]
print(numba.threading_layer(), len(out), all(np.array_equal(o, ref) for o in out),
      all(np.array_equal(f, hits) for f in found))
"""


def test_threads_may_share_a_model_under_numba_workqueue_layer(tmp_path):
    """numba's workqueue layer (where neither TBB nor OpenMP loads, e.g. macOS without libomp) is
    not thread-safe: six threads embedding with one WMF made numba terminate the process
    ('Concurrent access has been detected'). Under it the public entry points take turns."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import linxling
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", LINXLING_NO_PROGRESS="1",
               PYTHONPATH=str(Path(linxling.__file__).resolve().parents[1]))
    run = subprocess.run([sys.executable, "-c", _CONCURRENT], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["workqueue", "6", "True", "True"], run.stdout + run.stderr[-2000:]



def test_fits_that_promise_it_do_not_depend_on_the_numba_thread_count():
    """docs/scale.md (WMF's solvers, Cr5's eigen-solver: fixed row parts of linxling.kernels.dense)
    and docs/bicvm.md: the same bits on one numba thread and on two, at a size where the dense
    products are split into parts (over 8,192 rows) and run on the pool."""
    import numba

    from linxling.models import BiCVM
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here: nothing to compare")
    rng = np.random.default_rng(5)
    en = [" ".join(f"w{i}" for i in rng.integers(0, 3000, size=rng.integers(4, 12))) for _ in range(10_000)]
    de = [s.replace("w", "v") for s in en]
    fits = {
        "WMF": lambda: WMF(n_components=48, max_iter=2, random_state=0, show_progress=False).fit(en).components_,
        "Cr5": lambda: Cr5(n_components=48, min_df=1, random_state=0, show_progress=False).fit(
            en + de, ["en"] * len(en) + ["de"] * len(de), list(range(len(en))) * 2).components_["de"],
        "BiCVM": lambda: BiCVM(n_components=16, n_epochs=1, random_state=0, show_progress=False).fit(
            {"en": en[:3000], "de": de[:3000]}).vectors_["de"],
    }
    before = numba.get_num_threads()
    got: dict = {}
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            got[threads] = {name: fit() for name, fit in fits.items()}
    finally:
        numba.set_num_threads(before)
    for name in fits:
        np.testing.assert_array_equal(got[1][name], got[2][name], err_msg=name)


_FORKED = """
import multiprocessing as mp
import numpy as np
from linxling.models import WMF
rng = np.random.default_rng(0)
docs = [" ".join(f"w{i}" for i in rng.integers(0, 400, size=12)) for _ in range(3000)]

def fit():
    return WMF(n_components=16, max_iter=2, random_state=0, show_progress=False).fit(docs).components_

def child(q):
    q.put(np.asarray(fit()))

if __name__ == "__main__":
    import numba
    parent = fit()                                      # parallel kernels run in the parent first
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(300)
    ok = p.exitcode == 0
    same = bool(ok and np.array_equal(q.get(timeout=10), parent))
    print(numba.threading_layer(), p.exitcode, same)
"""


def _run_forked(tmp_path, **env_extra):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import linxling
    script = tmp_path / "forked.py"
    script.write_text(_FORKED)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}   # numba's own choice
    env.update(LINXLING_NO_PROGRESS="1", PYTHONPATH=str(Path(linxling.__file__).resolve().parents[1]), **env_extra)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


def test_a_forked_child_fits_after_its_parent_did(tmp_path):
    """A process that ran linxling's parallel kernels forks (multiprocessing's default on Linux,
    gunicorn's workers); the child fits too. On GNU OpenMP numba terminated the child (SIGTERM,
    'fork() called from a process already using GNU OpenMP'), and a Pool then waited forever;
    with the tbb wheel linxling runs numba on TBB (linxling/_forksafe.py) and the child's fit
    equals the parent's bit for bit."""
    import sys

    from linxling._forksafe import tbb_library
    if not sys.platform.startswith("linux"):
        pytest.skip("fork-safety concerns GNU OpenMP on Linux")
    if tbb_library() is None:
        pytest.skip("the tbb wheel is not installed here (a dependency only on Linux x86-64)")
    run = _run_forked(tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["tbb", "0", "True"], run.stdout + run.stderr[-2000:]
    assert "ForkAfterOpenMPWarning" not in run.stderr


def test_a_fork_after_gnu_openmp_kernels_warns_in_the_child(tmp_path):
    """Where numba runs on GNU OpenMP (no tbb wheel, or NUMBA_THREADING_LAYER=omp), the child of
    a process that ran parallel kernels is told why it will be terminated and what to do, at the
    fork, before numba ends it."""
    import sys
    if not sys.platform.startswith("linux"):
        pytest.skip("fork-safety concerns GNU OpenMP on Linux")
    try:
        from numba.np.ufunc import omppool
    except ImportError:
        pytest.skip("numba's OpenMP layer does not load here")
    if getattr(omppool, "openmp_vendor", None) != "GNU":
        pytest.skip(f"numba's OpenMP here is {omppool.openmp_vendor!r}, not GNU (fork-safe)")
    run = _run_forked(tmp_path, NUMBA_THREADING_LAYER="omp")
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[:2] == ["omp", "-15"], run.stdout + run.stderr[-2000:]   # numba's SIGTERM
    assert "ForkAfterOpenMPWarning" in run.stderr and "spawn" in run.stderr, run.stderr[-2000:]
