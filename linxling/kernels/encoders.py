"""Numba kernels of BilDRL's sentence encoders: same API and maths as
:mod:`linxling.kernels.encoders_reference` (read its docstring for the equations and the GRU
variant: reset gate applied after the recurrent matrix product, gate order ``[z, r, n]``).

What runs in numba: the GRU gate gradients of each time step, fused in one serial loop over the
batch (a ``prange`` here opens 2 x 15 parallel regions per layer and batch: on the shared 2-core
machine their barriers made the kernel 5x slower), and the masked sum of the BOW encoder. The
forward gates are whole-array NumPy ufuncs written into preallocated arrays (NumPy's exp/tanh are
SIMD; numba's, without SVML, are scalar libm calls: 4x slower in float32). The per-step products
``h Wh`` / ``dgh Wh^T`` are NumPy BLAS calls between the kernel calls (BLAS called from inside a
numba loop was measured 5x slower), and the recurrent weight gradient is one product over all
steps after the backward loop. The input projections (``inp Wx`` over all time
steps at once), the attention head and the CNN layers are whole-batch NumPy/BLAS products and
are shared with the reference. Results equal the reference up to rounding (tested).
"""
from __future__ import annotations

import numba
import numpy as np

from linxling.kernels import encoders_reference as _ref
from linxling.kernels.encoders_reference import ENCODERS, init_params, mask_from_lengths

__all__ = [
    "ENCODERS",
    "backward",
    "forward",
    "gru_layer_backward",
    "gru_layer_forward",
    "init_params",
    "mask_from_lengths",
]


def _gru_step(gx, gh, bh, m, h, hout, Z, R, N, GHN, tmp):
    """Gates of one time step for the whole batch (``gh = h Wh`` computed by BLAS before).

    Whole-array NumPy ufuncs with ``out=``: NumPy's exp and tanh are SIMD-vectorised, while numba
    without Intel's SVML calls the scalar libm functions (a numba loop took 0.8 ms per step at
    B = 64, H = 200 in float32; this takes 0.19 ms). ``tmp`` is (B, 3H) workspace.
    """
    H = h.shape[1]
    a = tmp[:, :2 * H]
    np.add(gx[:, :2 * H], gh[:, :2 * H], out=a)
    a += bh[:2 * H]
    np.negative(a, out=a)
    np.exp(a, out=a)
    a += 1.0
    np.reciprocal(a, out=a)                                  # [z, r] = sigmoid(...)
    Z[...] = a[:, :H]
    R[...] = a[:, H:]
    np.add(gh[:, 2 * H:], bh[2 * H:], out=GHN)
    np.multiply(R, GHN, out=N)
    N += gx[:, 2 * H:]
    np.tanh(N, out=N)                                        # n = tanh(gx_n + r (h Wh_n + bh_n))
    d = tmp[:, 2 * H:]
    np.subtract(N, h, out=d)                                 # h' = h + m (1 - z)(n - h)
    d *= 1.0 - Z
    d *= m[:, None]
    np.add(h, d, out=hout)


@numba.njit(cache=True, fastmath=False)
def _gru_step_backward(dh, hprev, Z, R, N, GHN, m, dgh, dgx, dprev):
    """Gate gradients of one time step: fills ``dgh`` (B, 3H), ``dgx`` (B, 3H), ``dprev`` (B, H)."""
    B, H = dh.shape
    for b in range(B):
        mb = m[b]
        for j in range(H):
            d = dh[b, j]
            z = Z[b, j]
            r = R[b, j]
            n = N[b, j]
            dhn = mb * d
            dprev[b, j] = (1.0 - mb) * d + z * dhn
            dz = dhn * (hprev[b, j] - n)
            dan = dhn * (1.0 - z) * (1.0 - n * n)
            daz = dz * z * (1.0 - z)
            dar = dan * GHN[b, j] * r * (1.0 - r)
            dgh[b, j] = daz
            dgh[b, H + j] = dar
            dgh[b, 2 * H + j] = dan * r
            dgx[b, j] = daz
            dgx[b, H + j] = dar
            dgx[b, 2 * H + j] = dan


@numba.njit(cache=True, parallel=True)
def _masked_sum(X, lengths):
    B, T, d = X.shape
    out = np.zeros((B, d), dtype=X.dtype)
    for b in numba.prange(B):
        for t in range(min(lengths[b], T)):
            for j in range(d):
                out[b, j] += X[b, t, j]
    return out


