"""numba's fast-math flags for kernels whose sums may be reassociated (SIMD reductions), with
inf/nan semantics kept: no ``nnan``/``ninf``/``afn``."""
SIMD_SUMS = frozenset({"reassoc", "contract", "arcp", "nsz"})
