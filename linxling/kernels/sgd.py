"""Numba kernels for sentence-pair SGD (BiCVM, Etter's ranking network).

Same computation as the plain NumPy reference :mod:`linxling.kernels.sgd_reference` (see its
docstring for the compositions, energies and loss). Layout of one minibatch step:

1. compose the sentence vectors of every pair and noise sentence, ``prange`` over samples;
2. hinge losses and the gradients with respect to the sentence vectors, ``prange`` over samples
   (each sample writes only its own rows: no locks);
3. back-propagate into a dense gradient buffer, ``prange`` over blocks of 32 columns of both
   tables (every operation of the compositions is column-wise, so each thread owns its columns:
   no locks, and the result does not depend on the thread count); a sentence whose hinges are
   all inactive has a zero gradient and is skipped;
4. sparse-row update (AdaGrad or SGD, L2 term ``alpha * W[row]``) of only the rows of words in
   the batch's sentences, which also resets their buffer rows to zero.

The word tables may be float32 or float64 (numba compiles one version per dtype; the
gradient checks use float64); the batch workspace is allocated once per epoch.

Integer codes: composition add=0 mean=1 bi=2; distance sqeuclidean=0 l1=1 dot=2;
optimizer adagrad=0 sgd=1.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from linxling.kernels.sgd_reference import COMPOSITIONS, DISTANCES, OPTIMIZERS

__all__ = ["COMPOSITIONS", "DISTANCES", "OPTIMIZERS", "batch_gradient", "compose", "train_pair_epoch"]

_BLOCK = 32


@njit(cache=True, fastmath=True)
def _compose_row(W, idx, ptr, cnt, r, comp, out):
    d = W.shape[1]
    for c in range(d):
        out[c] = 0.0
    s, e = ptr[r], ptr[r + 1]
    if e == s:
        return
    if comp == 2:
        if e - s == 1:
            t = idx[s]
            for c in range(d):
                out[c] = np.tanh(W[t, c])
            return
        for p in range(s + 1, e):
            t0, t1 = idx[p - 1], idx[p]
            for c in range(d):
                out[c] += np.tanh(W[t0, c] + W[t1, c])
        return
    tot = 0.0
    for p in range(s, e):
        t = idx[p]
        w = cnt[p]
        tot += w
        for c in range(d):
            out[c] += w * W[t, c]
    if comp == 1:
        for c in range(d):
            out[c] /= tot


@njit(parallel=True, cache=True)
def compose(W, idx, ptr, cnt, rows, comp):
    out = np.zeros((rows.shape[0], W.shape[1]), dtype=W.dtype)
    for i in prange(rows.shape[0]):
        _compose_row(W, idx, ptr, cnt, rows[i], comp, out[i])
    return out


@njit(cache=True, fastmath=True)
def _energy(u, v, dist):
    e = 0.0
    for c in range(u.shape[0]):
        if dist == 0:
            e += (u[c] - v[c]) ** 2
        elif dist == 1:
            e += abs(u[c] - v[c])
        else:
            e -= u[c] * v[c]
    return e


@njit(cache=True, fastmath=True)
def _accum(u, v, dist, su, sv, gu, gv):
    """gu += su * dE/du(u, v); gv += sv * dE/dv(u, v)."""
    for c in range(u.shape[0]):
        if dist == 0:
            g = 2.0 * (u[c] - v[c])
            gu[c] += su * g
            gv[c] -= sv * g
        elif dist == 1:
            x = u[c] - v[c]
            g = 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
            gu[c] += su * g
            gv[c] -= sv * g
        else:
            gu[c] -= su * v[c]
            gv[c] -= sv * u[c]


@njit(cache=True, fastmath=True)
def _scatter_cols(W, idx, ptr, cnt, r, g, comp, buf, c0, c1):
    s, e = ptr[r], ptr[r + 1]
    if e == s:
        return
    if comp == 2:
        if e - s == 1:
            t = idx[s]
            for c in range(c0, c1):
                h = np.tanh(W[t, c])
                buf[t, c] += g[c] * (1.0 - h * h)
            return
        for p in range(s + 1, e):
            t0, t1 = idx[p - 1], idx[p]
            for c in range(c0, c1):
                h = np.tanh(W[t0, c] + W[t1, c])
                gp = g[c] * (1.0 - h * h)
                buf[t0, c] += gp
                buf[t1, c] += gp
        return
    scale = 1.0
    if comp == 1:
        tot = 0.0
        for p in range(s, e):
            tot += cnt[p]
        scale = 1.0 / tot
    for p in range(s, e):
        t = idx[p]
        w = cnt[p] * scale
        for c in range(c0, c1):
            buf[t, c] += w * g[c]


@njit(parallel=True, cache=True)
def _batch_grad(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, batch, nA, nB, comp, dist,
                margin, bufA, bufB, VA, VB, GA, GB, act, losses):
    """Loss of the batch; adds dL/dW into bufA / bufB (which must hold zeros on the rows touched).

    VA, VB, GA, GB (>= nb, k+1, d), act (>= nb, 2, k+1) and losses (>= nb) are workspace. A
    sentence whose gradient is zero (all its hinges inactive) is not back-propagated.
    """
    nb = batch.shape[0]
    k = nB.shape[1]
    d = WA.shape[1]
    inv = 1.0 / nb
    for i in prange(nb):
        _compose_row(WA, a_idx, a_ptr, a_cnt, batch[i], comp, VA[i, 0])
        _compose_row(WB, b_idx, b_ptr, b_cnt, batch[i], comp, VB[i, 0])
        for s in range(k):
            _compose_row(WA, a_idx, a_ptr, a_cnt, nA[i, s], comp, VA[i, s + 1])
            _compose_row(WB, b_idx, b_ptr, b_cnt, nB[i, s], comp, VB[i, s + 1])
        for s in range(k + 1):
            act[i, 0, s] = 0
            act[i, 1, s] = 0
            for c in range(d):
                GA[i, s, c] = 0.0
                GB[i, s, c] = 0.0
        a = VA[i, 0]
        b = VB[i, 0]
        loss = 0.0
        eab = _energy(a, b, dist)
        eba = _energy(b, a, dist)
        for j in range(k):
            h = margin + eab - _energy(a, VB[i, j + 1], dist)
            if h > 0:
                loss += h
                act[i, 0, 0] = 1
                act[i, 1, 0] = 1
                act[i, 1, j + 1] = 1
                _accum(a, b, dist, inv, inv, GA[i, 0], GB[i, 0])
                _accum(a, VB[i, j + 1], dist, -inv, -inv, GA[i, 0], GB[i, j + 1])
            h = margin + eba - _energy(b, VA[i, j + 1], dist)
            if h > 0:
                loss += h
                act[i, 0, 0] = 1
                act[i, 1, 0] = 1
                act[i, 0, j + 1] = 1
                _accum(b, a, dist, inv, inv, GB[i, 0], GA[i, 0])
                _accum(b, VA[i, j + 1], dist, -inv, -inv, GB[i, 0], GA[i, j + 1])
        losses[i] = loss
    nblk = (d + _BLOCK - 1) // _BLOCK
    for blk in prange(2 * nblk):
        side = blk // nblk
        c0 = (blk % nblk) * _BLOCK
        c1 = min(d, c0 + _BLOCK)
        for i in range(nb):
            for s in range(k + 1):
                if act[i, side, s] == 0:
                    continue
                if side == 0:
                    r = batch[i] if s == 0 else nA[i, s - 1]
                    _scatter_cols(WA, a_idx, a_ptr, a_cnt, r, GA[i, s], comp, bufA, c0, c1)
                else:
                    r = batch[i] if s == 0 else nB[i, s - 1]
                    _scatter_cols(WB, b_idx, b_ptr, b_cnt, r, GB[i, s], comp, bufB, c0, c1)
    total = 0.0
    for i in range(nb):
        total += losses[i]
    return total * inv


@njit(cache=True)
def _mark(idx, ptr, r, flag, touched, n):
    for p in range(ptr[r], ptr[r + 1]):
        t = idx[p]
        if flag[t] == 0:
            flag[t] = 1
            touched[n] = t
            n += 1
    return n


@njit(parallel=True, cache=True, fastmath=True)
def _update(W, G, buf, idx, ptr, batch, noise, flag, touched, lr, alpha, opt, eps):
    """Sparse-row step on the rows of the words of the batch's sentences and noise sentences."""
    n = 0
    for q in range(batch.shape[0]):
        n = _mark(idx, ptr, batch[q], flag, touched, n)
    for q in range(noise.shape[0]):
        for j in range(noise.shape[1]):
            n = _mark(idx, ptr, noise[q, j], flag, touched, n)
    d = W.shape[1]
    for q in prange(n):
        t = touched[q]
        flag[t] = 0
        Wt = W[t]
        Gt = G[t]
        bt = buf[t]
        if opt == 0:
            for c in range(d):
                g = bt[c] + alpha * Wt[c]
                bt[c] = 0.0
                Gt[c] += g * g
                Wt[c] -= lr * g / (np.sqrt(Gt[c]) + eps)
        else:
            for c in range(d):
                g = bt[c] + alpha * Wt[c]
                bt[c] = 0.0
                Wt[c] -= lr * g


