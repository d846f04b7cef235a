"""BilDRL encoders: float64 central finite-difference gradient checks, numba kernel vs NumPy
reference, batched vs one-at-a-time, and AMSGrad kernel vs reference."""
import numpy as np
import pytest

from linxling.kernels import encoders as K
from linxling.kernels import encoders_reference as R
from linxling.kernels.optim import AMSGrad, amsgrad_step, amsgrad_step_reference

ENC = R.ENCODERS


def _setup(enc, seed=0, B=3, T=6, d=4, do=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, T, d))
    L = np.array([T, 3, 1][:B])
    p = R.init_params(enc, d, do, hidden=5, n_layers=2, rng=seed + 1)
    for k in p:  # non-zero biases so every term is exercised
        p[k] = p[k] + 0.1 * rng.standard_normal(p[k].shape)
    G = rng.standard_normal((B, do))
    return X, L, p, G


@pytest.mark.parametrize("enc", ENC)
@pytest.mark.parametrize("impl", [R, K], ids=["reference", "numba"])
def test_gradient_matches_central_differences(enc, impl):
    X, L, p, G = _setup(enc)
    _, cache = impl.forward(enc, p, X, L)
    grads, dX = impl.backward(enc, p, cache, G)
    h = 1e-6

    def loss():
        return float((impl.forward(enc, p, X, L)[0] * G).sum())

    for name in list(p) + ["X"]:
        arr = X if name == "X" else p[name]
        analytic = dX if name == "X" else grads[name]
        assert analytic.shape == arr.shape
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            old = arr[i]
            arr[i] = old + h
            fp = loss()
            arr[i] = old - h
            fm = loss()
            arr[i] = old
            num[i] = (fp - fm) / (2 * h)
        err = np.linalg.norm(num - analytic) / max(np.linalg.norm(num), 1e-300)
        assert err < 1e-6, (enc, name, err)
    # input_grad=False (BilDRL on fixed word vectors) skips dX and leaves the weights' gradients as they were
    g2, none = impl.backward(enc, p, cache, G, input_grad=False)
    assert none is None and set(g2) == set(grads)
    for k in grads:
        np.testing.assert_array_equal(g2[k], grads[k], err_msg=k)


