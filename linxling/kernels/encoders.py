"""Numba kernels of BilDRL's sentence encoders: same API and maths as
:mod:`linxling.kernels.encoders_reference` (read its docstring for the equations and the GRU
variant: reset gate applied after the recurrent matrix product, gate order ``[z, r, n]``).

What runs in numba: the GRU gate gradients of each time step, fused in one serial loop over the
batch (a ``prange`` here opens 2 x 15 parallel regions per layer and batch: on the shared 2-core
machine their barriers made the kernel 5x slower), and the masked sum of the BOW encoder. The
forward gates are whole-array NumPy ufuncs written into preallocated contiguous arrays (NumPy's
exp/tanh are SIMD; numba's, without SVML, are scalar libm calls: 4x slower in float32). The per-step products
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


def _gru_step(gx, gh, bhn, m, h, hout, Z, R, N, GHN, zr, d, full):
    """Gates of one time step for the whole batch (``gh = h Wh`` computed by BLAS before; ``gx``
    holds ``x Wx + bx`` with ``bh``'s z and r parts added, ``bhn`` is ``bh``'s n part).

    Whole-array NumPy ufuncs with ``out=``: NumPy's exp and tanh are SIMD-vectorised, while numba
    without Intel's SVML calls the scalar libm functions (a numba loop took 0.8 ms per step at
    B = 64, H = 200 in float32). Every ufunc writes a contiguous array: on a column slice of a
    (B, 3H) array (row stride 3H) NumPy walks row by row, 4-6x slower (an add of (64, 400)
    float32: 17 us strided, 2.6 us contiguous). ``zr`` (B, 2H) and ``d`` (B, H) are contiguous
    workspace; ``full``: every row of the batch is running (``m`` all ones), as in BilDRL's
    batches sorted longest first.
    """
    H = h.shape[1]
    np.add(gx[:, :2 * H], gh[:, :2 * H], out=zr)
    np.negative(zr, out=zr)
    np.exp(zr, out=zr)
    zr += 1.0
    np.reciprocal(zr, out=zr)                                # [z, r] = sigmoid(...)
    Z[...] = zr[:, :H]
    R[...] = zr[:, H:]
    np.add(gh[:, 2 * H:], bhn, out=GHN)
    np.multiply(R, GHN, out=N)
    N += gx[:, 2 * H:]
    np.tanh(N, out=N)                                        # n = tanh(gx_n + r (h Wh_n + bh_n))
    np.subtract(h, N, out=d)                                 # n + z (h - n) = (1 - z) n + z h
    d *= Z
    if full:
        np.add(N, d, out=hout)
    else:                                                    # h' = h + m ((1 - z) n + z h - h)
        d += N
        d -= h
        d *= m[:, None]
        np.add(h, d, out=hout)


@numba.njit(cache=True, fastmath=False)
def _gru_step_backward(dh, hprev, Z, R, N, GHN, m, dgh, dgx, dprev):
    """Gate gradients of one time step: fills ``dgh`` (B, 3H), ``dgx`` (B, 3H), ``dprev`` (B, H).

    In the arrays' dtype throughout (``one``: a float literal ``1.0`` would make every float32
    product float64, and the loop half as fast: 55 -> 31 us at B = 64, H = 200)."""
    B, H = dh.shape
    one = dh.dtype.type(1)
    for b in range(B):
        mb = m[b]
        for j in range(H):
            d = dh[b, j]
            z = Z[b, j]
            r = R[b, j]
            n = N[b, j]
            dhn = mb * d
            dprev[b, j] = (one - mb) * d + z * dhn
            dz = dhn * (hprev[b, j] - n)
            dan = dhn * (one - z) * (one - n * n)
            daz = dz * z * (one - z)
            dar = dan * GHN[b, j] * r * (one - r)
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


def _active_prefix(mask) -> np.ndarray:
    """Per time step, the length of the shortest prefix of the batch's rows that holds every row
    still running (``mask[b, t] > 0``); the rows after it only carry their state. With the rows
    sorted by length, longest first (as BilDRL's batches are), it is the number of rows running."""
    act = np.asarray(mask) > 0                                       # (B, T)
    B = act.shape[0]
    last = B - np.argmax(act[::-1], axis=0)                          # 1 + last running row
    return np.where(act.any(axis=0), last, 0).astype(np.int64)


def _packed_rows(ns: np.ndarray, B: int) -> np.ndarray | None:
    """Time-major row numbers ``t B + b`` of every step's running prefix (``b < ns[t]``), or
    ``None`` when that is every row."""
    if (ns == B).all():
        return None
    return np.concatenate([t * B + np.arange(n) for t, n in enumerate(ns)]).astype(np.int64)


def gru_layer_forward(inp, mask, Wx, Wh, bx, bh):
    """One GRU layer (BLAS products + numba gate kernel per step); same outputs as the reference.

    Time-major work arrays keep every step's slice contiguous. Each step computes only the prefix
    of rows that holds the running ones (:func:`_active_prefix`); the rows after it copy their
    state, as the masked update would, and neither their gates nor their input projections are
    computed (the backward pass reads neither). The cache holds the time-major input rows and that packing."""
    B, T, _ = inp.shape
    H = Wh.shape[0]
    dt = inp.dtype
    ns = _active_prefix(mask)
    rows = _packed_rows(ns, B)
    inp2 = _ref._tm2d(inp)                                                  # (T B, d_in), time-major
    bias = np.array(bx, dtype=dt)
    bias[:2 * H] += bh[:2 * H]                  # bh's z and r parts add to the input's, once per layer
    if rows is None:
        gx = inp2 @ Wx
        gx += bias
    else:                          # only the rows that are read (the rest stay unwritten, never read)
        gx = np.empty((T * B, 3 * H), dt)
        gx[rows] = inp2[rows] @ Wx + bias
    gx = gx.reshape(T, B, 3 * H)
    mT = np.ascontiguousarray(np.asarray(mask, dtype=dt).T)                 # (T, B)
    bhn = np.ascontiguousarray(bh[2 * H:], dtype=dt)
    Hs, Z, R, N, GHN = (np.empty((T, B, H), dt) for _ in range(5))
    h = np.zeros((B, H), dt)
    gh = np.empty((B, 3 * H), dt)
    zr = np.empty((B, 2 * H), dt)
    d = np.empty((B, H), dt)
    for t in range(T):
        n = int(ns[t])
        if n < B:
            Hs[t, n:] = h[n:]             # (their gate arrays are left unwritten: never read)
        if n:
            np.matmul(h[:n], Wh, out=gh[:n])
            _gru_step(gx[t, :n], gh[:n], bhn, mT[t, :n], h[:n], Hs[t, :n], Z[t, :n], R[t, :n], N[t, :n],
                      GHN[t, :n], zr[:n], d[:n], bool(mT[t, :n].all()))
        h = Hs[t]
    return Hs.transpose(1, 0, 2), (inp2, (B, T), ns, rows, mT, Wx, Wh, Hs, Z, R, N, GHN)


def gru_layer_backward(dHs, cache, input_grad: bool = True):
    """Gradients of one GRU layer: ``(dinp, dWx, dWh, dbx, dbh)`` (BLAS + numba per step), over
    each step's prefix of running rows as in :func:`gru_layer_forward` (the rows after it pass
    their state's gradient back unchanged and have zero gate gradients; the products with the
    input and the previous states take only the packed rows). ``input_grad=False``: ``dinp`` is
    ``None`` (the first layer's input gradient, which only joint learning needs)."""
    inp2, (B, T), ns, rows, mT, Wx, Wh, HsT, ZT, RT, NT, GT = cache
    H = HsT.shape[2]
    dt = HsT.dtype
    dHsT = np.ascontiguousarray(dHs.transpose(1, 0, 2), dtype=dt)
    dgx = np.empty((T, B, 3 * H), dt)
    dgh = np.empty((T, B, 3 * H), dt)     # every step's, for one dWh product after the loop
    dprev = np.empty((B, H), dt)
    zero = np.zeros((B, H), dt)
    dh = np.zeros((B, H), dt)
    WhT = np.ascontiguousarray(Wh.T)
    for t in range(T - 1, -1, -1):
        n = int(ns[t])
        dh += dHsT[t]
        if n < B:
            dgh[t, n:] = 0.0
            dgx[t, n:] = 0.0
        if n:
            hprev = HsT[t - 1, :n] if t > 0 else zero[:n]
            _gru_step_backward(dh[:n], hprev, ZT[t, :n], RT[t, :n], NT[t, :n], GT[t, :n], mT[t, :n],
                               dgh[t, :n], dgx[t, :n], dprev[:n])
            np.matmul(dgh[t, :n], WhT, out=dh[:n])
            dh[:n] += dprev[:n]
    dgh2, dgx2 = dgh.reshape(T * B, 3 * H), dgx.reshape(T * B, 3 * H)
    # dWh = sum_t h_{t-1}^T dgh_t (h_{-1} = 0): one product over the packed rows of steps 1..T-1,
    # whose previous states are the rows B earlier
    if rows is None:
        dWh = HsT[:T - 1].reshape(-1, H).T @ dgh2[B:] if T > 1 else np.zeros((H, 3 * H), dt)
        g, x = dgx2, inp2
    else:
        later = rows[rows >= B]
        dWh = HsT.reshape(T * B, H)[later - B].T @ dgh2[later]
        g, x = dgx2[rows], inp2[rows]
    dbh = dgh2.sum(axis=0)
    dWx = x.T @ g
    dbx = g.sum(axis=0)
    dinp = None
    if input_grad:
        if rows is None:
            dinp2 = g @ Wx.T
        else:
            dinp2 = np.zeros((T * B, Wx.shape[0]), dt)
            dinp2[rows] = g @ Wx.T
        dinp = _ref._from_tm2d(dinp2, B, T)
    return dinp, dWx, dWh, dbx, dbh


def forward(encoder: str, params: dict, X: np.ndarray, lengths: np.ndarray, pool_size: int = 2):
    """``(Y (B, d_out), cache)``, as :func:`linxling.kernels.encoders_reference.forward`."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if encoder == "bow":
        T = X.shape[1]
        s = _masked_sum(np.ascontiguousarray(X), lengths)
        return s @ params["W"] + params["b"], (s, X, mask_from_lengths(lengths, T, X.dtype))
    return _ref.encoder_forward(encoder, params, X, lengths, pool_size, gru_layer_forward)


def backward(encoder: str, params: dict, cache, dY: np.ndarray, input_grad: bool = True):
    """``(grads, dX)``, as :func:`linxling.kernels.encoders_reference.backward`; ``dX`` is
    ``None`` with ``input_grad=False`` (training on fixed word vectors, where it is not used)."""
    return _ref.encoder_backward(encoder, params, cache, dY, gru_layer_backward, input_grad=input_grad)
