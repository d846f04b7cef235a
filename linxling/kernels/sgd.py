"""Numba kernels for sentence-pair SGD (BiCVM, Etter's ranking network).

Same computation as the plain NumPy reference :mod:`linxling.kernels.sgd_reference` (see its
docstring for the compositions, energies and loss). Layout of one minibatch step:

1. compose the sentence vectors of every pair and noise sentence, ``prange`` over samples;
2. hinge losses and the gradients with respect to the sentence vectors, ``prange`` over samples
   (each sample writes only its own rows: no locks);
3. back-propagate into a dense gradient buffer, ``prange`` over blocks of 8 columns (every
   operation of the compositions is column-wise, so each thread owns its columns: no locks,
   and the result does not depend on the thread count);
4. sparse-row update (AdaGrad or SGD, L2 term ``alpha * W[row]``) of only the rows of words in
   the batch's sentences, which also resets their buffer rows to zero.

Integer codes: composition add=0 mean=1 bi=2; distance sqeuclidean=0 l1=1 dot=2;
optimizer adagrad=0 sgd=1.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from linxling.kernels.sgd_reference import COMPOSITIONS, DISTANCES, OPTIMIZERS

__all__ = ["COMPOSITIONS", "DISTANCES", "OPTIMIZERS", "batch_gradient", "compose", "train_pair_epoch"]

_BLOCK = 64


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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
                margin, bufA, bufB):
    """Loss of the batch; adds dL/dW into bufA / bufB (which must hold zeros on the rows touched)."""
    nb = batch.shape[0]
    k = nB.shape[1]
    d = WA.shape[1]
    # slot 0: the pair's sentence, slots 1..k: noise
    rowsA = np.empty((nb, k + 1), dtype=np.int64)
    rowsB = np.empty((nb, k + 1), dtype=np.int64)
    for i in range(nb):
        rowsA[i, 0] = batch[i]
        rowsB[i, 0] = batch[i]
        for j in range(k):
            rowsA[i, j + 1] = nA[i, j]
            rowsB[i, j + 1] = nB[i, j]
    VA = np.empty((nb, k + 1, d), dtype=WA.dtype)
    VB = np.empty((nb, k + 1, d), dtype=WB.dtype)
    GA = np.zeros((nb, k + 1, d), dtype=WA.dtype)
    GB = np.zeros((nb, k + 1, d), dtype=WB.dtype)
    losses = np.zeros(nb)
    inv = 1.0 / nb
    for i in prange(nb):
        for s in range(k + 1):
            _compose_row(WA, a_idx, a_ptr, a_cnt, rowsA[i, s], comp, VA[i, s])
            _compose_row(WB, b_idx, b_ptr, b_cnt, rowsB[i, s], comp, VB[i, s])
        a = VA[i, 0]
        b = VB[i, 0]
        for j in range(k):
            h = margin + _energy(a, b, dist) - _energy(a, VB[i, j + 1], dist)
            if h > 0:
                losses[i] += h
                _accum(a, b, dist, inv, inv, GA[i, 0], GB[i, 0])
                _accum(a, VB[i, j + 1], dist, -inv, -inv, GA[i, 0], GB[i, j + 1])
            h = margin + _energy(b, a, dist) - _energy(b, VA[i, j + 1], dist)
            if h > 0:
                losses[i] += h
                _accum(b, a, dist, inv, inv, GB[i, 0], GA[i, 0])
                _accum(b, VA[i, j + 1], dist, -inv, -inv, GB[i, 0], GA[i, j + 1])
    nblk = (d + _BLOCK - 1) // _BLOCK
    for blk in prange(nblk):
        c0 = blk * _BLOCK
        c1 = min(d, c0 + _BLOCK)
        for i in range(nb):
            for s in range(k + 1):
                _scatter_cols(WA, a_idx, a_ptr, a_cnt, rowsA[i, s], GA[i, s], comp, bufA, c0, c1)
                _scatter_cols(WB, b_idx, b_ptr, b_cnt, rowsB[i, s], GB[i, s], comp, bufB, c0, c1)
    total = 0.0
    for i in range(nb):
        total += losses[i]
    return total * inv


@njit(parallel=True, cache=True)
def _update(W, G, buf, idx, ptr, rows, flag, touched, lr, alpha, opt, eps):
    n = 0
    for q in range(rows.shape[0]):
        r = rows[q]
        for p in range(ptr[r], ptr[r + 1]):
            t = idx[p]
            if flag[t] == 0:
                flag[t] = 1
                touched[n] = t
                n += 1
    d = W.shape[1]
    for q in prange(n):
        t = touched[q]
        flag[t] = 0
        for c in range(d):
            g = buf[t, c] + alpha * W[t, c]
            buf[t, c] = 0.0
            if opt == 0:
                G[t, c] += g * g
                W[t, c] -= lr * g / (np.sqrt(G[t, c]) + eps)
            else:
                W[t, c] -= lr * g


@njit(cache=True)
def _epoch(WA, GA, a_idx, a_ptr, a_cnt, WB, GB, b_idx, b_ptr, b_cnt, order, noiseA, noiseB,
           batch_size, comp, dist, margin, lr, alpha, opt, eps, bufA, bufB, flagA, flagB,
           touchedA, touchedB):
    total = 0.0
    n = order.shape[0]
    k = noiseA.shape[1]
    for s in range(0, n, batch_size):
        e = min(n, s + batch_size)
        batch = order[s:e]
        nb = e - s
        nA = np.empty((nb, k), dtype=np.int64)
        nB = np.empty((nb, k), dtype=np.int64)
        rA = np.empty(nb * (k + 1), dtype=np.int64)
        rB = np.empty(nb * (k + 1), dtype=np.int64)
        for i in range(nb):
            rA[i] = batch[i]
            rB[i] = batch[i]
            for j in range(k):
                nA[i, j] = noiseA[batch[i], j]
                nB[i, j] = noiseB[batch[i], j]
                rA[nb + i * k + j] = nA[i, j]
                rB[nb + i * k + j] = nB[i, j]
        total += _batch_grad(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, batch, nA, nB,
                             comp, dist, margin, bufA, bufB)
        _update(WA, GA, bufA, a_idx, a_ptr, rA, flagA, touchedA, lr, alpha, opt, eps)
        _update(WB, GB, bufB, b_idx, b_ptr, rB, flagB, touchedB, lr, alpha, opt, eps)
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
    loss = _batch_grad(WA, *A, WB, *B, np.asarray(batch, np.int64), np.asarray(noiseA, np.int64),
                       np.asarray(noiseB, np.int64), COMPOSITIONS[composition],
                       DISTANCES[distance], float(margin), bufA, bufB)
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
