"""SGD kernels: gradients vs central finite differences, numba kernels vs the NumPy reference."""
import numpy as np
import pytest

from linxling.kernels import sgd
from linxling.kernels import sgd_reference as ref

COMPS = ["add", "mean", "bi"]
DISTS = ["sqeuclidean", "l1", "dot"]


def _corpus(n, V, rng):
    lens = rng.integers(1, 6, n)
    ptr = np.r_[0, np.cumsum(lens)].astype(np.int64)
    idx = rng.integers(0, V, ptr[-1]).astype(np.int64)
    cnt = rng.integers(1, 3, ptr[-1]).astype(np.float64)
    return idx, ptr, cnt


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    A, B = _corpus(20, 15, rng), _corpus(20, 12, rng)
    WA = rng.normal(size=(15, 6)) * 0.3
    WB = rng.normal(size=(12, 6)) * 0.3
    batch = np.array([0, 3, 5, 7])
    nA = rng.integers(0, 20, (4, 2))
    nB = rng.integers(0, 20, (4, 2))
    return A, B, WA, WB, batch, nA, nB


def _kink_distance(A, B, WA, WB, batch, nA, nB, comp, dist, margin):
    """Smallest |hinge argument| (and |u_c - v_c| for L1) of the batch: FD is valid if > h."""
    a = ref.compose(WA, *A, batch, comp)
    b = ref.compose(WB, *B, batch, comp)
    gaps = []
    for i in range(len(batch)):
        na = ref.compose(WA, *A, nA[i], comp)
        nb = ref.compose(WB, *B, nB[i], comp)
        for j in range(nA.shape[1]):
            gaps.append(abs(margin + ref.energy(a[i], b[i], dist) - ref.energy(a[i], nb[j], dist)))
            gaps.append(abs(margin + ref.energy(b[i], a[i], dist) - ref.energy(b[i], na[j], dist)))
            if dist == "l1":
                gaps.extend(np.abs(a[i] - b[i]).tolist() + np.abs(a[i] - nb[j]).tolist()
                            + np.abs(b[i] - na[j]).tolist())
    return min(gaps)


@pytest.mark.parametrize("comp", COMPS)
@pytest.mark.parametrize("dist", DISTS)
def test_reference_gradient_matches_finite_differences(problem, comp, dist):
    A, B, WA, WB, batch, nA, nB = problem
    margin = 1.0
    h = 1e-6
    # FD is exact up to O(h^2) only away from hinge and |.| kinks
    assert _kink_distance(A, B, WA, WB, batch, nA, nB, comp, dist, margin) > 1e3 * h
    loss, gA, gB = ref.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, margin)
    assert loss > 0 and np.abs(gA).max() > 0 and np.abs(gB).max() > 0
    for W, g, which in ((WA, gA, 0), (WB, gB, 1)):
        num = np.zeros_like(W)
        for i in range(W.shape[0]):
            for j in range(W.shape[1]):
                Wp, Wm = W.copy(), W.copy()
                Wp[i, j] += h
                Wm[i, j] -= h
                args_p = (Wp, A, WB, B) if which == 0 else (WA, A, Wp, B)
                args_m = (Wm, A, WB, B) if which == 0 else (WA, A, Wm, B)
                num[i, j] = (ref.batch_loss(*args_p, batch, nA, nB, comp, dist, margin)
                             - ref.batch_loss(*args_m, batch, nA, nB, comp, dist, margin)) / (2 * h)
        assert np.linalg.norm(num - g) / np.linalg.norm(g) < 1e-6


