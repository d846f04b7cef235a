"""Plain NumPy/Python reference of :mod:`linxling.kernels.skipgram` (BilBOWA's losses).

- :func:`skipgram_loss_grad` / :func:`align_loss_grad`: the losses and their hand-written
  gradients (checked against finite differences in the tests);
- :func:`skipgram_block` / :func:`align_block`: the SGD loops, replaying the kernel's splitmix64
  draws in the same order, one language after the other (the kernel runs them in parallel on
  disjoint rows, so the order does not matter).
"""
from __future__ import annotations

import bisect
import math

import numpy as np

__all__ = ["SplitMix64", "skipgram_loss_grad", "align_loss_grad", "skipgram_block", "align_block"]

_MASK = (1 << 64) - 1


class SplitMix64:
    """The kernel's generator in Python integers."""

    def __init__(self, seed: int) -> None:
        self.state = int(seed) & _MASK

    def uniform(self) -> float:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z = z ^ (z >> 31)
        return float(z >> 11) * 2.0 ** -53


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def skipgram_loss_grad(w: np.ndarray, C: np.ndarray, context: int, negatives) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss ``-log s(w.C[o]) - sum_j log s(-w.C[n_j])`` and its gradients wrt ``w`` and ``C``."""
    gw = np.zeros_like(w)
    gC = np.zeros_like(C)
    loss = 0.0
    for target, label in [(context, 1.0)] + [(int(n), 0.0) for n in negatives]:
        f = float(w @ C[target])
        sig = 1.0 / (1.0 + math.exp(-f))
        loss -= _log_sigmoid(f) if label else _log_sigmoid(-f)
        # d(-log s(f))/df = s(f) - 1 ; d(-log s(-f))/df = s(f)
        gf = sig - label
        gw += gf * C[target]
        gC[target] += gf * w
    return loss, gw, gC


def align_loss_grad(W: np.ndarray, a, b, weight: float) -> tuple[float, np.ndarray]:
    """``weight * ||mean W[a] - mean W[b]||^2`` (token occurrences; ``a``, ``b`` stacked row ids)
    and its gradient wrt ``W``."""
    a = np.asarray(a)
    b = np.asarray(b)
    diff = W[a].mean(axis=0) - W[b].mean(axis=0)
    G = np.zeros_like(W)
    np.add.at(G, a, 2.0 * weight * diff / len(a))
    np.add.at(G, b, -2.0 * weight * diff / len(b))
    return float(weight * diff @ diff), G


def skipgram_block(W, C, tokens, sent_ptr, ranges, offsets, cdf, cdf_ptr, keep, states, window,
                   negative, lr):
    """Reference of :func:`linxling.kernels.skipgram.skipgram_block` (``W``, ``C``, ``states``
    updated in place)."""
    L = len(ranges)
    losses = np.zeros(L)
    counts = np.zeros(L, dtype=np.int64)
    for lang in range(L):
        rng = SplitMix64(int(states[lang]))
        off = int(offsets[lang])
        cdf_l = list(cdf[cdf_ptr[lang]:cdf_ptr[lang + 1]])
        for s in range(int(ranges[lang][0]), int(ranges[lang][1])):
            buf = [int(t) for t in tokens[sent_ptr[s]:sent_ptr[s + 1]] if rng.uniform() < keep[off + int(t)]]
            n = len(buf)
            for pos in range(n):
                b = min(1 + int(rng.uniform() * window), window)
                center = buf[pos] + off
                for q in range(max(pos - b, 0), min(pos + b + 1, n)):
                    if q == pos:
                        continue
                    ctx = buf[q]
                    negs = []
                    for _ in range(negative):
                        t = min(bisect.bisect_right(cdf_l, rng.uniform()), len(cdf_l) - 1)
                        if t != ctx:
                            negs.append(t)
                    # sequential word2vec updates = one exact gradient step of the unit's loss
                    # when the negatives are distinct; replay them one by one to stay exact
                    neu = np.zeros(W.shape[1])
                    for target, label in [(ctx, 1.0)] + [(t, 0.0) for t in negs]:
                        row = target + off
                        f = float(W[center] @ C[row])
                        losses[lang] -= _log_sigmoid(f) if label else _log_sigmoid(-f)
                        g = (label - 1.0 / (1.0 + math.exp(-f))) * lr
                        neu += g * C[row]
                        C[row] += g * W[center]
                    W[center] += neu
                    counts[lang] += 1
        states[lang] = np.uint64(rng.state)
    return losses, counts


def align_block(W, a_tok, a_ptr, a_off, b_tok, b_ptr, b_off, p0, p1, weight, lr):
    """Reference of :func:`linxling.kernels.skipgram.align_block`."""
    loss = 0.0
    for p in range(p0, p1):
        a = np.asarray(a_tok[a_ptr[p]:a_ptr[p + 1]]) + a_off
        b = np.asarray(b_tok[b_ptr[p]:b_ptr[p + 1]]) + b_off
        if len(a) == 0 or len(b) == 0:
            continue
        val, G = align_loss_grad(W, a, b, weight)
        loss += val
        W -= lr * G
    return loss
