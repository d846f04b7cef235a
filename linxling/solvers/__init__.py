"""Iterative solvers on linxling operators: (block) conjugate gradients and symmetric eigensolvers.

Solvers return result dataclasses and warn :class:`ConvergenceWarning` on non-convergence;
they never raise for it.
"""
from linxling.solvers._orth import orthonormalize
from linxling.solvers._results import ConvergenceWarning, EigResult, SolveResult
from linxling.solvers.cg import block_cg, cg
from linxling.solvers.eigen import eigsh

__all__ = ["ConvergenceWarning", "SolveResult", "EigResult", "cg", "block_cg", "eigsh", "orthonormalize"]
