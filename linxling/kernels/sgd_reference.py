"""Plain NumPy reference of the sentence-pair SGD kernels in :mod:`linxling.kernels.sgd`.

Sentences are CSR rows: ``indices[indptr[i]:indptr[i+1]]`` are the token ids of sentence ``i``
(in order; the BI composition needs the order), ``counts`` their weights (1 for token
sequences, term counts for a bag of words).

Compositions (``COMPOSITIONS``): ``add`` = sum_t c_t W[t] (BiCVM eq. 3); ``mean`` = the
add vector divided by sum_t c_t (Etter 4.2); ``bi`` = sum_i tanh(W[x_{i-1}] + W[x_i]) over
consecutive tokens (BiCVM's bigram model; a one-token sentence gives tanh(W[x_0])).

Energies (``DISTANCES``; lower = more similar): ``sqeuclidean`` ||u - v||^2 (BiCVM eq. 1),
``l1`` sum |u - v| (Etter 4.2.5), ``dot`` -u.v (Etter's dot-product score, negated).

Loss of one minibatch (both directions, noise frozen)::

    L = 1/B sum_i sum_j [m + E(a_i, b_i) - E(a_i, nB_ij)]_+ + [m + E(b_i, a_i) - E(b_i, nA_ij)]_+

plus, with ``attraction`` w > 0, an unconditional ``w/B sum_i E(a_i, b_i)`` (the pull on
every pair that the authors' C++ adds; 0 by default: the paper's loss). The hinge terms are
BiCVM's noise-contrastive hinge (eqs. 6-7, k = noise samples, m = margin) and, with k = 1
and m = sqrt(d), Etter's margin ranking loss. ``nB`` are sentences of the B corpus, ``nA`` of
the A corpus. The L2 term lam/2 ||theta||^2 is added to the gradient of the rows in the batch
(lam * W[row]), as the sparse-row optimisers apply it.
"""
from __future__ import annotations

import numpy as np

COMPOSITIONS = {"add": 0, "mean": 1, "bi": 2}
DISTANCES = {"sqeuclidean": 0, "l1": 1, "dot": 2}
OPTIMIZERS = {"adagrad": 0, "sgd": 1}


