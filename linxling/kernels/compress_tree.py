"""Numba kernels of Etter's CompressTree (Etter 2009, chapter 5), backpropagation by hand.

A sentence of ``l`` word vectors is compressed by ``l - 1`` applications of
``h: R^d x R^d -> R^d`` along a binary tree; a linear layer scores the root.

* linear ``h``:     ``h(x, y) = A1 [x; y] + b1``                 (A1: d x 2d)
* non-linear ``h``: ``h(x, y) = A2 hardTanh(A1 [x; y] + b1) + b2`` (A1: nHU x 2d, A2: d x nHU)
* score:            ``f(s) = w . z_root + w0``

A tree is given by *merge positions* ``p_0 .. p_{l-2}``: step ``k`` replaces the elements at
positions ``p_k`` and ``p_k + 1`` of the current sequence (length ``l - k``) by their
compression. Left-to-right is ``p = 0, 0, ...``; a random tree draws ``p_k`` uniformly; the
greedy tree (Algorithm 4) picks at each step the adjacent pair whose compression scores best.

Node ``i < l`` is word ``i``; node ``l + k`` is the output of step ``k``; ``steps[k]`` holds the
two node ids merged (left, right). Loss of a (positive, negative) pair (Sec. 5.4.2):
``max(0, 1 - f(s_pos) + f(s_neg))``. The plain NumPy reference is
:mod:`linxling.kernels.compress_tree_reference`.
"""
from __future__ import annotations

import numba as nb
import numpy as np

__all__ = [
    "backward",
    "encode",
    "forward",
    "greedy_positions",
    "greedy_steps",
    "pair_loss_grad",
    "positions_to_steps",
    "train_epoch",
]


@nb.njit(cache=True)
def positions_to_steps(pos, l):
    """Node ids merged at each step for merge positions ``pos`` (length ``l - 1``).

    The current sequence is the alive slots of the l words in order; position ``p`` is found
    as the (p+1)-th alive slot with a Fenwick tree (binary lifting) and its right neighbour by
    a linked list: O(l log l) for any tree (a plain list shift would be O(l^2); a 300k-token
    sentence took 95 s that way)."""
    steps = np.empty((max(l - 1, 0), 2), dtype=np.int64)
    if l <= 1:
        return steps
    fen = np.zeros(l + 1, dtype=np.int64)       # Fenwick tree of alive flags, 1-based
    for i in range(1, l + 1):
        fen[i] += 1
        j = i + (i & -i)
        if j <= l:
            fen[j] += fen[i]
    top = 1
    while top * 2 <= l:
        top *= 2
    node = np.arange(l)
    nxt = np.arange(1, l + 1)
    for k in range(l - 1):
        rank = pos[k] + 1                         # the (p+1)-th alive slot
        at = 0
        step = top
        while step > 0:
            if at + step <= l and fen[at + step] < rank:
                at += step
                rank -= fen[at]
            step //= 2
        a = at                                    # 0-based slot
        b = nxt[a]
        steps[k, 0] = node[a]
        steps[k, 1] = node[b]
        node[a] = l + k
        nxt[a] = nxt[b]
        i = b + 1                                 # slot b leaves the sequence
        while i <= l:
            fen[i] -= 1
            i += i & -i
    return steps


@nb.njit(cache=True)
def _compose(x, y, A1, b1, A2, b2, nonlinear, u, out):
    """out = h(x, y); u receives the first layer's pre-activation."""
    d = x.shape[0]
    m = A1.shape[0]
    for r in range(m):
        s = b1[r]
        for c in range(d):
            s += A1[r, c] * x[c] + A1[r, d + c] * y[c]
        u[r] = s
    if nonlinear:
        for r in range(d):
            s = b2[r]
            for c in range(m):
                v = u[c]
                if v > 1.0:
                    v = 1.0
                elif v < -1.0:
                    v = -1.0
                s += A2[r, c] * v
            out[r] = s
    else:
        for r in range(d):
            out[r] = u[r]


@nb.njit(cache=True)
def greedy_positions(E, tok, A1, b1, A2, b2, w, nonlinear):
    """Algorithm 4: merge positions of the greedy tree (best-scoring adjacent pair each step)."""
    l = tok.shape[0]
    d = E.shape[1]
    m = A1.shape[0]
    cur = np.empty((l, d))
    for i in range(l):
        cur[i] = E[tok[i]]
    pos = np.zeros(max(l - 1, 0), dtype=np.int64)
    u = np.empty(m)
    z = np.empty(d)
    best_z = np.empty(d)
    n = l
    for k in range(l - 1):
        best = -np.inf
        bp = 0
        for p in range(n - 1):
            _compose(cur[p], cur[p + 1], A1, b1, A2, b2, nonlinear, u, z)
            sc = 0.0
            for c in range(d):
                sc += w[c] * z[c]
            if sc > best:          # strict: ties go to the leftmost pair
                best = sc
                bp = p
                best_z[:] = z
        pos[k] = bp
        cur[bp] = best_z
        for j in range(bp + 1, n - 1):
            cur[j] = cur[j + 1]
        n -= 1
    return pos


