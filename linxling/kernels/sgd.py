"""Numba kernels for sentence-pair SGD (BiCVM, Etter's ranking network).

Same computation as the plain NumPy reference :mod:`linxling.kernels.sgd_reference` (see its
docstring for the compositions, energies and loss). Layout of one minibatch step:

1. :func:`_dedup`: the batch's distinct noise sentences per side (a sentence drawn by several
   samples, as with a noise pool, is composed and back-propagated once);
2. :func:`_batch_grad`: compose the batch's and the distinct noise sentences (``prange`` over
   sentences); hinges and the gradients with respect to the pair sentences (``prange`` over
   samples, each writes its own rows); the noise sentences' gradients (``prange`` over them,
   each summed over the samples that drew it in sample order);
3. :func:`_index`: the distinct words of the batch's sentences and where each occurs (serial);
4. :func:`_row_grads`: each touched word's gradient row gathered from the gradients of the
   sentences it occurs in (``prange`` over words: no two threads write a row, no locks, no
   dense buffer); a sentence whose gradient is zero is skipped;
5. :func:`_apply`: sparse-row AdaGrad or SGD step (L2 term ``alpha * W[row]``) on those rows.

Every sum has a fixed order, so the result does not depend on the thread count. Batches of
fewer than ``_MIN_PARALLEL`` sentences (e.g. Etter's batch of one) run the same helpers on the
calling thread: a parallel region costs more than their work.

The word tables may be float32 or float64 (numba compiles one version per dtype; the
gradient checks use float64); the workspace is allocated once per epoch.

Integer codes: composition add=0 mean=1 bi=2; distance sqeuclidean=0 l1=1 dot=2;
optimizer adagrad=0 sgd=1.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from linxling.kernels.sgd_reference import COMPOSITIONS, DISTANCES, OPTIMIZERS

#: batches with fewer than this many sentences (pairs x (k + 1)) run on the calling thread
_MIN_PARALLEL = 64

__all__ = ["COMPOSITIONS", "DISTANCES", "OPTIMIZERS", "PairWorkspace", "batch_gradient", "compose",
           "train_pair_epoch"]

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
        if w == 1.0:
            for c in range(d):
                out[c] += W[t, c]
        else:
            wt = W.dtype.type(w)
            for c in range(d):
                out[c] += wt * W[t, c]
    if comp == 1:
        for c in range(d):
            out[c] /= tot


@njit(parallel=True, cache=True)
def _compose_parallel(W, idx, ptr, cnt, rows, comp):
    out = np.zeros((rows.shape[0], W.shape[1]), dtype=W.dtype)
    for i in prange(rows.shape[0]):
        _compose_row(W, idx, ptr, cnt, rows[i], comp, out[i])
    return out


@njit(cache=True)
def _compose_serial(W, idx, ptr, cnt, rows, comp):
    out = np.zeros((rows.shape[0], W.shape[1]), dtype=W.dtype)
    for i in range(rows.shape[0]):
        _compose_row(W, idx, ptr, cnt, rows[i], comp, out[i])
    return out


def compose(W, idx, ptr, cnt, rows, comp):
    """The composed vectors (len(rows), d) of sentences ``rows`` of the CSR (idx, ptr, cnt): each
    row by :func:`_compose_row`, so the same values on one thread or several. Fewer than
    :data:`_MIN_PARALLEL` rows (a transform of a few sentences) run on the calling thread: a
    parallel launch waits for every numba thread, 16 ms for one sentence on a loaded 2-core
    machine against 0.04 ms of work."""
    kernel = _compose_parallel if rows.shape[0] >= _MIN_PARALLEL else _compose_serial
    return kernel(W, idx, ptr, cnt, rows, comp)


@njit(cache=True, fastmath=True)
def _energy(u, v, dist):
    e = u[0] - u[0]     # zero in the vectors' dtype (float32 sums vectorise without conversions)
    if dist == 0:
        for c in range(u.shape[0]):
            x = u[c] - v[c]
            e += x * x
    elif dist == 1:
        for c in range(u.shape[0]):
            e += abs(u[c] - v[c])
    else:
        for c in range(u.shape[0]):
            e -= u[c] * v[c]
    return e


@njit(cache=True, fastmath=True)
def _accum(u, v, dist, su, sv, gu, gv):
    """gu += su * dE/du(u, v); gv += sv * dE/dv(u, v)."""
    su = gu.dtype.type(su)
    sv = gv.dtype.type(sv)
    if dist == 0:
        su2 = su + su
        sv2 = sv + sv
        for c in range(u.shape[0]):
            x = u[c] - v[c]
            gu[c] += su2 * x
            gv[c] -= sv2 * x
    elif dist == 1:
        for c in range(u.shape[0]):
            x = u[c] - v[c]
            g = 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
            gu[c] += su * g
            gv[c] -= sv * g
    else:
        for c in range(u.shape[0]):
            gu[c] -= su * v[c]
            gv[c] -= sv * u[c]


@njit(cache=True, fastmath=True)
def _accum_u(u, v, dist, su, gu):
    """gu += su * dE/du(u, v)."""
    su = gu.dtype.type(su)
    if dist == 0:
        su2 = su + su
        for c in range(u.shape[0]):
            gu[c] += su2 * (u[c] - v[c])
    elif dist == 1:
        for c in range(u.shape[0]):
            x = u[c] - v[c]
            gu[c] += su * (1.0 if x > 0 else (-1.0 if x < 0 else 0.0))
    else:
        for c in range(u.shape[0]):
            gu[c] -= su * v[c]


@njit(cache=True, fastmath=True)
def _accum_v(u, v, dist, sv, gv):
    """gv += sv * dE/dv(u, v)."""
    sv = gv.dtype.type(sv)
    if dist == 0:
        sv2 = sv + sv
        for c in range(u.shape[0]):
            gv[c] -= sv2 * (u[c] - v[c])
    elif dist == 1:
        for c in range(u.shape[0]):
            x = u[c] - v[c]
            gv[c] -= sv * (1.0 if x > 0 else (-1.0 if x < 0 else 0.0))
    else:
        for c in range(u.shape[0]):
            gv[c] -= sv * u[c]


@njit(cache=True, fastmath=True)
def _noise_grad(V, G, ptr, lst, act, anchor, u, k, dist, scale):
    """G[u] = sum over the samples i (hinge j active) using noise sentence u of
    scale * dE/dv(anchor[i], V[u]); returns 1 if any hinge was active."""
    for c in range(G.shape[1]):
        G[u, c] = 0.0
    used = 0
    for p in range(ptr[u], ptr[u + 1]):
        e = lst[p]
        i = e // k
        j = e - i * k
        if act[i, j]:
            used = 1
            _accum_v(anchor[i], V[u], dist, scale, G[u])
    return used


@njit(cache=True)
def _dedup(noise, slot, uniq, sel, uptr, ulist):
    """Unique noise sentences of a batch, in order of first use.

    noise (nb, k) sentence ids; slot (>= n sentences) must hold -1 and is restored. Writes
    uniq[:m] (the m distinct sentences), sel[i, j] (the position of noise[i, j] in uniq) and the
    inverse lists ulist[uptr[u]:uptr[u+1]] (flat positions i*k+j using uniq[u], ascending).
    Returns m.
    """
    nb, k = noise.shape
    m = 0
    for i in range(nb):
        for j in range(k):
            s = noise[i, j]
            if slot[s] < 0:
                slot[s] = m
                uniq[m] = s
                uptr[m + 1] = 0
                m += 1
            sel[i, j] = slot[s]
            uptr[slot[s] + 1] += 1
    uptr[0] = 0
    for u in range(m):
        uptr[u + 1] += uptr[u]
    for i in range(nb):
        for j in range(k):
            u = sel[i, j]
            ulist[uptr[u]] = i * k + j
            uptr[u] += 1
    for u in range(m, 0, -1):
        uptr[u] = uptr[u - 1]
    uptr[0] = 0
    for u in range(m):
        slot[uniq[u]] = -1
    return m


@njit(cache=True)
def _compose_q(q, nA, WA, a_idx, a_ptr, a_cnt, rowsA, SA, WB, b_idx, b_ptr, b_cnt, rowsB, SB,
               comp):
    if q < nA:
        _compose_row(WA, a_idx, a_ptr, a_cnt, rowsA[q], comp, SA[q])
    else:
        _compose_row(WB, b_idx, b_ptr, b_cnt, rowsB[q - nA], comp, SB[q - nA])


@njit(cache=True)
def _sample_grad(i, nb, SA, SB, DA, DB, sA, sB, hA, hB, dist, margin, attraction, inv, actA,
                 actB, losses):
    """Hinges of sample i; gradients of its two sentences into DA[i], DB[i]."""
    k = sA.shape[1]
    for c in range(SA.shape[1]):
        DA[i, c] = 0.0
        DB[i, c] = 0.0
    a = SA[i]
    b = SB[i]
    eab = _energy(a, b, dist)
    eba = _energy(b, a, dist)
    loss = 0.0
    act = 0
    if attraction != 0.0:
        loss += attraction * eab
        act = 1
        _accum(a, b, dist, attraction * inv, attraction * inv, DA[i], DB[i])
    for j in range(k):
        hA[i, j] = 0
        hB[i, j] = 0
        # anchor a, positive b, negative B-side noise
        h = margin + eab - _energy(a, SB[nb + sB[i, j]], dist)
        if h > 0:
            loss += h
            act = 1
            hB[i, j] = 1
            _accum(a, b, dist, inv, inv, DA[i], DB[i])
            _accum_u(a, SB[nb + sB[i, j]], dist, -inv, DA[i])
        elif h != h:
            # overflowed sentence vectors (inf - inf): the hinge is not met but undefined; its
            # NaN in the loss stops the fit with a FloatingPointError (_check_finite) instead of
            # the hinge counting as met and the huge vectors kept in silence
            loss += h
        # anchor b, positive a, negative A-side noise
        h = margin + eba - _energy(b, SA[nb + sA[i, j]], dist)
        if h > 0:
            loss += h
            act = 1
            hA[i, j] = 1
            _accum(b, a, dist, inv, inv, DB[i], DA[i])
            _accum_u(b, SA[nb + sA[i, j]], dist, -inv, DB[i])
        elif h != h:
            loss += h
    actA[i] = act
    actB[i] = act
    losses[i] = loss


@njit(cache=True)
def _noise_q(q, nb, mA, SA, SB, DA, DB, pA, lA, hA, pB, lB, hB, dist, inv, actA, actB):
    k = hA.shape[1]
    if q < mA:
        actA[nb + q] = _noise_grad(SA[nb:], DA[nb:], pA, lA, hA, SB, q, k, dist, -inv)
    else:
        actB[nb + q - mA] = _noise_grad(SB[nb:], DB[nb:], pB, lB, hB, SA, q - mA, k, dist, -inv)


@njit(parallel=True, cache=True)
def _batch_grad(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, nb, comp, dist, margin,
                attraction, rowsA, mA, sA, pA, lA, rowsB, mB, sB, pB, lB, SA, SB, DA, DB, actA,
                actB, hA, hB, losses):
    """Loss of the batch and the gradients with respect to its sentence vectors.

    Side A's sentences are rowsA[:nb + mA]: the batch's nb sentences, then the mA distinct noise
    sentences (:func:`_dedup`): sA[i, j] is the position in rowsA[nb:] of sample i's j-th A-side
    noise sentence and lA[pA[u]:pA[u+1]] the samples using noise sentence u (same for B). Each
    distinct noise sentence is composed once; its gradient is summed over the samples that drew
    it (in a fixed order: the result does not depend on the thread count). Writes the sentence
    vectors SA, SB, their gradients DA, DB and actA, actB (1 where the gradient is not zero);
    hA, hB (>= nb, k: the active hinges) and losses (>= nb) are workspace.
    :func:`_batch_grad_serial` is the same without threads (small batches).
    """
    inv = 1.0 / nb
    nA = nb + mA
    for q in prange(nA + nb + mB):
        _compose_q(q, nA, WA, a_idx, a_ptr, a_cnt, rowsA, SA, WB, b_idx, b_ptr, b_cnt, rowsB, SB,
                   comp)
    for i in prange(nb):
        _sample_grad(i, nb, SA, SB, DA, DB, sA, sB, hA, hB, dist, margin, attraction, inv, actA,
                     actB, losses)
    for q in prange(mA + mB):
        _noise_q(q, nb, mA, SA, SB, DA, DB, pA, lA, hA, pB, lB, hB, dist, inv, actA, actB)
    total = 0.0
    for i in range(nb):
        total += losses[i]
    return total * inv


@njit(cache=True)
def _batch_grad_serial(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, nb, comp, dist, margin,
                       attraction, rowsA, mA, sA, pA, lA, rowsB, mB, sB, pB, lB, SA, SB, DA, DB,
                       actA, actB, hA, hB, losses):
    """:func:`_batch_grad` on the calling thread (a parallel region costs more than a tiny batch)."""
    inv = 1.0 / nb
    nA = nb + mA
    for q in range(nA + nb + mB):
        _compose_q(q, nA, WA, a_idx, a_ptr, a_cnt, rowsA, SA, WB, b_idx, b_ptr, b_cnt, rowsB, SB,
                   comp)
    for i in range(nb):
        _sample_grad(i, nb, SA, SB, DA, DB, sA, sB, hA, hB, dist, margin, attraction, inv, actA,
                     actB, losses)
    for q in range(mA + mB):
        _noise_q(q, nb, mA, SA, SB, DA, DB, pA, lA, hA, pB, lB, hB, dist, inv, actA, actB)
    total = 0.0
    for i in range(nb):
        total += losses[i]
    return total * inv


@njit(cache=True)
def _index(idx, ptr, cnt, rows, nS, comp, slot, touched, optr, osent, opos, sscale):
    """Words of the sentences rows[:nS] and where they occur.

    touched[:nt] are the distinct words (in order of first occurrence); the occurrences of
    touched[q] are osent/opos[optr[q]:optr[q+1]] (local sentence index, position in idx), in
    sentence order. sscale[s] is 1 / (sum of the counts of sentence s) for the mean, else 1.
    slot (>= vocabulary size) must hold -1 and is restored. Returns nt.
    """
    nt = 0
    for s in range(nS):
        r = rows[s]
        tot = 0.0
        for p in range(ptr[r], ptr[r + 1]):
            t = idx[p]
            tot += cnt[p]
            if slot[t] < 0:
                slot[t] = nt
                touched[nt] = t
                optr[nt + 1] = 0
                nt += 1
            optr[slot[t] + 1] += 1
        sscale[s] = 1.0 / tot if (comp == 1 and tot > 0) else 1.0
    optr[0] = 0
    for q in range(nt):
        optr[q + 1] += optr[q]
    for s in range(nS):
        r = rows[s]
        for p in range(ptr[r], ptr[r + 1]):
            q = slot[idx[p]]
            osent[optr[q]] = s
            opos[optr[q]] = p
            optr[q] += 1
    for q in range(nt, 0, -1):
        optr[q] = optr[q - 1]
    optr[0] = 0
    for q in range(nt):
        slot[touched[q]] = -1
    return nt


@njit(cache=True, fastmath=True)
def _row_grad(W, idx, ptr, cnt, rows, D, act, comp, t, o0, o1, osent, opos, sscale, out):
    """out = dL/dW[t]: the sentence gradients D[s] back-propagated through the occurrences
    osent/opos[o0:o1] of word t (sentences with act[s] == 0 have a zero gradient)."""
    d = W.shape[1]
    for c in range(d):
        out[c] = 0.0
    for o in range(o0, o1):
        s = osent[o]
        if act[s] == 0:
            continue
        g = D[s]
        p = opos[o]
        if comp == 2:
            r = rows[s]
            b, e = ptr[r], ptr[r + 1]
            if e - b == 1:
                for c in range(d):
                    h = np.tanh(W[t, c])
                    out[c] += g[c] * (1.0 - h * h)
                continue
            if p > b:
                t0 = idx[p - 1]
                for c in range(d):
                    h = np.tanh(W[t0, c] + W[t, c])
                    out[c] += g[c] * (1.0 - h * h)
            if p < e - 1:
                t1 = idx[p + 1]
                for c in range(d):
                    h = np.tanh(W[t, c] + W[t1, c])
                    out[c] += g[c] * (1.0 - h * h)
            continue
        w = cnt[p] * sscale[s]
        if w == 1.0:
            for c in range(d):
                out[c] += g[c]
        else:
            wt = out.dtype.type(w)
            for c in range(d):
                out[c] += wt * g[c]


@njit(parallel=True, cache=True)
def _row_grads(W, idx, ptr, cnt, rows, D, act, comp, touched, nt, optr, osent, opos, sscale, R):
    """R[q] = dL/dW[touched[q]] for q < nt (``prange`` over words: no two threads write a row)."""
    for q in prange(nt):
        _row_grad(W, idx, ptr, cnt, rows, D, act, comp, touched[q], optr[q], optr[q + 1], osent,
                  opos, sscale, R[q])


@njit(cache=True)
def _row_grads_serial(W, idx, ptr, cnt, rows, D, act, comp, touched, nt, optr, osent, opos, sscale,
                      R):
    for q in range(nt):
        _row_grad(W, idx, ptr, cnt, rows, D, act, comp, touched[q], optr[q], optr[q + 1], osent,
                  opos, sscale, R[q])


@njit(cache=True, fastmath=True)
def _apply_row(W, G, R, q, t, lr, alpha, opt, eps):
    """AdaGrad (opt 0) or SGD step of row t with gradient R[q] + alpha * W[t]; the scalars come
    in the table's dtype (float32 steps vectorise without conversions)."""
    Wt = W[t]
    Gt = G[t]
    Rq = R[q]
    if opt == 0:
        for c in range(W.shape[1]):
            g = Rq[c] + alpha * Wt[c]
            Gt[c] += g * g
            Wt[c] -= lr * g / (np.sqrt(Gt[c]) + eps)
    else:
        for c in range(W.shape[1]):
            Wt[c] -= lr * (Rq[c] + alpha * Wt[c])


