"""Numba kernels of BilDRL's sentence encoders: same API and maths as
:mod:`linxling.kernels.encoders_reference` (read its docstring for the equations and the GRU
variant: reset gate applied after the recurrent matrix product, gate order ``[z, r, n]``).

What runs in numba: the GRU layer's recurrence, forward and backward (per time step one BLAS
product ``h Wh`` / ``dgh Wh^T`` and the gate nonlinearities fused in one ``prange`` loop over the
batch), and the masked sum of the BOW encoder. The input projections (``inp Wx`` over all time
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


@numba.njit(cache=True, parallel=True, fastmath=False)
def _gru_recurrence(gx, Wh, bh, mask, Hs, Z, R, N, GHN):
    B, T, H3 = gx.shape
    H = H3 // 3
    h = np.zeros((B, H), dtype=gx.dtype)
    for t in range(T):
        gh = np.dot(h, Wh)
        for b in numba.prange(B):
            m = mask[b, t]
            for j in range(H):
                ghn = gh[b, 2 * H + j] + bh[2 * H + j]
                z = 1.0 / (1.0 + np.exp(-(gx[b, t, j] + gh[b, j] + bh[j])))
                r = 1.0 / (1.0 + np.exp(-(gx[b, t, H + j] + gh[b, H + j] + bh[H + j])))
                n = np.tanh(gx[b, t, 2 * H + j] + r * ghn)
                hp = h[b, j]
                hn = (1.0 - z) * n + z * hp
                hv = m * hn + (1.0 - m) * hp
                Hs[b, t, j] = hv
                Z[b, t, j] = z
                R[b, t, j] = r
                N[b, t, j] = n
                GHN[b, t, j] = ghn
            for j in range(H):
                h[b, j] = Hs[b, t, j]


@numba.njit(cache=True, parallel=True, fastmath=False)
def _gru_recurrence_backward(dHs, Hs, Z, R, N, GHN, mask, Wh, dgx, dWh, dbh):
    B, T, H = Hs.shape
    dh = np.zeros((B, H), dtype=Hs.dtype)
    dgh = np.empty((B, 3 * H), dtype=Hs.dtype)
    hprev = np.empty((B, H), dtype=Hs.dtype)
    dprev = np.empty((B, H), dtype=Hs.dtype)
    WhT = np.ascontiguousarray(Wh.T)
    for t in range(T - 1, -1, -1):
        for b in numba.prange(B):
            m = mask[b, t]
            for j in range(H):
                d = dh[b, j] + dHs[b, t, j]
                hp = Hs[b, t - 1, j] if t > 0 else 0.0
                hprev[b, j] = hp
                z = Z[b, t, j]
                r = R[b, t, j]
                n = N[b, t, j]
                dhn = m * d
                dprev[b, j] = (1.0 - m) * d + z * dhn
                dz = dhn * (hp - n)
                dan = dhn * (1.0 - z) * (1.0 - n * n)
                daz = dz * z * (1.0 - z)
                dar = dan * GHN[b, t, j] * r * (1.0 - r)
                dgh[b, j] = daz
                dgh[b, H + j] = dar
                dgh[b, 2 * H + j] = dan * r
                dgx[b, t, j] = daz
                dgx[b, t, H + j] = dar
                dgx[b, t, 2 * H + j] = dan
        dWh += np.dot(hprev.T, dgh)
        for k in range(3 * H):
            s = 0.0
            for b in range(B):
                s += dgh[b, k]
            dbh[k] += s
        dh = dprev + np.dot(dgh, WhT)


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
    """One GRU layer (numba recurrence); same outputs and cache as the reference."""
    B, T, _ = inp.shape
    H = Wh.shape[0]
    dt = inp.dtype
    gx = np.ascontiguousarray((inp.reshape(B * T, -1) @ Wx + bx).reshape(B, T, 3 * H), dtype=dt)
    Hs = np.empty((B, T, H), dt)
    Z, R, N, GHN = (np.empty((B, T, H), dt) for _ in range(4))
    _gru_recurrence(gx, np.ascontiguousarray(Wh, dtype=dt), np.ascontiguousarray(bh, dtype=dt),
                    np.ascontiguousarray(mask, dtype=dt), Hs, Z, R, N, GHN)
    return Hs, (inp, mask, Wx, Wh, Hs, Z, R, N, GHN)


def gru_layer_backward(dHs, cache):
    """Gradients of one GRU layer: ``(dinp, dWx, dWh, dbx, dbh)`` (numba recurrence)."""
    inp, mask, Wx, Wh, Hs, Z, R, N, GHN = cache
    B, T, H = Hs.shape
    dt = Hs.dtype
    dgx = np.empty((B, T, 3 * H), dt)
    dWh = np.zeros((H, 3 * H), dt)
    dbh = np.zeros(3 * H, dt)
    _gru_recurrence_backward(np.ascontiguousarray(dHs, dtype=dt), Hs, Z, R, N, GHN,
                             np.ascontiguousarray(mask, dtype=dt),
                             np.ascontiguousarray(Wh, dtype=dt), dgx, dWh, dbh)
    g2 = dgx.reshape(B * T, 3 * H)
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