@nb.njit(cache=True, inline="always")
def _before(hs, hi, a, b):
    """Heap order: higher score first; equal scores, the leftmost pair first (as Algorithm 4's
    left-to-right scan with a strict comparison)."""
    return hs[a] > hs[b] or (hs[a] == hs[b] and hi[a] < hi[b])


@nb.njit(cache=True)
def _heap_push(hs, hi, hv, n, score, slot, version):
    hs[n] = score
    hi[n] = slot
    hv[n] = version
    c = n
    while c > 0:
        par = (c - 1) // 2
        if _before(hs, hi, c, par):
            hs[c], hs[par] = hs[par], hs[c]
            hi[c], hi[par] = hi[par], hi[c]
            hv[c], hv[par] = hv[par], hv[c]
            c = par
        else:
            break
    return n + 1


@nb.njit(cache=True)
def _heap_pop(hs, hi, hv, n):
    """Remove the top (read it before calling); returns the new size."""
    n -= 1
    hs[0], hi[0], hv[0] = hs[n], hi[n], hv[n]
    c = 0
    while True:
        lft = 2 * c + 1
        if lft >= n:
            break
        best = lft
        if lft + 1 < n and _before(hs, hi, lft + 1, lft):
            best = lft + 1
        if _before(hs, hi, best, c):
            hs[c], hs[best] = hs[best], hs[c]
            hi[c], hi[best] = hi[best], hi[c]
            hv[c], hv[best] = hv[best], hv[c]
            c = best
        else:
            break
    return n


@nb.njit(cache=True)
def greedy_steps(E, tok, A1, b1, A2, b2, w, nonlinear):
    """The steps of Algorithm 4's greedy tree, equal to ``positions_to_steps(greedy_positions(
    ...))`` but in O(l) compositions and O(l log l) time: a merge only changes the scores of the
    two pairs next to it, so every pair's composition and score is kept (recomputed only when
    one of its nodes changed) and the best pair comes from a max-heap with stale entries skipped
    (the same choice, ties to the leftmost pair, as scanning every pair at every step)."""
    l = tok.shape[0]
    d = E.shape[1]
    m = A1.shape[0]
    steps = np.empty((max(l - 1, 0), 2), dtype=np.int64)
    if l <= 1:
        return steps
    cur = np.empty((l, d))
    for i in range(l):
        cur[i] = E[tok[i]]
    zc = np.empty((l, d))                         # composition of the pair that starts at slot i
    node = np.arange(l)
    nxt = np.arange(1, l + 1)
    prv = np.arange(-1, l - 1)
    version = np.zeros(l, dtype=np.int64)
    cap = 3 * l
    hs = np.empty(cap)
    hi = np.empty(cap, dtype=np.int64)
    hv = np.empty(cap, dtype=np.int64)
    u = np.empty(m)
    n = 0
    for i in range(l - 1):
        _compose(cur[i], cur[i + 1], A1, b1, A2, b2, nonlinear, u, zc[i])
        sc = 0.0
        for c in range(d):
            sc += w[c] * zc[i, c]
        n = _heap_push(hs, hi, hv, n, sc, i, 0)
    for k in range(l - 1):
        while True:                               # the best pair whose entry is current
            i = hi[0]
            v = hv[0]
            n = _heap_pop(hs, hi, hv, n)
            if v == version[i] and nxt[i] < l:
                break
        j = nxt[i]
        steps[k, 0] = node[i]
        steps[k, 1] = node[j]
        node[i] = l + k
        cur[i] = zc[i]
        nxt[i] = nxt[j]
        if nxt[j] < l:
            prv[nxt[j]] = i
        version[j] += 1                           # slot j is gone: its entries are stale
        for a in (prv[i], i):                     # the two pairs next to the merge
            if a >= 0 and nxt[a] < l:
                version[a] += 1
                _compose(cur[a], cur[nxt[a]], A1, b1, A2, b2, nonlinear, u, zc[a])
                sc = 0.0
                for c in range(d):
                    sc += w[c] * zc[a, c]
                n = _heap_push(hs, hi, hv, n, sc, a, version[a])
    return steps


@nb.njit(cache=True)
def forward(E, tok, steps, A1, b1, A2, b2, nonlinear, nodes, U):
    """Fill ``nodes`` (2l-1, d) and ``U`` (l-1, m); the root is ``nodes[2l-2]``."""
    l = tok.shape[0]
    for i in range(l):
        nodes[i] = E[tok[i]]
    for k in range(l - 1):
        _compose(nodes[steps[k, 0]], nodes[steps[k, 1]], A1, b1, A2, b2, nonlinear, U[k], nodes[l + k])


