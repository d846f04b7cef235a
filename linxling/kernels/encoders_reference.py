"""Plain NumPy reference of BilDRL's sentence encoders (forward and hand-written backward).

Every encoder maps a padded batch of word-vector sequences ``X`` (B, T, d_in) with lengths
``lengths`` (B,) (tokens ``t < lengths[b]`` are real, the rest padding; sequences are
left-aligned) to ``Y`` (B, d_out). Parameters are dicts of arrays; ``backward`` takes ``dY``
(B, d_out) and returns ``(grads, dX)`` with ``grads`` keyed like the parameters.

Encoders (Chen et al. 2019, Sec. 3.1):

``bow``
    ``Y = (sum_{t < L} x_t) W + b`` -- the sum of projected word vectors.
``gru``
    A stack of GRU layers, then an affine output layer on the last layer's state at the last
    real token. GRU variant: **reset gate applied after the recurrent matrix product**
    (cuDNN / ``torch.nn.GRU`` / Keras ``reset_after=True``, the variant of the authors'
    CuDNNGRU)::

        z = sigmoid(x Wx_z + bx_z + h Wh_z + bh_z)
        r = sigmoid(x Wx_r + bx_r + h Wh_r + bh_r)
        n = tanh(x Wx_n + bx_n + r * (h Wh_n + bh_n))
        h' = (1 - z) * n + z * h

    Padding steps carry the state unchanged (``h_t = h_{t-1}``). Gate order in the stacked
    weight matrices: ``[z, r, n]``.
``att``
    The GRU stack, then self-attention over the last layer's states ``h_t`` (of the real tokens
    only: ``lengths`` at least 1):
    ``u_t = tanh(h_t Wa + ba)``, ``e_t = u_t . u_{L-1}``, ``a = softmax_{t < L}(e)``, weighted
    states ``L a_t h_t`` (scaled by the sequence length ``L``, Sec. 3.1.1), their mean over the
    ``L`` real tokens ``c = sum_t a_t h_t``, and the affine output layer on ``c``.
``cnn``
    Layers of 1-D valid convolution (kernel ``k``, weights (k, in, C)) + tanh + max-pooling
    (window ``p``, stride 1) over the zero-padded sequence (padding takes part, as in the paper's
    zero-padded inputs); the mean of the last layer's positions goes through the affine output
    layer. Each layer shortens the sequence by ``k - 1 + p - 1``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ENCODERS", "backward", "forward", "init_params", "mask_from_lengths"]

ENCODERS = ("bow", "gru", "att", "cnn")


def mask_from_lengths(lengths: np.ndarray, T: int, dtype=np.float64) -> np.ndarray:
    return (np.arange(T)[None, :] < np.asarray(lengths)[:, None]).astype(dtype)


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def init_params(encoder: str, d_in: int, d_out: int, hidden: int = 200, n_layers: int = 1,
                attention_size: int | None = None, kernel_size: int = 2, pool_size: int = 2,
                rng=None, dtype=np.float64) -> dict:
    """Glorot-uniform weights, zero biases. Keys: see the module docstring."""
    rng = np.random.default_rng(rng)

    def glorot(shape, fan_in, fan_out):
        lim = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-lim, lim, size=shape).astype(dtype)

    p: dict = {}
    if encoder == "bow":
        p["W"] = glorot((d_in, d_out), d_in, d_out)
        p["b"] = np.zeros(d_out, dtype)
        return p
    if encoder in ("gru", "att"):
        inp = d_in
        for l in range(n_layers):
            p[f"Wx{l}"] = glorot((inp, 3 * hidden), inp, hidden)
            p[f"Wh{l}"] = glorot((hidden, 3 * hidden), hidden, hidden)
            p[f"bx{l}"] = np.zeros(3 * hidden, dtype)
            p[f"bh{l}"] = np.zeros(3 * hidden, dtype)
            inp = hidden
        if encoder == "att":
            A = hidden if attention_size is None else attention_size
            p["Wa"] = glorot((hidden, A), hidden, A)
            p["ba"] = np.zeros(A, dtype)
    elif encoder == "cnn":
        inp = d_in
        for l in range(n_layers):
            p[f"K{l}"] = glorot((kernel_size, inp, hidden), kernel_size * inp, hidden)
            p[f"bk{l}"] = np.zeros(hidden, dtype)
            inp = hidden
    else:
        raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
    p["Wo"] = glorot((hidden, d_out), hidden, d_out)
    p["bo"] = np.zeros(d_out, dtype)
    return p


def flush_subnormal(a: np.ndarray) -> np.ndarray:
    """Set the entries of ``a`` below the dtype's smallest normal number to zero, in place.

    Sharp attention puts weights like ``exp(-100)`` (subnormal in float32) on some tokens, and
    products of small weights with small gradients land there too. On x86 an arithmetic
    operation with a subnormal operand takes a slow microcode path: with attention sharpened by
    training, a float32 ATT encoder's backward pass took 11.6-12.8 ms a batch against 5.2 ms
    untrained (the same shapes), 6.0-7.0 ms with these flushes (benchmarks/README.md, "Subnormal
    numbers in the attention"). What is dropped is below ``finfo(dtype).tiny`` (1.2e-38 in
    float32, 2.2e-308 in float64) per entry, as CPUs' flush-to-zero mode drops it; NaN and inf
    are kept.
    """
    a[np.abs(a) < np.finfo(a.dtype).tiny] = 0
    return a


def _n_layers(params: dict, prefix: str) -> int:
    n = 0
    while f"{prefix}{n}" in params:
        n += 1
    return n


# ---------------------------------------------------------------------------------------- GRU
def gru_layer_forward(inp, mask, Wx, Wh, bx, bh):
    """One GRU layer. Returns ``(Hs (B, T, H), cache)``; ``Hs[:, t]`` is the carried state."""
    B, T, _ = inp.shape
    H = Wh.shape[0]
    gx = inp @ Wx + bx                        # (B, T, 3H)
    h = np.zeros((B, H), dtype=inp.dtype)
    Hs = np.empty((B, T, H), dtype=inp.dtype)
    Z = np.empty_like(Hs)
    R = np.empty_like(Hs)
    N = np.empty_like(Hs)
    GHN = np.empty_like(Hs)
    for t in range(T):
        gh = h @ Wh + bh
        z = _sigmoid(gx[:, t, :H] + gh[:, :H])
        r = _sigmoid(gx[:, t, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gx[:, t, 2 * H:] + r * gh[:, 2 * H:])
        hn = (1.0 - z) * n + z * h
        m = mask[:, t:t + 1]
        h = m * hn + (1.0 - m) * h
        Hs[:, t] = h
        Z[:, t], R[:, t], N[:, t], GHN[:, t] = z, r, n, gh[:, 2 * H:]
    return Hs, (inp, mask, Wx, Wh, Hs, Z, R, N, GHN)


def gru_layer_backward(dHs, cache, input_grad: bool = True):
    """Gradients of one GRU layer: ``(dinp, dWx, dWh, dbx, dbh)`` (``dinp`` None without
    ``input_grad``)."""
    inp, mask, Wx, Wh, Hs, Z, R, N, GHN = cache
    B, T, H = Hs.shape
    dgx = np.zeros((B, T, 3 * H), dtype=Hs.dtype)
    dWh = np.zeros_like(Wh)
    dbh = np.zeros(3 * H, dtype=Hs.dtype)
    dh = np.zeros((B, H), dtype=Hs.dtype)
    for t in range(T - 1, -1, -1):
        dh = dh + dHs[:, t]
        hprev = Hs[:, t - 1] if t > 0 else np.zeros((B, H), dtype=Hs.dtype)
        m = mask[:, t:t + 1]
        z, r, n, ghn = Z[:, t], R[:, t], N[:, t], GHN[:, t]
        dhn = m * dh
        dprev = (1.0 - m) * dh + z * dhn
        dz = dhn * (hprev - n)
        dn = dhn * (1.0 - z)
        dan = dn * (1.0 - n * n)
        daz = dz * z * (1.0 - z)
        dar = dan * ghn * r * (1.0 - r)
        dgh = np.concatenate([daz, dar, dan * r], axis=1)
        dgx[:, t] = np.concatenate([daz, dar, dan], axis=1)
        dWh += hprev.T @ dgh
        dbh += dgh.sum(axis=0)
        dh = dprev + dgh @ Wh.T
    dWx = inp.reshape(B * T, -1).T @ dgx.reshape(B * T, -1)
    dbx = dgx.sum(axis=(0, 1))
    dinp = dgx @ Wx.T if input_grad else None
    return dinp, dWx, dWh, dbx, dbh


def _tm2d(X):
    """``X`` (B, T, k) as a (T B, k) matrix of time-major rows: a view when ``X`` is the
    transposed view of a time-major array (the numba GRU's states), a copy otherwise. One 2-D
    product over it replaces a stack of B small ones (6x slower in float32 for ``dpre Waᵀ``)."""
    return np.ascontiguousarray(X.transpose(1, 0, 2)).reshape(-1, X.shape[2])


def _from_tm2d(Y, B: int, T: int):
    """A (T B, k) matrix of time-major rows as a (B, T, k) view."""
    return Y.reshape(T, B, -1).transpose(1, 0, 2)


def _last_state(Hs, lengths):
    idx = np.maximum(np.asarray(lengths) - 1, 0)
    return Hs[np.arange(Hs.shape[0]), idx]


# ---------------------------------------------------------------------------------------- API
def forward(encoder: str, params: dict, X: np.ndarray, lengths: np.ndarray, pool_size: int = 2):
    """``(Y (B, d_out), cache)``; ``pool_size`` is the CNN max-pooling window."""
    return encoder_forward(encoder, params, X, lengths, pool_size, gru_layer_forward)


def encoder_forward(encoder, params, X, lengths, pool_size, gru_layer):
    """:func:`forward` with the GRU layer function given (the numba kernels pass theirs)."""
    T = X.shape[1]
    lengths = np.asarray(lengths)
    mask = mask_from_lengths(lengths, T, X.dtype)
    if encoder == "bow":
        s = (X * mask[:, :, None]).sum(axis=1)
        return s @ params["W"] + params["b"], (s, X, mask)
    if encoder in ("gru", "att"):
        caches = []
        inp = X
        for l in range(_n_layers(params, "Wx")):
            inp, c = gru_layer(inp, mask, params[f"Wx{l}"], params[f"Wh{l}"],
                                       params[f"bx{l}"], params[f"bh{l}"])
            caches.append(c)
        Hs = inp
        if encoder == "gru":
            hL = _last_state(Hs, lengths)
            return hL @ params["Wo"] + params["bo"], (caches, Hs, hL, lengths)
        B = Hs.shape[0]
        if lengths.size and lengths.min() < 1:
            raise ValueError("lengths: the attention encoder needs at least one token per sequence")
        # the attention's rows: the real tokens' states only, time-major (padding is never scored)
        real = np.flatnonzero(mask.T.reshape(-1) > 0)
        seq = real % B                                                 # each row's sequence
        last = np.searchsorted(real, (lengths - 1) * B + np.arange(B))  # each sequence's last token's row
        Hr = _tm2d(Hs)[real]                                           # (n, H)
        U = np.tanh(Hr @ params["Wa"] + params["ba"])                  # (n, A)
        q = U[last]                                                    # (B, A)
        e = np.full(T * B, -np.inf, U.dtype)
        e[real] = np.einsum("ra,ra->r", U, q[seq])
        e = e.reshape(T, B).T                                          # (B, T), -inf on padding
        e = e - e.max(axis=1, keepdims=True)
        a = np.exp(e) * mask
        a /= a.sum(axis=1, keepdims=True)
        flush_subnormal(a)
        # the mean over the L tokens of the weighted states L a_t h_t: c = sum_t a_t h_t (a is 0 on padding)
        c = np.matmul(a[:, None, :], Hs)[:, 0]
        return c @ params["Wo"] + params["bo"], (caches, Hs, U, q, a, c, mask, real, seq, last, Hr)
    if encoder == "cnn":
        caches = []
        inp = X
        for l in range(_n_layers(params, "K")):
            K, bk = params[f"K{l}"], params[f"bk{l}"]
            k = K.shape[0]
            Tc = inp.shape[1] - k + 1
            pre = sum(inp[:, j:j + Tc] @ K[j] for j in range(k)) + bk   # (B, Tc, C)
            act = np.tanh(pre)
            p = pool_size
            Tp = Tc - p + 1
            win = np.stack([act[:, j:j + Tp] for j in range(p)], axis=0)  # (p, B, Tp, C)
            arg = win.argmax(axis=0)
            out = np.take_along_axis(win, arg[None], axis=0)[0]
            caches.append((inp, act, arg, k, p))
            inp = out
        mean = inp.mean(axis=1)
        return mean @ params["Wo"] + params["bo"], (caches, mean, inp.shape[1])
    raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")


def backward(encoder: str, params: dict, cache, dY: np.ndarray, input_grad: bool = True):
    """``(grads, dX)`` for the loss gradient ``dY`` (B, d_out); ``dX`` is ``None`` with
    ``input_grad=False`` (the input's gradient is then not computed)."""
    return encoder_backward(encoder, params, cache, dY, gru_layer_backward, input_grad=input_grad)


def encoder_backward(encoder, params, cache, dY, gru_layer_back, input_grad: bool = True):
    """:func:`backward` with the GRU layer's backward function given."""
    g: dict = {}
    if encoder == "bow":
        s, X, mask = cache
        g["W"] = s.T @ dY
        g["b"] = dY.sum(axis=0)
        ds = dY @ params["W"].T
        return g, (ds[:, None, :] * mask[:, :, None] * np.ones_like(X) if input_grad else None)
    if encoder in ("gru", "att"):
        caches = cache[0]
        Hs = cache[1]
        B, T, H = Hs.shape
        dHs2 = np.zeros((T * B, H), Hs.dtype)                         # time-major rows (the GRU's layout)
        dHs = _from_tm2d(dHs2, B, T)
        if encoder == "gru":
            _, _, hL, lengths = cache
            g["Wo"] = hL.T @ dY
            g["bo"] = dY.sum(axis=0)
            dhL = dY @ params["Wo"].T
            dHs[np.arange(B), np.maximum(lengths - 1, 0)] += dhL
        else:
            _, _, U, q, a, c, mask, real, seq, last, Hr = cache
            g["Wo"] = c.T @ dY
            g["bo"] = dY.sum(axis=0)
            dc = dY @ params["Wo"].T                               # (B, H)
            dHs += a[:, :, None] * dc[:, None, :]
            da = np.einsum("bth,bh->bt", Hs, dc) * mask
            de = a * (da - (a * da).sum(axis=1, keepdims=True))
            der = de.T.reshape(-1)[real]                           # the real rows' score gradients
            dU = der[:, None] * q[seq]                             # (n, A)
            S = np.zeros((B, real.size), U.dtype)                  # dq_b = sum over b's rows of de U
            S[seq, np.arange(real.size)] = der
            dU[last] += S @ U
            dpre = flush_subnormal(dU * (1.0 - U * U))
            g["Wa"] = Hr.T @ dpre
            g["ba"] = dpre.sum(axis=0)
            dHs2[real] += dpre @ params["Wa"].T
            flush_subnormal(dHs2)
        d = dHs
        for l in range(len(caches) - 1, -1, -1):
            d, g[f"Wx{l}"], g[f"Wh{l}"], g[f"bx{l}"], g[f"bh{l}"] = gru_layer_back(
                d, caches[l], input_grad=input_grad or l > 0)
        return g, d
    if encoder == "cnn":
        caches, mean, Tl = cache
        g["Wo"] = mean.T @ dY
        g["bo"] = dY.sum(axis=0)
        dmean = dY @ params["Wo"].T
        B = dY.shape[0]
        d = np.repeat((dmean / Tl)[:, None, :], Tl, axis=1)
        for l in range(len(caches) - 1, -1, -1):
            inp, act, arg, k, p = caches[l]
            Tp = d.shape[1]
            dact = np.zeros_like(act)
            for j in range(p):
                dact[:, j:j + Tp] += np.where(arg == j, d, 0.0)
            dpre = dact * (1.0 - act * act)
            K = params[f"K{l}"]
            Tc = act.shape[1]
            g[f"K{l}"] = np.stack([inp[:, j:j + Tc].reshape(B * Tc, -1).T @ dpre.reshape(B * Tc, -1)
                                   for j in range(k)])
            g[f"bk{l}"] = dpre.sum(axis=(0, 1))
            if l == 0 and not input_grad:
                return g, None
            dinp = np.zeros_like(inp)
            for j in range(k):
                dinp[:, j:j + Tc] += dpre @ K[j].T
            d = dinp
        return g, d
    raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