@pytest.mark.parametrize("enc", ENC)
def test_numba_kernel_matches_reference(enc):
    rng = np.random.default_rng(3)
    B, T, d, do = 6, 15, 8, 4
    X = rng.standard_normal((B, T, d))
    L = np.array([15, 3, 1, 7, 9, 15])
    p = R.init_params(enc, d, do, hidden=7, n_layers=3, rng=2)
    G = rng.standard_normal((B, do))
    Y1, c1 = R.forward(enc, p, X, L)
    Y2, c2 = K.forward(enc, p, X, L)
    g1, dX1 = R.backward(enc, p, c1, G)
    g2, dX2 = K.backward(enc, p, c2, G)
    # same operations in a different association order: rounding-level agreement
    np.testing.assert_allclose(Y2, Y1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dX2, dX1, rtol=1e-10, atol=1e-12)
    assert set(g1) == set(g2) == set(p)
    for k in g1:
        np.testing.assert_allclose(g2[k], g1[k], rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("enc", ENC)
@pytest.mark.parametrize("lengths", [[15, 9, 7, 3, 1, 1], [2, 15, 1, 2, 5, 1]], ids=["longest-first", "mixed"])
def test_running_prefix_matches_reference(enc, lengths):
    # the numba GRU steps only the prefix of rows that holds the running ones (all of them when
    # sorted longest first, as BilDRL's batches are; finished rows inside it when mixed) and packs
    # the input and recurrent products to those rows: the reference computes every row
    from linxling.kernels.encoders import _active_prefix
    rng = np.random.default_rng(9)
    L = np.array(lengths)
    B, T, d, do = len(L), 15, 5, 4
    X = rng.standard_normal((B, T, d))
    p = R.init_params(enc, d, do, hidden=6, n_layers=2, rng=3)
    G = rng.standard_normal((B, do))
    (Y1, c1), (Y2, c2) = R.forward(enc, p, X, L), K.forward(enc, p, X, L)
    np.testing.assert_allclose(Y2, Y1, rtol=1e-12, atol=1e-12)
    (g1, dX1), (g2, dX2) = R.backward(enc, p, c1, G), K.backward(enc, p, c2, G)
    np.testing.assert_allclose(dX2, dX1, rtol=1e-10, atol=1e-12)
    for k in g1:
        np.testing.assert_allclose(g2[k], g1[k], rtol=1e-10, atol=1e-12, err_msg=k)
    mask = R.mask_from_lengths(L, T)
    expect = [max((b + 1 for b in range(B) if L[b] > t), default=0) for t in range(T)]
    np.testing.assert_array_equal(_active_prefix(mask), expect)


@pytest.mark.parametrize("enc", ENC)
def test_batched_equals_one_at_a_time(enc):
    rng = np.random.default_rng(4)
    B, T, d, do = 5, 15, 6, 3
    X = rng.standard_normal((B, T, d))
    L = np.array([15, 2, 1, 8, 11])
    p = R.init_params(enc, d, do, hidden=6, n_layers=2, rng=5)
    Y = K.forward(enc, p, X, L)[0]
    single = np.vstack([K.forward(enc, p, X[i:i + 1], L[i:i + 1])[0] for i in range(B)])
    np.testing.assert_allclose(single, Y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("impl", [R, K], ids=["reference", "numba"])
def test_attention_matches_its_equations_sequence_by_sequence(impl):
    """The ATT head (scored on the real tokens' rows only) against Sec. 3.1.1 written out per
    sequence: u_t = tanh(h_t Wa + ba), e_t = u_t . u_{L-1}, a = softmax(e), c = sum_t a_t h_t."""
    rng = np.random.default_rng(11)
    B, T, d, do = 5, 9, 4, 3
    X = rng.standard_normal((B, T, d))
    L = np.array([9, 1, 4, 9, 2])
    p = R.init_params("att", d, do, hidden=6, attention_size=7, rng=12)
    p["ba"] = p["ba"] + 0.1 * rng.standard_normal(p["ba"].shape)
    Hs = R.gru_layer_forward(X, R.mask_from_lengths(L, T), p["Wx0"], p["Wh0"], p["bx0"], p["bh0"])[0]
    want = []
    for b in range(B):
        h = Hs[b, :L[b]]
        u = np.tanh(h @ p["Wa"] + p["ba"])
        e = u @ u[-1]
        a = np.exp(e - e.max())
        a /= a.sum()
        want.append((a @ h) @ p["Wo"] + p["bo"])
    np.testing.assert_allclose(impl.forward("att", p, X, L)[0], np.array(want), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="lengths"):
        impl.forward("att", p, X, np.array([9, 0, 4, 9, 2]))


@pytest.mark.parametrize("enc", ["bow", "gru", "att"])
def test_padding_content_is_ignored(enc):
    # masked encoders must not see what lies beyond the length
    rng = np.random.default_rng(6)
    X = rng.standard_normal((2, 15, 4))
    L = np.array([4, 9])
    p = R.init_params(enc, 4, 3, hidden=5, n_layers=2, rng=7)
    Y = K.forward(enc, p, X, L)[0]
    X2 = X.copy()
    X2[0, 4:] = 100.0
    X2[1, 9:] = -3.0
    np.testing.assert_allclose(K.forward(enc, p, X2, L)[0], Y, rtol=1e-12, atol=1e-12)


def test_float32_forward_close_to_float64():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((4, 15, 6))
    L = np.array([15, 5, 2, 9])
    p = R.init_params("att", 6, 3, hidden=8, n_layers=2, rng=9)
    p32 = {k: v.astype(np.float32) for k, v in p.items()}
    Y = K.forward("att", p, X, L)[0]
    Y32 = K.forward("att", p32, X.astype(np.float32), L)[0]
    assert Y32.dtype == np.float32
    np.testing.assert_allclose(Y32, Y, rtol=1e-4, atol=1e-5)


def test_amsgrad_kernel_matches_reference_and_keeps_vhat_monotone():
    rng = np.random.default_rng(10)
    p1 = rng.standard_normal((4, 5))
    p2 = p1.copy()
    s1 = [np.zeros_like(p1) for _ in range(3)]
    s2 = [np.zeros_like(p1) for _ in range(3)]
    prev_vhat = np.zeros_like(p1)
    for t in range(1, 20):
        g = rng.standard_normal(p1.shape) * (10.0 if t == 3 else 1.0)
        amsgrad_step(p1, g, *s1, t, lr=0.01)
        amsgrad_step_reference(p2, g, *s2, t, lr=0.01)
        np.testing.assert_allclose(p1, p2, rtol=1e-13, atol=1e-15)
        assert np.all(s1[2] >= prev_vhat)
        prev_vhat = s1[2].copy()


def test_amsgrad_minimises_a_quadratic_and_checks_shapes():
    target = np.array([1.0, -2.0, 3.0])
    params = {"w": np.zeros(3)}
    opt = AMSGrad(params, lr=0.05)
    for _ in range(2000):
        opt.step({"w": 2 * (params["w"] - target)})
    np.testing.assert_allclose(params["w"], target, atol=1e-3)
    with pytest.raises(ValueError, match="shape"):
        opt.step({"w": np.zeros(4)})


def test_flush_subnormal_zeroes_only_subnormals():
    for dt in (np.float32, np.float64):
        tiny = np.finfo(dt).tiny
        a = np.array([tiny, -tiny, tiny / 2, -tiny / 4, 0.0, 1.5, -3.0, np.inf, np.nan], dt)
        out = R.flush_subnormal(a)
        assert out is a
        np.testing.assert_array_equal(a, np.array([tiny, -tiny, 0, 0, 0, 1.5, -3.0, np.inf, np.nan], dt))


def test_sharp_attention_leaves_no_subnormal_numbers(monkeypatch):
    """A float32 ATT encoder whose attention is sharp (tanh saturated, 128 attention units: some
    weights ``exp(-90)``, subnormal) passes no subnormal number to the backward products or the
    GRU layers, and its outputs and gradients equal those computed without flushing: what is
    dropped is below float32's rounding of every result here."""
    rng = np.random.default_rng(0)
    B, T, d, A = 32, 15, 8, 128
    p = R.init_params("att", d, d, hidden=16, attention_size=A, rng=0, dtype=np.float32)
    p["Wa"] *= 50
    X = rng.standard_normal((B, T, d)).astype(np.float32)
    L = rng.integers(1, T + 1, B)
    seen = []
    gru_backward = K.gru_layer_backward

    def spy(dHs, cache, input_grad=True):
        seen.append(dHs.copy())
        return gru_backward(dHs, cache, input_grad)

    def n_sub(a):
        return int(((a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)).sum())

    monkeypatch.setattr(K, "gru_layer_backward", spy)
    runs = {}
    for flush in (False, True):
        with monkeypatch.context() as m:
            if not flush:
                m.setattr(R, "flush_subnormal", lambda a: a)
            Y, cache = K.forward("att", p, X, L)
            g, _ = K.backward("att", p, cache, Y, input_grad=False)
        runs[flush] = (Y, g, n_sub(cache[4]), n_sub(seen[-1]))
    assert runs[False][2] > 0 and runs[False][3] > 0          # without flushing: subnormal weights and dHs
    assert runs[True][2] == 0 and runs[True][3] == 0
    np.testing.assert_array_equal(runs[True][0], runs[False][0])
    for k, v in runs[False][1].items():
        np.testing.assert_allclose(runs[True][1][k], v, rtol=1e-6, atol=1e-30, err_msg=k)
        assert n_sub(runs[True][1][k]) == 0