def gru_layer_forward(inp, mask, Wx, Wh, bx, bh):
    """One GRU layer (BLAS products + numba gate kernel per step); same outputs and cache as the
    reference. Time-major work arrays keep every step's slice contiguous."""
    B, T, _ = inp.shape
    H = Wh.shape[0]
    dt = inp.dtype
    gx = np.ascontiguousarray((inp.reshape(B * T, -1) @ Wx + bx).reshape(B, T, 3 * H).transpose(1, 0, 2),
                              dtype=dt)                                     # (T, B, 3H)
    mT = np.ascontiguousarray(np.asarray(mask, dtype=dt).T)                 # (T, B)
    bh = np.ascontiguousarray(bh, dtype=dt)
    Hs, Z, R, N, GHN = (np.empty((T, B, H), dt) for _ in range(5))
    h = np.zeros((B, H), dt)
    gh = np.empty((B, 3 * H), dt)
    tmp = np.empty((B, 3 * H), dt)
    for t in range(T):
        np.matmul(h, Wh, out=gh)
        _gru_step(gx[t], gh, bh, mT[t], h, Hs[t], Z[t], R[t], N[t], GHN[t], tmp)
        h = Hs[t]
    def tr(A):
        return (A.transpose(1, 0, 2))
    return tr(Hs), (inp, mask, Wx, Wh, tr(Hs), tr(Z), tr(R), tr(N), tr(GHN))


def gru_layer_backward(dHs, cache):
    """Gradients of one GRU layer: ``(dinp, dWx, dWh, dbx, dbh)`` (BLAS + numba per step)."""
    inp, mask, Wx, Wh, Hs, Z, R, N, GHN = cache
    B, T, H = Hs.shape
    dt = Hs.dtype
    def tm(A):
        return (np.ascontiguousarray(A.transpose(1, 0, 2), dtype=dt))
    HsT, ZT, RT, NT, GT, dHsT = tm(Hs), tm(Z), tm(R), tm(N), tm(GHN), tm(dHs)
    mT = np.ascontiguousarray(np.asarray(mask, dtype=dt).T)
    dgx = np.empty((T, B, 3 * H), dt)
    dgh = np.empty((T, B, 3 * H), dt)     # every step's, for one dWh product after the loop
    dprev = np.empty((B, H), dt)
    zero = np.zeros((B, H), dt)
    dh = np.zeros((B, H), dt)
    WhT = np.ascontiguousarray(Wh.T)
    for t in range(T - 1, -1, -1):
        dh += dHsT[t]
        hprev = HsT[t - 1] if t > 0 else zero
        _gru_step_backward(dh, hprev, ZT[t], RT[t], NT[t], GT[t], mT[t], dgh[t], dgx[t], dprev)
        np.matmul(dgh[t], WhT, out=dh)
        dh += dprev
    # dWh = sum_t h_{t-1}^T dgh_t as one (H, (T-1) B) x ((T-1) B, 3H) product (h_{-1} = 0)
    dWh = HsT[:T - 1].reshape(-1, H).T @ dgh[1:].reshape(-1, 3 * H) if T > 1 else np.zeros((H, 3 * H), dt)
    dbh = dgh.reshape(-1, 3 * H).sum(axis=0)
    g2 = dgx.transpose(1, 0, 2).reshape(B * T, 3 * H)
    dWx = inp.reshape(B * T, -1).T @ g2
    dbx = g2.sum(axis=0)
    dinp = (g2 @ Wx.T).reshape(B, T, -1)
    return dinp, dWx, dWh, dbx, dbh


def forward(encoder: str, params: dict, X: np.ndarray, lengths: np.ndarray, pool_size: int = 2):
    """``(Y (B, d_out), cache)``, as :func:`linxling.kernels.encoders_reference.forward`."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if encoder == "bow":
        T = X.shape[1]
        s = _masked_sum(np.ascontiguousarray(X), lengths)
        return s @ params["W"] + params["b"], (s, X, mask_from_lengths(lengths, T, X.dtype))
    return _ref.encoder_forward(encoder, params, X, lengths, pool_size, gru_layer_forward)


def backward(encoder: str, params: dict, cache, dY: np.ndarray):
    """``(grads, dX)``, as :func:`linxling.kernels.encoders_reference.backward`."""
    return _ref.encoder_backward(encoder, params, cache, dY, gru_layer_backward)