@njit(parallel=True, cache=True)
def _apply(W, G, R, touched, nt, lr, alpha, opt, eps):
    """Sparse-row step on the rows touched[:nt] with gradients R[:nt] + alpha * W[row]."""
    lr, alpha, eps = W.dtype.type(lr), W.dtype.type(alpha), W.dtype.type(eps)
    for q in prange(nt):
        _apply_row(W, G, R, q, touched[q], lr, alpha, opt, eps)


@njit(cache=True)
def _apply_serial(W, G, R, touched, nt, lr, alpha, opt, eps):
    lr, alpha, eps = W.dtype.type(lr), W.dtype.type(alpha), W.dtype.type(eps)
    for q in range(nt):
        _apply_row(W, G, R, q, touched[q], lr, alpha, opt, eps)


@njit(cache=True)
def _max_tokens(ptr, r):
    """Most tokens r distinct sentences of the CSR row pointer ``ptr`` can hold: the sum of the r
    largest sentence lengths, from a histogram of the lengths (O(n + longest), no sort: an epoch
    over a part of the pairs, as BiCVM+ runs for each turn of a pair, calls this four times and
    sorting 30,000 lengths took ~1.8 ms each)."""
    n = ptr.shape[0] - 1
    longest = 0
    for i in range(n):
        longest = max(longest, ptr[i + 1] - ptr[i])
    hist = np.zeros(longest + 1, dtype=np.int64)
    for i in range(n):
        hist[ptr[i + 1] - ptr[i]] += 1
    total = 0
    left = min(r, n)
    for length in range(longest, -1, -1):
        if left <= 0:
            break
        take = min(left, hist[length])
        total += take * length
        left -= take
    return total