@nb.njit(cache=True)
def backward(g_root, tok, steps, nodes, U, A1, A2, nonlinear, G, gA1, gb1, gA2, gb2):
    """Backpropagate ``g_root`` = dL/dz_root through the tree.

    Adds parameter gradients into gA1, gb1, gA2, gb2; leaves dL/d(word node i) in ``G[i]``
    for ``i < l`` (``G`` is (2l-1, d), overwritten).
    """
    l = tok.shape[0]
    d = nodes.shape[1]
    m = A1.shape[0]
    G[:] = 0.0
    G[2 * l - 2] = g_root
    gu = np.empty(m)
    for k in range(l - 2, -1, -1):
        gz = G[l + k]
        if nonlinear:
            for c in range(m):
                uk = U[k, c]
                v = uk
                if v > 1.0:
                    v = 1.0
                elif v < -1.0:
                    v = -1.0
                s = 0.0
                for r in range(d):
                    gA2[r, c] += gz[r] * v
                    s += A2[r, c] * gz[r]
                gu[c] = s if -1.0 < uk < 1.0 else 0.0
            for r in range(d):
                gb2[r] += gz[r]
        else:
            for r in range(d):
                gu[r] = gz[r]
        a = steps[k, 0]
        b = steps[k, 1]
        xa = nodes[a]
        xb = nodes[b]
        for r in range(m):
            g = gu[r]
            if g == 0.0:
                continue
            gb1[r] += g
            for c in range(d):
                gA1[r, c] += g * xa[c]
                gA1[r, d + c] += g * xb[c]
                G[a, c] += A1[r, c] * g
                G[b, c] += A1[r, d + c] * g


@nb.njit(cache=True)
def pair_loss_grad(E, tok_pos, tok_neg, steps_pos, steps_neg, A1, b1, A2, b2, w, w0, nonlinear,
                   gA1, gb1, gA2, gb2, gw, G_pos, G_neg):
    """Ranking loss ``max(0, 1 - f(pos) + f(neg))`` of one pair and its gradient.

    Parameter gradients are ADDED to gA1, gb1, gA2, gb2, gw (w0 cancels out of the loss);
    ``G_pos[i]`` / ``G_neg[i]`` (i < l) receive the gradients of the word vectors at position i
    (zero when the loss is zero). Returns the loss.
    """
    l = tok_pos.shape[0]
    d = E.shape[1]
    m = A1.shape[0]
    nodes_p = np.empty((2 * l - 1, d))
    nodes_n = np.empty((2 * l - 1, d))
    U_p = np.empty((max(l - 1, 0), m))
    U_n = np.empty((max(l - 1, 0), m))
    forward(E, tok_pos, steps_pos, A1, b1, A2, b2, nonlinear, nodes_p, U_p)
    forward(E, tok_neg, steps_neg, A1, b1, A2, b2, nonlinear, nodes_n, U_n)
    zp = nodes_p[2 * l - 2]
    zn = nodes_n[2 * l - 2]
    fp = w0
    fn = w0
    for c in range(d):
        fp += w[c] * zp[c]
        fn += w[c] * zn[c]
    loss = 1.0 - fp + fn
    if loss <= 0.0:
        G_pos[:] = 0.0
        G_neg[:] = 0.0
        return 0.0
    for c in range(d):
        gw[c] += zn[c] - zp[c]
    backward(-w, tok_pos, steps_pos, nodes_p, U_p, A1, A2, nonlinear, G_pos, gA1, gb1, gA2, gb2)
    backward(w.copy(), tok_neg, steps_neg, nodes_n, U_n, A1, A2, nonlinear, G_neg, gA1, gb1, gA2, gb2)
    return loss


@nb.njit(cache=True)
def _tree(E, tok, tree_kind, given, A1, b1, A2, b2, w, nonlinear):
    if tree_kind == 2:
        return greedy_steps(E, tok, A1, b1, A2, b2, w, nonlinear)
    return positions_to_steps(given, tok.shape[0])