def sample_noise(rng, n, k, order, batch_size, pool=None):
    """Noise sentence ids (n, k), row i for pair i, for one epoch over ``order``.

    ``pool=None``: every entry drawn uniformly from the n sentences (independently for each
    sample, the paper's scheme). ``pool=P``: for every minibatch of ``order`` (consecutive
    ``batch_size`` pairs) P sentences are drawn uniformly from the n, and each sample's k noise
    sentences are drawn uniformly from those P; every sentence still has the same probability of
    being noise, but a batch only has P distinct noise sentences to compose.
    """
    if pool is None:
        return rng.integers(0, n, (n, k))
    nbatch = -(-len(order) // batch_size)
    pools = rng.integers(0, n, (nbatch, int(pool)))
    pick = rng.integers(0, int(pool), (len(order), k))
    out = np.empty((n, k), dtype=np.int64)
    out[np.asarray(order)] = pools[(np.arange(len(order)) // batch_size)[:, None], pick]
    return out


def compose(W, indices, indptr, counts, rows, composition):
    """Sentence vectors of the CSR rows ``rows``: array (len(rows), d)."""
    out = np.zeros((len(rows), W.shape[1]), dtype=W.dtype)
    for o, r in enumerate(rows):
        tok = indices[indptr[r]:indptr[r + 1]]
        c = counts[indptr[r]:indptr[r + 1]]
        if composition == "bi":
            if len(tok) == 1:
                out[o] = np.tanh(W[tok[0]])
            elif len(tok) > 1:
                out[o] = np.tanh(W[tok[:-1]] + W[tok[1:]]).sum(axis=0)
        else:
            v = (c[:, None] * W[tok]).sum(axis=0)
            if composition == "mean" and len(tok):
                v = v / c.sum()
            out[o] = v
    return out


def energy(u, v, distance):
    if distance == "sqeuclidean":
        return float(((u - v) ** 2).sum())
    if distance == "l1":
        return float(np.abs(u - v).sum())
    return float(-(u * v).sum())


def energy_grad(u, v, distance):
    """(dE/du, dE/dv)."""
    if distance == "sqeuclidean":
        g = 2.0 * (u - v)
        return g, -g
    if distance == "l1":
        g = np.sign(u - v)
        return g, -g
    return -v, -u


def batch_loss(WA, A, WB, B, batch, noiseA, noiseB, composition, distance, margin,
               attraction=0.0):
    """Hinge loss of one minibatch (see module docstring). ``A``/``B`` are (indices, indptr, counts)."""
    nb = len(batch)
    a = compose(WA, *A, batch, composition)
    b = compose(WB, *B, batch, composition)
    total = 0.0
    for i in range(nb):
        total += attraction * energy(a[i], b[i], distance)
        nbv = compose(WB, *B, noiseB[i], composition)
        nav = compose(WA, *A, noiseA[i], composition)
        for j in range(noiseB.shape[1]):
            total += max(0.0, margin + energy(a[i], b[i], distance) - energy(a[i], nbv[j], distance))
            total += max(0.0, margin + energy(b[i], a[i], distance) - energy(b[i], nav[j], distance))
    return total / nb


def _backprop(W, idx, ptr, cnt, r, g, composition, out):
    tok = idx[ptr[r]:ptr[r + 1]]
    c = cnt[ptr[r]:ptr[r + 1]]
    if len(tok) == 0:
        return
    if composition == "bi":
        if len(tok) == 1:
            out[tok[0]] += g * (1.0 - np.tanh(W[tok[0]]) ** 2)
            return
        for p in range(1, len(tok)):
            h = np.tanh(W[tok[p - 1]] + W[tok[p]])
            gp = g * (1.0 - h * h)
            out[tok[p - 1]] += gp
            out[tok[p]] += gp
        return
    scale = 1.0 / c.sum() if composition == "mean" else 1.0
    for t, ct in zip(tok, c, strict=False):
        out[t] += ct * scale * g


def batch_gradient(WA, A, WB, B, batch, noiseA, noiseB, composition, distance, margin,
                   attraction=0.0):
    """(loss, dL/dWA, dL/dWB) of :func:`batch_loss` (dense arrays, no L2 term)."""
    nb = len(batch)
    gA = np.zeros_like(WA)
    gB = np.zeros_like(WB)
    a = compose(WA, *A, batch, composition)
    b = compose(WB, *B, batch, composition)
    total = 0.0
    for i in range(nb):
        nbv = compose(WB, *B, noiseB[i], composition)
        nav = compose(WA, *A, noiseA[i], composition)
        ga = np.zeros(WA.shape[1])
        gb = np.zeros(WB.shape[1])
        if attraction:
            total += attraction * energy(a[i], b[i], distance)
            du, dv = energy_grad(a[i], b[i], distance)
            ga += attraction * du
            gb += attraction * dv
        for j in range(noiseB.shape[1]):
            # anchor a, positive b, negative nB_j
            h = margin + energy(a[i], b[i], distance) - energy(a[i], nbv[j], distance)
            if h > 0:
                total += h
                du_p, dv_p = energy_grad(a[i], b[i], distance)
                du_n, dv_n = energy_grad(a[i], nbv[j], distance)
                ga += du_p - du_n
                gb += dv_p
                _backprop(WB, *B, noiseB[i, j], -dv_n / nb, composition, gB)
            # anchor b, positive a, negative nA_j
            h = margin + energy(b[i], a[i], distance) - energy(b[i], nav[j], distance)
            if h > 0:
                total += h
                du_p, dv_p = energy_grad(b[i], a[i], distance)
                du_n, dv_n = energy_grad(b[i], nav[j], distance)
                gb += du_p - du_n
                ga += dv_p
                _backprop(WA, *A, noiseA[i, j], -dv_n / nb, composition, gA)
        _backprop(WA, *A, batch[i], ga / nb, composition, gA)
        _backprop(WB, *B, batch[i], gb / nb, composition, gB)
    return total / nb, gA, gB


def _touched(A, rows):
    idx, ptr, _ = A
    return np.unique(np.concatenate([idx[ptr[r]:ptr[r + 1]] for r in rows] + [np.zeros(0, idx.dtype)]))


def train_pair_epoch(WA, GA, A, WB, GB, B, order, noiseA, noiseB, batch_size, composition,
                     distance, margin, learning_rate, alpha, optimizer, eps=1e-8, attraction=0.0):
    """One epoch over the pairs in ``order`` (in place); returns the summed batch losses.

    ``noiseA``/``noiseB`` have one row of k sentence ids per pair (indexed by pair id).
    Each step updates only the rows of words in the batch's sentences (pairs and noise).
    """
    total = 0.0
    for s in range(0, len(order), batch_size):
        batch = order[s:s + batch_size]
        nA, nB = noiseA[batch], noiseB[batch]
        loss, gA, gB = batch_gradient(WA, A, WB, B, batch, nA, nB, composition, distance, margin,
                                        attraction)
        total += loss
        for W, G, g, X, rows in ((WA, GA, gA, A, np.concatenate([batch, nA.ravel()])),
                                 (WB, GB, gB, B, np.concatenate([batch, nB.ravel()]))):
            t = _touched(X, rows)
            gt = g[t] + alpha * W[t]
            if optimizer == "adagrad":
                G[t] += gt * gt
                W[t] -= learning_rate * gt / (np.sqrt(G[t]) + eps)
            else:
                W[t] -= learning_rate * gt
    return total