@njit(cache=True)
def _workspace(WA, WB, m, M, k, nA, nB, VA, VB, occA, occB):
    """The buffers of :func:`_epoch` (the dtypes and width of the tables WA, WB) for batches of
    at most ``m`` samples with ``k`` noise sentences each, at most ``M`` distinct noise sentences
    a batch, tables of at most ``nA``/``nB`` sentences and ``VA``/``VB`` words, and at most
    ``occA``/``occB`` token occurrences a batch (:class:`PairWorkspace` works these out). Made
    once and reused by every call of a fit (a fit whose pairs take turns calls :func:`_epoch`
    once per turn: allocating, first-touching and sizing the buffers cost about a fifth of those
    calls' time). The slot arrays hold -1 and every call leaves them so."""
    d = WA.shape[1]
    tA_n, tB_n = min(VA, occA), min(VB, occB)     # a batch touches at most that many words
    return (np.empty((m + M, d), dtype=WA.dtype), np.empty((m + M, d), dtype=WB.dtype),
            np.empty((m + M, d), dtype=WA.dtype), np.empty((m + M, d), dtype=WB.dtype),
            np.empty(m + M, dtype=np.uint8), np.empty(m + M, dtype=np.uint8),
            np.empty((m, k), dtype=np.uint8), np.empty((m, k), dtype=np.uint8), np.empty(m),
            np.empty((m, k), dtype=np.int64), np.empty((m, k), dtype=np.int64),
            np.full(nA, -1, dtype=np.int64), np.full(nB, -1, dtype=np.int64),
            np.empty(m + M, dtype=np.int64), np.empty(m + M, dtype=np.int64),
            np.empty((m, k), dtype=np.int64), np.empty((m, k), dtype=np.int64),
            np.empty(M + 1, dtype=np.int64), np.empty(M + 1, dtype=np.int64),
            np.empty(m * k, dtype=np.int64), np.empty(m * k, dtype=np.int64),
            np.full(VA, -1, dtype=np.int64), np.full(VB, -1, dtype=np.int64),
            np.empty(tA_n, dtype=np.int64), np.empty(tB_n, dtype=np.int64),
            np.empty(tA_n + 1, dtype=np.int64), np.empty(tB_n + 1, dtype=np.int64),
            np.empty(occA, dtype=np.int64), np.empty(occB, dtype=np.int64),
            np.empty(occA, dtype=np.int64), np.empty(occB, dtype=np.int64),
            np.empty(m + M), np.empty(m + M),
            np.empty((tA_n, d), dtype=WA.dtype), np.empty((tB_n, d), dtype=WB.dtype))