@nb.njit(cache=True)
def train_epoch(E, A1, b1, A2, b2, w, w0, nonlinear, indices, indptr, order, neg_pos, neg_word,
                tree_kind, tree_pos, lr, lr_words):
    """One SGD epoch over sentences ``order``; returns the summed ranking loss.

    Sentence ``s`` is ``indices[indptr[s]:indptr[s+1]]`` (length >= 2); its negative replaces
    position ``neg_pos[s]`` by word ``neg_word[s]``. ``tree_kind``: 0/1 use the merge
    positions ``tree_pos[indptr[s] - s : indptr[s+1] - s - 1]`` (same tree for both sentences),
    2 the greedy tree of each sentence under the current parameters. Plain SGD, updating
    A1, b1, A2, b2, w after every pair and only the word rows of the pair (sequential, so runs
    are reproducible bit for bit).
    """
    d = E.shape[1]
    gA1 = np.zeros_like(A1)
    gb1 = np.zeros_like(b1)
    gA2 = np.zeros_like(A2)
    gb2 = np.zeros_like(b2)
    gw = np.zeros_like(w)
    total = 0.0
    for t in range(order.shape[0]):
        s = order[t]
        a = indptr[s]
        e = indptr[s + 1]
        l = e - a
        tok_p = indices[a:e].copy()
        tok_n = tok_p.copy()
        tok_n[neg_pos[s]] = neg_word[s]
        given = tree_pos[a - s:e - s - 1]
        steps_p = _tree(E, tok_p, tree_kind, given, A1, b1, A2, b2, w, nonlinear)
        steps_n = _tree(E, tok_n, tree_kind, given, A1, b1, A2, b2, w, nonlinear)
        gA1[:] = 0.0
        gb1[:] = 0.0
        gA2[:] = 0.0
        gb2[:] = 0.0
        gw[:] = 0.0
        G_p = np.empty((2 * l - 1, d))
        G_n = np.empty((2 * l - 1, d))
        loss = pair_loss_grad(E, tok_p, tok_n, steps_p, steps_n, A1, b1, A2, b2, w, w0, nonlinear,
                              gA1, gb1, gA2, gb2, gw, G_p, G_n)
        if loss <= 0.0:
            continue
        total += loss
        A1 -= lr * gA1
        b1 -= lr * gb1
        if nonlinear:
            A2 -= lr * gA2
            b2 -= lr * gb2
        w -= lr * gw
        for i in range(l):
            for c in range(d):
                E[tok_p[i], c] -= lr_words * G_p[i, c]
                E[tok_n[i], c] -= lr_words * G_n[i, c]
    return total


@nb.njit(cache=True)
def encode(E, indices, indptr, tree_kind, tree_pos, A1, b1, A2, b2, w, nonlinear, out):
    """Root vector of every sentence into ``out`` (n, d) (a one-word sentence is its word)."""
    d = E.shape[1]
    m = A1.shape[0]
    n = indptr.shape[0] - 1
    for s in range(n):
        a = indptr[s]
        e = indptr[s + 1]
        l = e - a
        tok = indices[a:e]
        given = tree_pos[a - s:e - s - 1] if l > 1 else tree_pos[0:0]
        steps = _tree(E, tok, tree_kind, given, A1, b1, A2, b2, w, nonlinear)
        nodes = np.empty((2 * l - 1, d))
        U = np.empty((max(l - 1, 0), m))
        forward(E, tok, steps, A1, b1, A2, b2, nonlinear, nodes, U)
        out[s] = nodes[2 * l - 2]


@nb.njit(cache=True)
def _score_sentence(E, tok, tree_kind, given, A1, b1, A2, b2, w, w0, nonlinear):
    l = tok.shape[0]
    d = E.shape[1]
    steps = _tree(E, tok, tree_kind, given, A1, b1, A2, b2, w, nonlinear)
    nodes = np.empty((2 * l - 1, d))
    U = np.empty((max(l - 1, 0), A1.shape[0]))
    forward(E, tok, steps, A1, b1, A2, b2, nonlinear, nodes, U)
    f = w0
    for c in range(d):
        f += w[c] * nodes[2 * l - 2, c]
    return f


@nb.njit(cache=True, parallel=True)
def corrupted_ranks(E, indices, indptr, positions, tree_kind, tree_pos, A1, b1, A2, b2, w, w0,
                    nonlinear):
    """Etter's Sec. 5.4.2 rank of each sentence: 1 + the number of sentences obtained by
    replacing the word at ``positions[s]`` by each other vocabulary word that score strictly
    higher than the true sentence (same tree positions for all; greedy: each its own tree)."""
    n = indptr.shape[0] - 1
    V = E.shape[0]
    ranks = np.empty(n, dtype=np.int64)
    for s in nb.prange(n):
        a = indptr[s]
        e = indptr[s + 1]
        tok = indices[a:e].copy()
        given = tree_pos[a - s:e - s - 1]
        true = _score_sentence(E, tok, tree_kind, given, A1, b1, A2, b2, w, w0, nonlinear)
        p = positions[s]
        orig = tok[p]
        count = 0
        for v in range(V):
            if v == orig:
                continue
            tok[p] = v
            if _score_sentence(E, tok, tree_kind, given, A1, b1, A2, b2, w, w0, nonlinear) > true:
                count += 1
        ranks[s] = 1 + count
    return ranks
