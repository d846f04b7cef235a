"""Small synthetic corpora shared by test modules (scale and chunking tests; never quality)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def sentence_matrix(n, m, *, seed=0, dtype=np.float64, density=0.1, empty_row=5, empty_col=2):
    """A sentence x word CSR matrix with positive weights in [0.5, 1.5), one empty sentence
    (row ``empty_row``) and one unused word (column ``empty_col``)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=density, random_state=seed, format="csr", dtype=np.float64)
    X.data[:] = rng.random(X.nnz) + 0.5
    X = X.tolil()
    X[empty_row, :] = 0
    X[:, empty_col] = 0
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    return X.astype(dtype)
