"""Numba kernels of BilBOWA (Gouws et al. 2015): skip-gram with negative sampling per language and
the sentence-mean alignment loss on parallel sentences.

Plain SGD with sparse-row updates (only the rows of the words seen are touched), as word2vec.
All randomness comes from one splitmix64 stream per language (:func:`uniform`), so a run is a
pure function of its seeds: the NumPy/Python reference :mod:`linxling.kernels.skipgram_reference`
replays the same draws and must give the same vectors (float64 vectors, up to the rounding of
the dot products' order; with float32 vectors the kernel's dot products and updates are float32).

Threads. The skip-gram updates of different languages touch disjoint rows (each language has
its own input matrix ``W`` and output matrix ``C``, stacked with row offsets), so
:func:`skipgram_block` runs the languages in parallel (``prange`` over the threads, each given a
set of languages balanced by their work, :func:`balance`) without races: the result
does not depend on the number of threads or on their timing (bitwise reproducible). The
alignment step (:func:`align_block`) couples the languages and runs serially between
skip-gram blocks (the interleaved schedule of :class:`linxling.BilBOWA`).

Losses (per unit; see the reference for gradients):

- skip-gram, center ``c``, context ``o``, negatives ``n_1..n_k`` drawn from unigram^0.75:
  ``-log s(W[c].C[o]) - sum_j log s(-W[c].C[n_j])``;
- alignment, parallel pair ``(S, T)``: ``weight * ||mean_{i in S} W[i] - mean_{j in T} W[j]||^2``.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from linxling.kernels._fastmath import SIMD_SUMS

__all__ = ["uniform", "skipgram_block", "align_block", "seed_states", "balance"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0   # 2**-53
# Reassociation for the skip-gram kernel's dot products (SIMD sums), inf/nan semantics kept
_FM = set(SIMD_SUMS)


@njit(cache=True, inline="always")
def uniform(state, i):
    """Next uniform in [0, 1) of splitmix64 stream ``i`` (``state`` a uint64 array, updated)."""
    z = state[i] + _GOLDEN
    state[i] = z
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * _INV53


def seed_states(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` independent splitmix64 seeds drawn from ``rng``."""
    return rng.integers(0, 2**63 - 1, size=n, dtype=np.int64).astype(np.uint64)


@njit(cache=True, inline="always")
def _log_sigmoid(x):
    # log s(x), stable for both signs
    if x >= 0.0:
        return -np.log1p(np.exp(-x))
    return x - np.log1p(np.exp(x))


@njit(cache=True, fastmath=_FM)
def _sg_language(W, C, tokens, sent_ptr, s0, s1, offset, cdf, keep, state, stream, window, negative,
                 lr, buf, neu):
    # One language's sentences s0:s1; its splitmix64 state is ``state[stream]`` (a slot in the
    # calling thread's own buffer: see _skipgram_block).
    # Each (center, target) term's dot product and gradient scale are in the vectors' dtype
    # (word2vec's float32 arithmetic with float32 vectors), the dot product summed in SIMD
    # lanes; the loss and the sigmoid in float64. Before 2026-12-02 both were float64 scalars
    # (the dot product one chain of d additions, and every update converted to float64 and
    # back). BilBOWA at its defaults (Intel Xeon, 2 cores, fresh processes interleaved): the NT
    # en-de fit 5.5 / 6.0 s against 9.0 / 8.4 s, the same held-out P@1; the leaderboard's
    # six-language fit 182.6 s against 246.3 s, the same scores (benchmarks/README.md,
    # "BilBOWA's skip-gram in float32").
    d = W.shape[1]
    loss = 0.0
    n_units = 0
    zero = W.dtype.type(0)
    for s in range(s0, s1):
        # subsampling of frequent words: one draw per token, always
        n = 0
        for p in range(sent_ptr[s], sent_ptr[s + 1]):
            t = tokens[p]
            u = uniform(state, stream)
            if u < keep[t]:
                buf[n] = t
                n += 1
        for pos in range(n):
            b = 1 + int(uniform(state, stream) * window)
            if b > window:
                b = window
            center = buf[pos] + offset
            lo = pos - b if pos - b > 0 else 0
            hi = pos + b + 1 if pos + b + 1 < n else n
            for q in range(lo, hi):
                if q == pos:
                    continue
                ctx = buf[q]
                for a in range(d):
                    neu[a] = 0.0
                for j in range(negative + 1):
                    if j == 0:
                        target = ctx
                        label = 1.0
                    else:
                        target = np.searchsorted(cdf, uniform(state, stream), side="right")
                        if target >= cdf.shape[0]:
                            target = cdf.shape[0] - 1
                        if target == ctx:
                            continue
                        label = 0.0
                    row = target + offset
                    dot = zero
                    for a in range(d):
                        dot += W[center, a] * C[row, a]
                    f = float(dot)
                    if label > 0.0:
                        loss -= _log_sigmoid(f)
                        g = W.dtype.type((1.0 - 1.0 / (1.0 + np.exp(-f))) * lr)
                    else:
                        loss -= _log_sigmoid(-f)
                        g = W.dtype.type((0.0 - 1.0 / (1.0 + np.exp(-f))) * lr)
                    for a in range(d):
                        neu[a] += g * C[row, a]
                        C[row, a] += g * W[center, a]
                for a in range(d):
                    W[center, a] += neu[a]
                n_units += 1
    return loss, n_units


