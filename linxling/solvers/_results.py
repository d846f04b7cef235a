"""Result records and the non-convergence warning shared by all solvers."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ConvergenceWarning", "SolveResult", "EigResult"]


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before reaching its tolerance (the result is still returned)."""


@dataclass
class SolveResult:
    """Outcome of a linear solve.

    Attributes
    ----------
    x : ndarray (n,) or (n, m)
        The (approximate) solution.
    converged : bool or ndarray of bool (m,)
        Per column for block solves.
    n_iter : int
        Iterations performed (operator applications after the initial residual).
    residual_norms : ndarray (n_iter + 1,) or (n_iter + 1, m)
        ``||b - A x_k||`` (recursively updated) at every iteration, starting with ``x_0``.
    info : dict
        Solver-specific details (threshold, breakdowns, method, ...).
    """

    x: Any
    converged: Any
    n_iter: int
    residual_norms: np.ndarray
    info: dict = field(default_factory=dict)


@dataclass
class EigResult:
    """Outcome of a symmetric eigen-solve.

    Attributes
    ----------
    eigenvalues : ndarray (k,)
        In descending order.
    eigenvectors : ndarray (n, k)
        Orthonormal columns matching ``eigenvalues``.
    converged : bool
        Whether all ``k`` pairs met the tolerance.
    n_iter : int
        Iterations (block applications for ``"subspace"``; ``-1`` when the backend does not
        report it, i.e. ARPACK).
    n_matvec : int
        Operator applications counted in columns (a block of ``b`` columns counts ``b``).
        Excludes the one block application used to compute ``residual_norms`` afterwards
        for ARPACK/LOBPCG.
    residual_norms : ndarray (k,)
        ``||A v_i - theta_i v_i||``.
    info : dict
        Method, effective tolerance, block size, restarts, ...
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    converged: bool
    n_iter: int
    n_matvec: int
    residual_norms: np.ndarray
    info: dict = field(default_factory=dict)
