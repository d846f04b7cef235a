"""Plain NumPy reference of :mod:`linxling.kernels.compress_tree` (same conventions).

Written for clarity, one sentence at a time; the numba kernels are tested against it, and its
loss is what the central finite-difference gradient checks differentiate.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "compose",
    "encode_sentence",
    "greedy_positions",
    "left_to_right_positions",
    "pair_loss",
    "pair_loss_grad",
    "positions_to_steps",
    "random_positions",
]


def left_to_right_positions(l: int) -> np.ndarray:
    return np.zeros(max(l - 1, 0), dtype=np.int64)


def random_positions(l: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform merge position among the ``l - 1 - k`` adjacent pairs at each step ``k``."""
    return np.array([rng.integers(0, l - 1 - k) for k in range(l - 1)], dtype=np.int64)


def positions_to_steps(pos, l: int) -> np.ndarray:
    seq = list(range(l))
    steps = []
    for k, p in enumerate(pos):
        steps.append((seq[p], seq[p + 1]))
        seq[p:p + 2] = [l + k]
    return np.array(steps, dtype=np.int64).reshape(-1, 2)


def compose(x, y, params, nonlinear):
    """(h(x, y), first-layer pre-activation)."""
    u = params["A1"] @ np.concatenate([x, y]) + params["b1"]
    if not nonlinear:
        return u, u
    return params["A2"] @ np.clip(u, -1.0, 1.0) + params["b2"], u


def greedy_positions(E, tok, params, nonlinear) -> np.ndarray:
    """Algorithm 4 (ties: leftmost pair)."""
    cur = [E[t] for t in tok]
    pos = []
    while len(cur) > 1:
        cands = [compose(cur[p], cur[p + 1], params, nonlinear)[0] for p in range(len(cur) - 1)]
        scores = [params["w"] @ z for z in cands]
        p = int(np.argmax(scores))
        pos.append(p)
        cur[p:p + 2] = [cands[p]]
    return np.array(pos, dtype=np.int64)


def encode_sentence(E, tok, steps, params, nonlinear):
    """Nodes (2l-1, d) and pre-activations list of one sentence."""
    len(tok)
    nodes = [E[t].astype(np.float64) for t in tok]
    us = []
    for a, b in steps:
        z, u = compose(nodes[a], nodes[b], params, nonlinear)
        nodes.append(z)
        us.append(u)
    return np.array(nodes), us


def pair_loss(E, tok_pos, tok_neg, steps_pos, steps_neg, params, nonlinear) -> float:
    zp = encode_sentence(E, tok_pos, steps_pos, params, nonlinear)[0][-1]
    zn = encode_sentence(E, tok_neg, steps_neg, params, nonlinear)[0][-1]
    fp = params["w"] @ zp + params["w0"]
    fn = params["w"] @ zn + params["w0"]
    return float(max(0.0, 1.0 - fp + fn))


def _backward(g_root, tok, steps, nodes, us, params, nonlinear, grads, gE):
    l = len(tok)
    d = nodes.shape[1]
    G = np.zeros_like(nodes)
    G[-1] = g_root
    for k in range(l - 2, -1, -1):
        gz = G[l + k]
        u = us[k]
        if nonlinear:
            grads["A2"] += np.outer(gz, np.clip(u, -1, 1))
            grads["b2"] += gz
            gu = (params["A2"].T @ gz) * (np.abs(u) < 1)
        else:
            gu = gz
        a, b = steps[k]
        grads["A1"] += np.outer(gu, np.concatenate([nodes[a], nodes[b]]))
        grads["b1"] += gu
        gx = params["A1"].T @ gu
        G[a] += gx[:d]
        G[b] += gx[d:]
    for i, t in enumerate(tok):
        gE[t] += G[i]


def pair_loss_grad(E, tok_pos, tok_neg, steps_pos, steps_neg, params, nonlinear):
    """(loss, grads dict with keys A1, b1, A2, b2, w, w0, E) of one pair."""
    grads = {k: np.zeros_like(v, dtype=np.float64) for k, v in params.items()}
    gE = np.zeros_like(E, dtype=np.float64)
    nodes_p, us_p = encode_sentence(E, tok_pos, steps_pos, params, nonlinear)
    nodes_n, us_n = encode_sentence(E, tok_neg, steps_neg, params, nonlinear)
    loss = 1.0 - (params["w"] @ nodes_p[-1]) + (params["w"] @ nodes_n[-1])
    if loss <= 0:
        grads["E"] = gE
        return 0.0, grads
    grads["w"] = nodes_n[-1] - nodes_p[-1]
    _backward(-params["w"], tok_pos, steps_pos, nodes_p, us_p, params, nonlinear, grads, gE)
    _backward(params["w"], tok_neg, steps_neg, nodes_n, us_n, params, nonlinear, grads, gE)
    grads["E"] = gE
    return float(loss), grads