@njit(cache=True)
def _epoch(WA, GA, a_idx, a_ptr, a_cnt, WB, GB, b_idx, b_ptr, b_cnt, order, noiseA, noiseB,
           batch_size, comp, dist, margin, attraction, lr, alpha, opt, eps, ws):
    total = 0.0
    n = order.shape[0]
    k = noiseA.shape[1]
    (SA, SB, DA, DB, actA, actB, hA, hB, losses, nzA, nzB, slotA, slotB, rowsA, rowsB, sA, sB, pA,
     pB, lA, lB, wslotA, wslotB, tA, tB, optrA, optrB, osA, osB, opA, opB, scA, scB, RA, RB) = ws
    for s in range(0, n, batch_size):
        e = min(n, s + batch_size)
        nb = e - s
        for i in range(nb):
            rowsA[i] = order[s + i]
            rowsB[i] = order[s + i]
            for j in range(k):
                nzA[i, j] = noiseA[order[s + i], j]
                nzB[i, j] = noiseB[order[s + i], j]
        mA = _dedup(nzA[:nb], slotA, rowsA[nb:], sA, pA, lA)
        mB = _dedup(nzB[:nb], slotB, rowsB[nb:], sB, pB, lB)
        # a parallel region costs more than the work of a tiny batch (Etter's batch of 1)
        par = nb * (k + 1) >= _MIN_PARALLEL
        if par:
            total += _batch_grad(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, nb, comp, dist,
                                 margin, attraction, rowsA, mA, sA, pA, lA, rowsB, mB, sB, pB, lB,
                                 SA, SB, DA, DB, actA, actB, hA, hB, losses)
        else:
            total += _batch_grad_serial(WA, a_idx, a_ptr, a_cnt, WB, b_idx, b_ptr, b_cnt, nb, comp,
                                        dist, margin, attraction, rowsA, mA, sA, pA, lA, rowsB,
                                        mB, sB, pB, lB, SA, SB, DA, DB, actA, actB, hA, hB, losses)
        ntA = _index(a_idx, a_ptr, a_cnt, rowsA, nb + mA, comp, wslotA, tA, optrA, osA, opA, scA)
        ntB = _index(b_idx, b_ptr, b_cnt, rowsB, nb + mB, comp, wslotB, tB, optrB, osB, opB, scB)
        if par:
            _row_grads(WA, a_idx, a_ptr, a_cnt, rowsA, DA, actA, comp, tA, ntA, optrA, osA, opA,
                       scA, RA)
            _row_grads(WB, b_idx, b_ptr, b_cnt, rowsB, DB, actB, comp, tB, ntB, optrB, osB, opB,
                       scB, RB)
            _apply(WA, GA, RA, tA, ntA, lr, alpha, opt, eps)
            _apply(WB, GB, RB, tB, ntB, lr, alpha, opt, eps)
        else:
            _row_grads_serial(WA, a_idx, a_ptr, a_cnt, rowsA, DA, actA, comp, tA, ntA, optrA, osA,
                              opA, scA, RA)
            _row_grads_serial(WB, b_idx, b_ptr, b_cnt, rowsB, DB, actB, comp, tB, ntB, optrB, osB,
                              opB, scB, RB)
            _apply_serial(WA, GA, RA, tA, ntA, lr, alpha, opt, eps)
            _apply_serial(WB, GB, RB, tB, ntB, lr, alpha, opt, eps)
    return total