@njit(cache=True)
def _epoch(WA, GA, a_idx, a_ptr, a_cnt, WB, GB, b_idx, b_ptr, b_cnt, order, noiseA, noiseB,
           batch_size, comp, dist, margin, lr, alpha, opt, eps, bufA, bufB, flagA, flagB,
           touchedA, touchedB):
    total = 0.0
    n = order.shape[0]
    k = noiseA.shape[1]
    d = WA.shape[1]
    m = min(batch_size, n)
    VA = np.empty((m, k + 1, d), dtype=WA.dtype)
    VB = np.empty((m, k + 1, d), dtype=WB.dtype)
    gA = np.empty((m, k + 1, d), dtype=WA.dtype)
    gB = np.empty((m, k + 1, d), dtype=WB.dtype)
    act = np.empty((m, 2, k + 1), dtype=np.uint8)
    losses = np.empty(m)
    nA = np.empty((m, k), dtype=np.int64)
    nB = np.empty((m, k), dtype=np.int64)
    for s in range(0, n, batch_size):
        e = min(n, s + batch_size)
        batch = order[s:e]
        nb = e - s
        for i in range(nb):
            for j in range(k):
                nA[i, j] = noiseA[batch[i], j]
                nB[i, j] = noiseB[batch[i], j]
        total += _batch_grad(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, batch, nA[:nb],
                             nB[:nb], comp, dist, margin, bufA, bufB, VA, VB, gA, gB, act, losses)
        _update(WA, GA, bufA, a_idx, a_ptr, batch, nA[:nb], flagA, touchedA, lr, alpha, opt, eps)
        _update(WB, GB, bufB, b_idx, b_ptr, batch, nB[:nb], flagB, touchedB, lr, alpha, opt, eps)
    return total