@njit(cache=True)
def balance(work, n_threads):
    """Languages to threads, longest first each to the least loaded thread (ties: the lowest
    index): ``(order, ptr)``, thread ``t`` running languages ``order[ptr[t]:ptr[t + 1]]`` in that
    order. Deterministic; which thread runs a language changes no result (the languages touch
    disjoint rows and draw from their own streams)."""
    L = work.shape[0]
    T = min(max(n_threads, 1), max(L, 1))
    by_work = np.argsort(-work, kind="mergesort")
    load = np.zeros(T)
    owner = np.empty(L, dtype=np.int64)
    for k in range(L):
        lang = by_work[k]
        t = 0
        for u in range(1, T):
            if load[u] < load[t]:
                t = u
        owner[lang] = t
        load[t] += work[lang]
    # grouped by thread, each group in dealing order (a stable sort of the dealt sequence)
    order = by_work[np.argsort(owner[by_work], kind="mergesort")]
    ptr = np.zeros(T + 1, dtype=np.int64)
    for lang in range(L):
        ptr[owner[lang] + 1] += 1
    return order, np.cumsum(ptr)


def skipgram_block(W, C, tokens, sent_ptr, ranges, offsets, cdf, cdf_ptr, keep, states, window,
                   negative, lr, max_len):
    """Skip-gram SGD over sentences ``ranges[l, 0]:ranges[l, 1]`` of every language ``l``, the
    languages in parallel.

    ``W``, ``C``: stacked input / output matrices (rows of language ``l`` start at
    ``offsets[l]``); ``tokens`` / ``sent_ptr``: all sentences (token ids local to their language);
    ``cdf[cdf_ptr[l]:cdf_ptr[l+1]]`` the negative-sampling CDF of language ``l`` and ``keep`` (per
    stacked row) the subsampling keep-probabilities. Returns ``(loss sums, unit counts)`` per
    language.

    With more languages than threads, the languages are dealt to the threads by their
    work (the expected number of tokens subsampling keeps, :func:`balance`), not by index: the
    leaderboard's six Bible languages gave Chinese (a third of the skip-gram units: its
    overlapping character bigrams are the words) and two others to one of 2 threads before
    2026-12-03.
    """
    return _skipgram_block(W, C, tokens, sent_ptr, ranges, offsets, cdf, cdf_ptr, keep, states,
                           window, negative, lr, max_len, numba.get_num_threads())


@njit(cache=True, parallel=True)
def _skipgram_block(W, C, tokens, sent_ptr, ranges, offsets, cdf, cdf_ptr, keep, states, window,
                    negative, lr, max_len, n_threads):
    L = ranges.shape[0]
    losses = np.zeros(L)
    counts = np.zeros(L, dtype=np.int64)
    d = W.shape[1]
    work = np.zeros(L)
    for lang in range(L):
        off = offsets[lang]
        w = 0.0
        for p in range(sent_ptr[ranges[lang, 0]], sent_ptr[ranges[lang, 1]]):
            w += keep[off + tokens[p]]
        work[lang] = w
    order, ptr = balance(work, n_threads)
    for t in prange(ptr.shape[0] - 1):
        buf = np.empty(max_len, dtype=np.int64)
        neu = np.empty(d, dtype=W.dtype)
        # the running stream state in a thread's own cache line (element 8 of 16: 64 bytes of
        # its own buffer on each side), not in ``states``, whose elements share one line: every
        # draw wrote to the line both threads were writing
        own = np.empty(16, dtype=np.uint64)
        for k in range(ptr[t], ptr[t + 1]):
            lang = order[k]
            off = offsets[lang]
            lo, hi = cdf_ptr[lang], cdf_ptr[lang + 1]
            own[8] = states[lang]
            loss, n = _sg_language(W, C, tokens, sent_ptr, ranges[lang, 0], ranges[lang, 1], off,
                                   cdf[lo:hi], keep[off:], own, 8, window, negative, lr, buf, neu)
            states[lang] = own[8]
            losses[lang] = loss
            counts[lang] = n
    return losses, counts


@njit(cache=True)
def align_block(W, a_tok, a_ptr, a_off, b_tok, b_ptr, b_off, p0, p1, weight, lr):
    """Alignment SGD over parallel pairs ``p0:p1``: per pair one exact gradient step of
    ``weight * ||mean W[a] - mean W[b]||^2`` (means over token occurrences; an empty side is
    skipped). Returns the loss sum before the steps."""
    d = W.shape[1]
    diff = np.empty(d, dtype=W.dtype)
    loss = 0.0
    for p in range(p0, p1):
        na = a_ptr[p + 1] - a_ptr[p]
        nb = b_ptr[p + 1] - b_ptr[p]
        if na == 0 or nb == 0:
            continue
        for k in range(d):
            diff[k] = 0.0
        for q in range(a_ptr[p], a_ptr[p + 1]):
            r = a_tok[q] + a_off
            for k in range(d):
                diff[k] += W[r, k] / na
        for q in range(b_ptr[p], b_ptr[p + 1]):
            r = b_tok[q] + b_off
            for k in range(d):
                diff[k] -= W[r, k] / nb
        sq = 0.0
        for k in range(d):
            sq += diff[k] * diff[k]
        loss += weight * sq
        ga = 2.0 * weight * lr / na
        gb = 2.0 * weight * lr / nb
        for q in range(a_ptr[p], a_ptr[p + 1]):
            r = a_tok[q] + a_off
            for k in range(d):
                W[r, k] -= ga * diff[k]
        for q in range(b_ptr[p], b_ptr[p + 1]):
            r = b_tok[q] + b_off
            for k in range(d):
                W[r, k] += gb * diff[k]
    return loss
