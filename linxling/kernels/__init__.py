"""Compute kernels (numba), each with a plain NumPy/SciPy reference beside it."""
