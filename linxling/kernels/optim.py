"""AMSGrad (Reddi et al. 2018), BilDRL's optimiser, for dense parameter dicts.

Update of parameter ``p`` with gradient ``g`` at step ``t`` (1-based), Keras' form (the authors'
code), with the bias correction folded into the step size::

    m = beta1 m + (1 - beta1) g
    v = beta2 v + (1 - beta2) g^2
    vhat = max(vhat, v)
    p -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(vhat) + eps)

:func:`amsgrad_step` is the numba kernel (in place, one pass over the arrays);
:func:`amsgrad_step_reference` the NumPy reference it is tested against.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["AMSGrad", "amsgrad_step", "amsgrad_step_reference"]


@numba.njit(cache=True, error_model="numpy")   # no division-by-zero branch: the loop vectorises (2.2x)
def _amsgrad_flat(p, g, m, v, vhat, step, b1, b2, eps):
    for i in range(p.size):
        gi = g[i]
        mi = b1 * m[i] + (1.0 - b1) * gi
        vi = b2 * v[i] + (1.0 - b2) * gi * gi
        vh = max(vi, vhat[i])
        m[i] = mi
        v[i] = vi
        vhat[i] = vh
        p[i] -= step * mi / (np.sqrt(vh) + eps)


def _step_size(lr, b1, b2, t):
    return lr * np.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)


def amsgrad_step(p, g, m, v, vhat, t, lr=5e-4, beta1=0.9, beta2=0.999, eps=1e-7):
    """In-place AMSGrad update of the contiguous array ``p`` (numba)."""
    _amsgrad_flat(p.reshape(-1), np.ascontiguousarray(g, dtype=p.dtype).reshape(-1), m.reshape(-1),
                  v.reshape(-1), vhat.reshape(-1), _step_size(lr, beta1, beta2, t), beta1, beta2, eps)


def amsgrad_step_reference(p, g, m, v, vhat, t, lr=5e-4, beta1=0.9, beta2=0.999, eps=1e-7):
    """Plain NumPy AMSGrad update (in place)."""
    m *= beta1
    m += (1.0 - beta1) * g
    v *= beta2
    v += (1.0 - beta2) * g * g
    np.maximum(vhat, v, out=vhat)
    p -= _step_size(lr, beta1, beta2, t) * m / (np.sqrt(vhat) + eps)


class AMSGrad:
    """AMSGrad over a dict of dense parameter arrays (updated in place).

    Parameters
    ----------
    params : dict of str -> contiguous ndarray
    lr, beta1, beta2, eps : float
        The paper's values: ``lr=5e-4, beta1=0.9, beta2=0.999``.
    """

    def __init__(self, params: dict, lr: float = 5e-4, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-7) -> None:
        for k, a in params.items():
            if not (isinstance(a, np.ndarray) and a.flags.c_contiguous):
                raise TypeError(f"params[{k!r}] must be a C-contiguous ndarray")
        self.params = params
        self.lr, self.beta1, self.beta2, self.eps = float(lr), float(beta1), float(beta2), float(eps)
        self.t = 0
        self.state = {k: (np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)) for k, a in params.items()}

    def step(self, grads: dict) -> None:
        """Apply one update; ``grads`` has the same keys and shapes as ``params``."""
        self.t += 1
        for k, p in self.params.items():
            g = grads[k]
            if g.shape != p.shape:
                raise ValueError(f"grads[{k!r}] has shape {g.shape}, params[{k!r}] {p.shape}")
            m, v, vh = self.state[k]
            amsgrad_step(p, g, m, v, vh, self.t, self.lr, self.beta1, self.beta2, self.eps)