def _csr(X):
    idx, ptr, cnt = X
    return (np.ascontiguousarray(idx, dtype=np.int64), np.ascontiguousarray(ptr, dtype=np.int64),
            np.ascontiguousarray(cnt, dtype=np.float64))


def batch_gradient(WA, A, WB, B, batch, noiseA, noiseB, composition, distance, margin,
                   attraction=0.0):
    """(loss, dL/dWA, dL/dWB) like :func:`linxling.kernels.sgd_reference.batch_gradient`."""
    A, B = _csr(A), _csr(B)
    nA, nB = np.ascontiguousarray(noiseA, np.int64), np.ascontiguousarray(noiseB, np.int64)
    batch = np.asarray(batch, np.int64)
    nb, k, d = nA.shape[0], nA.shape[1], WA.shape[1]
    M = nb * k
    comp = COMPOSITIONS[composition]
    side = []
    for X, nz in ((A, nA), (B, nB)):
        rows = np.empty(nb + M, np.int64)
        rows[:nb] = batch
        sel, up, ul = np.empty((nb, k), np.int64), np.empty(M + 1, np.int64), np.empty(M, np.int64)
        m = _dedup(nz, np.full(len(X[1]) - 1, -1, np.int64), rows[nb:], sel, up, ul)
        side.append((rows, m, sel, up, ul))
    S = [np.empty((nb + M, d), W.dtype) for W in (WA, WB)]
    D = [np.empty((nb + M, d), W.dtype) for W in (WA, WB)]
    act = [np.empty(nb + M, np.uint8) for _ in range(2)]
    loss = _batch_grad(WA, *A, WB, *B, nb, comp, DISTANCES[distance], float(margin),
                       float(attraction), *side[0], *side[1], S[0], S[1], D[0], D[1], act[0],
                       act[1], np.empty((nb, k), np.uint8), np.empty((nb, k), np.uint8),
                       np.empty(nb))
    grads = []
    for W, X, (rows, m, *_), Ds, ac in zip((WA, WB), (A, B), side, D, act, strict=True):
        V = W.shape[0]
        touched, optr = np.empty(V, np.int64), np.empty(V + 1, np.int64)
        n_occ = int(sum(X[1][r + 1] - X[1][r] for r in rows[:nb + m]))
        osent, opos, sc = np.empty(n_occ, np.int64), np.empty(n_occ, np.int64), np.empty(nb + M)
        nt = _index(*X, rows, nb + m, comp, np.full(V, -1, np.int64), touched, optr, osent, opos, sc)
        R = np.empty((V, d), W.dtype)
        _row_grads(W, *X, rows, Ds, ac, comp, touched, nt, optr, osent, opos, sc, R)
        g = np.zeros_like(W)
        g[touched[:nt]] = R[:nt]
        grads.append(g)
    return loss, grads[0], grads[1]