@pytest.mark.parametrize("comp", COMPS)
@pytest.mark.parametrize("dist", DISTS)
def test_fast_gradient_matches_reference(problem, comp, dist):
    A, B, WA, WB, batch, nA, nB = problem
    l0, gA0, gB0 = ref.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, 1.0)
    l1, gA1, gB1 = sgd.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, 1.0)
    assert l1 == pytest.approx(l0, rel=1e-12)
    np.testing.assert_allclose(gA1, gA0, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(gB1, gB0, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("comp", COMPS)
def test_fast_compose_matches_reference(problem, comp):
    A, _, WA, _, _, _, _ = problem
    rows = np.arange(20, dtype=np.int64)
    np.testing.assert_allclose(sgd.compose(WA, *A, rows, ref.COMPOSITIONS[comp]),
                               ref.compose(WA, *A, rows, comp), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compose_of_a_few_rows_on_the_calling_thread_is_bitwise_the_parallel_one(monkeypatch, dtype):
    """Fewer than _MIN_PARALLEL rows (a transform of a few sentences) are composed without a
    parallel launch, with the same per-row kernel: bitwise the parallel result, every composition."""
    rng = np.random.default_rng(0)
    W = rng.standard_normal((50, 16)).astype(dtype)
    lengths = rng.integers(0, 9, 100)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    idx = rng.integers(0, 50, int(ptr[-1])).astype(np.int64)
    cnt = rng.integers(1, 3, idx.size).astype(np.float64)
    for comp in (0, 1, 2):
        for rows in (np.arange(3, dtype=np.int64), np.arange(100, dtype=np.int64)[::-1].copy()):
            np.testing.assert_array_equal(sgd._compose_serial(W, idx, ptr, cnt, rows, comp),
                                          sgd._compose_parallel(W, idx, ptr, cnt, rows, comp))
    launched = []
    parallel = sgd._compose_parallel
    monkeypatch.setattr(sgd, "_compose_parallel", lambda *a: (launched.append(1), parallel(*a))[1])
    few = np.arange(sgd._MIN_PARALLEL - 1, dtype=np.int64)
    assert sgd.compose(W, idx, ptr, cnt, few, 0).shape == (few.size, 16) and not launched
    sgd.compose(W, idx, ptr, cnt, np.arange(sgd._MIN_PARALLEL, dtype=np.int64), 0)
    assert launched


@pytest.mark.parametrize("opt", ["adagrad", "sgd"])
@pytest.mark.parametrize("comp,dist", [("add", "sqeuclidean"), ("bi", "sqeuclidean"), ("mean", "dot"),
                                       ("mean", "l1")])
def test_fast_epoch_matches_reference_and_is_sparse(problem, opt, comp, dist):
    A, B, WA, WB, _, _, _ = problem
    rng = np.random.default_rng(1)
    order = rng.permutation(20)
    nA, nB = rng.integers(0, 20, (20, 3)), rng.integers(0, 20, (20, 3))
    out = []
    for mod in (ref, sgd):
        wa, wb = WA.copy(), WB.copy()
        ga, gb = np.zeros_like(wa), np.zeros_like(wb)
        loss = mod.train_pair_epoch(wa, ga, A, wb, gb, B, order, nA, nB, 6, comp, dist, 1.0,
                                    0.05, 0.01, opt)
        out.append((loss, wa, wb))
    assert out[1][0] == pytest.approx(out[0][0], rel=1e-10)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-10, atol=1e-12)
    # rows of words never seen in any sentence are untouched (sparse-row updates)
    unseen = np.setdiff1d(np.arange(WA.shape[0]), A[0])
    np.testing.assert_array_equal(out[1][1][unseen], WA[unseen])


@pytest.mark.parametrize("pool", [None, 7])
def test_fast_epoch_parallel_path_matches_reference(pool):
    """Batches of >= sgd._MIN_PARALLEL sentences take the threaded path (smaller ones the serial
    one, tested above)."""
    rng = np.random.default_rng(7)
    A, B = _corpus(120, 40, rng), _corpus(120, 30, rng)
    WA, WB = rng.normal(size=(40, 6)) * 0.3, rng.normal(size=(30, 6)) * 0.3
    order = rng.permutation(120)
    nA = ref.sample_noise(rng, 120, 4, order, 30, pool)
    nB = ref.sample_noise(rng, 120, 4, order, 30, pool)
    assert 30 * 5 >= sgd._MIN_PARALLEL
    out = []
    for mod in (ref, sgd):
        wa, wb = WA.copy(), WB.copy()
        loss = mod.train_pair_epoch(wa, np.zeros_like(wa), A, wb, np.zeros_like(wb), B, order, nA,
                                    nB, 30, "bi", "sqeuclidean", 1.0, 0.05, 0.01, "adagrad",
                                    attraction=0.5)
        out.append((loss, wa, wb))
    assert out[1][0] == pytest.approx(out[0][0], rel=1e-10)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batch_size", [5, 40])
def test_fast_epoch_same_result_for_any_thread_count(batch_size):
    import numba
    rng = np.random.default_rng(2)
    A, B = _corpus(80, 15, rng), _corpus(80, 12, rng)
    WA, WB = rng.normal(size=(15, 6)) * 0.3, rng.normal(size=(12, 6)) * 0.3
    order = rng.permutation(80)
    nA, nB = rng.integers(0, 80, (80, 4)), rng.integers(0, 80, (80, 4))
    res = []
    old = numba.get_num_threads()
    try:
        for t in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(t)
            wa, wb = WA.copy(), WB.copy()
            sgd.train_pair_epoch(wa, np.zeros_like(wa), A, wb, np.zeros_like(wb), B, order, nA, nB,
                                 batch_size, "bi", "sqeuclidean", 1.0, 0.05, 0.0, "adagrad")
            res.append((wa, wb))
    finally:
        numba.set_num_threads(old)
    for wa, wb in res[1:]:
        np.testing.assert_array_equal(wa, res[0][0])
        np.testing.assert_array_equal(wb, res[0][1])


@pytest.mark.parametrize("comp", COMPS)
@pytest.mark.parametrize("dist", DISTS)
def test_attraction_gradient_matches_finite_differences(problem, comp, dist):
    A, B, WA, WB, batch, nA, nB = problem
    h, w = 1e-6, 0.7
    assert _kink_distance(A, B, WA, WB, batch, nA, nB, comp, dist, 1.0) > 1e3 * h
    loss, gA, gB = ref.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, 1.0, attraction=w)
    loss0, gA0, _ = ref.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, 1.0)
    assert loss != pytest.approx(loss0) and not np.allclose(gA, gA0)
    for W, g, which in ((WA, gA, 0), (WB, gB, 1)):
        num = np.zeros_like(W)
        for i in range(W.shape[0]):
            for j in range(W.shape[1]):
                Wp, Wm = W.copy(), W.copy()
                Wp[i, j] += h
                Wm[i, j] -= h
                args_p = (Wp, A, WB, B) if which == 0 else (WA, A, Wp, B)
                args_m = (Wm, A, WB, B) if which == 0 else (WA, A, Wm, B)
                num[i, j] = (ref.batch_loss(*args_p, batch, nA, nB, comp, dist, 1.0, w)
                             - ref.batch_loss(*args_m, batch, nA, nB, comp, dist, 1.0, w)) / (2 * h)
        assert np.linalg.norm(num - g) / np.linalg.norm(g) < 1e-6