def _csr(X):
    idx, ptr, cnt = X
    return (np.ascontiguousarray(idx, dtype=np.int64), np.ascontiguousarray(ptr, dtype=np.int64),
            np.ascontiguousarray(cnt, dtype=np.float64))


def batch_gradient(WA, A, WB, B, batch, noiseA, noiseB, composition, distance, margin):
    """(loss, dL/dWA, dL/dWB) like :func:`linxling.kernels.sgd_reference.batch_gradient`."""
    A, B = _csr(A), _csr(B)
    bufA = np.zeros_like(WA)
    bufB = np.zeros_like(WB)
    nA, nB = np.ascontiguousarray(noiseA, np.int64), np.ascontiguousarray(noiseB, np.int64)
    nb, k, d = nA.shape[0], nA.shape[1], WA.shape[1]
    loss = _batch_grad(WA, *A, WB, *B, np.asarray(batch, np.int64), nA, nB,
                       COMPOSITIONS[composition], DISTANCES[distance], float(margin), bufA, bufB,
                       np.empty((nb, k + 1, d), WA.dtype), np.empty((nb, k + 1, d), WB.dtype),
                       np.empty((nb, k + 1, d), WA.dtype), np.empty((nb, k + 1, d), WB.dtype),
                       np.empty((nb, 2, k + 1), np.uint8), np.empty(nb))
    return loss, bufA, bufB


def train_pair_epoch(WA, GA, A, WB, GB, B, order, noiseA, noiseB, batch_size, composition,
                     distance, margin, learning_rate, alpha, optimizer, eps=1e-8):
    """One epoch in place, like :func:`linxling.kernels.sgd_reference.train_pair_epoch`."""
    A, B = _csr(A), _csr(B)
    bufA = np.zeros_like(WA)
    bufB = np.zeros_like(WB)
    return _epoch(WA, GA, *A, WB, GB, *B, np.asarray(order, np.int64),
                  np.ascontiguousarray(noiseA, np.int64), np.ascontiguousarray(noiseB, np.int64),
                  int(batch_size), COMPOSITIONS[composition], DISTANCES[distance], float(margin),
                  float(learning_rate), float(alpha), OPTIMIZERS[optimizer], float(eps), bufA, bufB,
                  np.zeros(WA.shape[0], np.uint8), np.zeros(WB.shape[0], np.uint8),
                  np.empty(WA.shape[0], np.int64), np.empty(WB.shape[0], np.int64))