def _needs(WA, a_ptr, WB, b_ptr, k: int, batch_size: int) -> tuple:
    """The buffer sizes :func:`_workspace` takes for one pair of tables:
    ``(m, M, nA, nB, VA, VB, occA, occB)``."""
    nA, nB = len(a_ptr) - 1, len(b_ptr) - 1
    m = min(batch_size, nA)
    M = min(m * k, max(nA, nB))
    # token occurrences of a batch: its m distinct sentences plus M distinct noise sentences (a
    # sentence may be in both, so the corpus' token count is no bound)
    occA = int(_max_tokens(a_ptr, m) + _max_tokens(a_ptr, M))
    occB = int(_max_tokens(b_ptr, m) + _max_tokens(b_ptr, M))
    return m, M, nA, nB, WA.shape[0], WB.shape[0], occA, occB


class PairWorkspace:
    """The buffers :func:`train_pair_epoch` needs, made once for a fit and given to each call
    with ``workspace=``: sized for the largest of the pairs ``[(WA, A, WB, B), ...]`` (a fit
    whose pairs take turns calls the kernel once per turn; the pairs share one set of buffers,
    whose contents do not outlive a call). A call on tables, batches or noise counts it cannot
    hold is an error (the kernels do not check bounds)."""

    def __init__(self, pairs, n_noise: int, batch_size: int) -> None:
        k, bs = int(n_noise), int(batch_size)
        WA0, _, WB0, _ = pairs[0]
        self.key = (WA0.shape[1], WA0.dtype.str, WB0.dtype.str, k, bs)
        self._ptrs = []                         # the tables it was sized for (held: ids stay valid)
        need = np.zeros(8, dtype=np.int64)
        for WA, A, WB, B in pairs:
            a_ptr, b_ptr = _csr(A)[1], _csr(B)[1]
            self._ptrs.append((a_ptr, b_ptr))
            need = np.maximum(need, _needs(WA, a_ptr, WB, b_ptr, k, bs))
        self.capacity = tuple(int(x) for x in need)
        self.arrays = _workspace(WA0, WB0, *self.capacity[:2], k, *self.capacity[2:])

    def fits(self, WA, a_ptr, WB, b_ptr, n_noise, batch_size) -> bool:
        """Whether a call on these tables, batches and noise count stays within the buffers."""
        if self.key != (WA.shape[1], WA.dtype.str, WB.dtype.str, int(n_noise), int(batch_size)):
            return False
        if WA.shape[0] <= self.capacity[4] and WB.shape[0] <= self.capacity[5] and any(
                a is a_ptr and b is b_ptr for a, b in self._ptrs):
            return True
        need = _needs(WA, a_ptr, WB, b_ptr, int(n_noise), int(batch_size))
        return all(n <= c for n, c in zip(need, self.capacity, strict=True))