@pytest.mark.parametrize("comp", COMPS)
@pytest.mark.parametrize("dist", DISTS)
def test_fast_gradient_with_repeated_noise_and_attraction(problem, comp, dist):
    """Noise sentences drawn several times in a batch (a noise pool), one also a batch sentence:
    the kernel composes each once and sums its gradient; same result as the reference."""
    A, B, WA, WB, batch, _, _ = problem
    rng = np.random.default_rng(3)
    pool = np.array([3, 11, 12])                     # 3 is also in the batch
    nA, nB = pool[rng.integers(0, 3, (4, 5))], pool[rng.integers(0, 3, (4, 5))]
    for w in (0.0, 0.5):
        l0, gA0, gB0 = ref.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, 1.0, w)
        l1, gA1, gB1 = sgd.batch_gradient(WA, A, WB, B, batch, nA, nB, comp, dist, 1.0, w)
        assert l1 == pytest.approx(l0, rel=1e-12)
        np.testing.assert_allclose(gA1, gA0, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(gB1, gB0, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("comp", COMPS)
def test_fast_epoch_with_noise_pool_and_attraction_matches_reference(problem, comp):
    A, B, WA, WB, _, _, _ = problem
    rng = np.random.default_rng(4)
    order = rng.permutation(20)
    nA = ref.sample_noise(rng, 20, 3, order, 6, pool=4)
    nB = ref.sample_noise(rng, 20, 3, order, 6, pool=4)
    out = []
    for mod in (ref, sgd):
        wa, wb = WA.copy(), WB.copy()
        ga, gb = np.zeros_like(wa), np.zeros_like(wb)
        loss = mod.train_pair_epoch(wa, ga, A, wb, gb, B, order, nA, nB, 6, comp, "sqeuclidean",
                                    1.0, 0.05, 0.01, "adagrad", attraction=2.0)
        out.append((loss, wa, wb))
    assert out[1][0] == pytest.approx(out[0][0], rel=1e-10)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-10, atol=1e-12)


def test_sample_noise_pool():
    rng = np.random.default_rng(5)
    n, k, bs, P = 1000, 10, 100, 30
    order = rng.permutation(n)
    noise = ref.sample_noise(rng, n, k, order, bs, pool=P)
    assert noise.shape == (n, k) and noise.min() >= 0 and noise.max() < n
    for s in range(0, n, bs):
        assert len(np.unique(noise[order[s:s + bs]])) <= P      # one pool per batch
    # the pools are fresh per batch: the batches' noise sets differ
    assert not np.array_equal(np.unique(noise[order[:bs]]), np.unique(noise[order[bs:2 * bs]]))
    # every sentence has the same chance to be a noise sample: over 20 epochs the mean count
    # is 20 k = 200 (std of one count ~82, of a 500-sentence half's mean ~4), in both halves
    counts = np.bincount(np.concatenate([ref.sample_noise(rng, n, k, order, bs, pool=P).ravel()
                                         for _ in range(20)]), minlength=n)
    assert counts.sum() == 20 * n * k
    assert abs(counts[:500].mean() - counts[500:].mean()) < 25 and (counts > 0).mean() > 0.9
    # without a pool: independent uniform draws, same stream as rng.integers
    r1, r2 = np.random.default_rng(6), np.random.default_rng(6)
    np.testing.assert_array_equal(ref.sample_noise(r1, n, k, order, bs), r2.integers(0, n, (n, k)))


def test_max_tokens_is_the_sum_of_the_longest_sentences():
    """The workspace bound (histogram of lengths, no sort) equals the sum of the r longest."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 80))
        ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 25, n))]).astype(np.int64)
        lengths = np.sort(np.diff(ptr))
        for r in (0, 1, n // 2, n, n + 3):
            assert sgd._max_tokens(ptr, r) == int(lengths[max(0, n - r):].sum())


@pytest.mark.parametrize("batch_size,V", [(3, 15), (3, 400), (30, 400)])
def test_a_reused_workspace_gives_the_epoch_of_one_call(batch_size, V):
    """An epoch run in turns of two batches with one PairWorkspace (as BiCVM+ and fits of more
    than two languages run it; sized for this pair and a smaller one) is bitwise the epoch of
    one call; the serial path (batch 3) and the threaded one (batch 30), vocabularies smaller
    and larger than a batch's tokens (the workspace sizes its word buffers by the smaller)."""
    rng = np.random.default_rng(11)
    A, B = _corpus(90, V, rng), _corpus(90, V - 3, rng)
    WA, WB = rng.normal(size=(V, 6)) * 0.3, rng.normal(size=(V - 3, 6)) * 0.3
    order = rng.permutation(90)
    nA = ref.sample_noise(rng, 90, 4, order, batch_size, None)
    nB = ref.sample_noise(rng, 90, 4, order, batch_size, None)
    args = (batch_size, "mean", "l1", 1.0, 0.05, 0.0, "sgd")
    whole = [WA.copy(), WB.copy()]
    loss = sgd.train_pair_epoch(whole[0], np.zeros_like(WA), A, whole[1], np.zeros_like(WB), B,
                                order, nA, nB, *args)
    turns = [WA.copy(), WB.copy()]
    other = _corpus(30, 7, rng)                      # a smaller pair sharing the buffers
    ws = sgd.PairWorkspace([(turns[0], A, turns[1], B), (WA[:7], other, WB[:7], other)], 4, batch_size)
    step = 2 * batch_size
    total = sum(sgd.train_pair_epoch(turns[0], np.zeros_like(WA), A, turns[1], np.zeros_like(WB), B,
                                     order[s:s + step], nA, nB, *args, workspace=ws)
                for s in range(0, 90, step))
    assert total == pytest.approx(loss, rel=1e-12)
    np.testing.assert_array_equal(turns[0], whole[0])
    np.testing.assert_array_equal(turns[1], whole[1])
    with pytest.raises(ValueError, match="workspace was made for smaller tables, or another batch size"):
        sgd.train_pair_epoch(turns[0], np.zeros_like(WA), A, turns[1], np.zeros_like(WB), B,
                             order, nA, nB, batch_size + 1, *args[1:], workspace=ws)
    longer = (A[0], A[1] + 40 * np.arange(len(A[1])), A[2])    # longer sentences than it holds
    with pytest.raises(ValueError, match="workspace was made for smaller tables"):
        sgd.train_pair_epoch(turns[0], np.zeros_like(WA), longer, turns[1], np.zeros_like(WB), B,
                             order, nA, nB, *args, workspace=ws)