def train_pair_epoch(WA, GA, A, WB, GB, B, order, noiseA, noiseB, batch_size, composition,
                     distance, margin, learning_rate, alpha, optimizer, eps=1e-8, attraction=0.0,
                     workspace: PairWorkspace | None = None):
    """One epoch in place, like :func:`linxling.kernels.sgd_reference.train_pair_epoch`;
    ``workspace``: a :class:`PairWorkspace` that holds these tables, to reuse (default: made here)."""
    A, B = _csr(A), _csr(B)
    noiseA = np.ascontiguousarray(noiseA, np.int64)
    noiseB = np.ascontiguousarray(noiseB, np.int64)
    k = noiseA.shape[1]
    if workspace is None:
        ws = PairWorkspace([(WA, A, WB, B)], k, int(batch_size)).arrays
    else:
        if not workspace.fits(WA, A[1], WB, B[1], k, int(batch_size)):
            raise ValueError("workspace was made for smaller tables, or another batch size, noise count, "
                             "width or dtype")
        ws = workspace.arrays
    return _epoch(WA, GA, *A, WB, GB, *B, np.asarray(order, np.int64), noiseA, noiseB,
                  int(batch_size), COMPOSITIONS[composition], DISTANCES[distance], float(margin),
                  float(attraction), float(learning_rate), float(alpha), OPTIMIZERS[optimizer],
                  float(eps), ws)
