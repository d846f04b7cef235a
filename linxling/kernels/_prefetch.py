"""Software prefetch of a dense row for numba kernels that gather rows by a sparse index.

A kernel that walks the nonzeros of a CSR row and reads, for each, a row of a dense factor
(``Y[indices[idx]]``) stalls on every read when the factor is larger than the cache: the
hardware prefetchers cannot guess the next row. :func:`prefetch_row` asks for the row a few
nonzeros ahead (``llvm.prefetch``, a hint: it never faults and never changes a result), so
several rows are in flight at once. Measured on the 2-core AMD EPYC development machine: a
loop summing 2M random rows of a (1M, 100) float32 array 0.53 -> 0.20 s (one thread); the
sparse part of WMF's word half-step (a 200,000 x 100 float32 factor gathered by 4M nonzeros, 4
passes, 2 threads) 0.9-1.0 -> 0.45-0.55 s.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch_row", "PREFETCH_DISTANCE"]

# nonzeros ahead whose row is prefetched (rows of 100-400 floats: a few hundred cycles of work
# per row cover a memory access). 6 until 2026-11-30; on the Zen 5 VM of that night (the WMF
# benchmark's word half-step without its pushed words: 48,253 words gathering a 200,000 x 100
# factor from memory; k = 100, 2 threads, interleaved, medians of 9; two runs float32, one
# float64) 6 / 12 / 24 took 0.0904 / 0.0818 / 0.0835 s and 0.0960 / 0.0902 / 0.0913 s in
# float32, 0.1861 / 0.1843 / 0.1958 s in float64; the sentence half-step (its factor in the
# cache) 0.190-0.202 s / 0.190-0.199 s / 0.195-0.201 s float32. Whole fits of that benchmark
# (float32, a fresh process each, 6 and 12 interleaved, four each): medians 0.424 -> 0.417 s per
# iteration, within their noise. On an older AMD EPYC 3, 10 and 16 were within the noise of 6.
# The kernels of linxling.kernels.als take it as a constant when numba compiles them, and numba's
# cache of them is keyed on als.py: after changing it here, touch als.py (or clear the cache) in
# a checkout that has run them.
PREFETCH_DISTANCE = 12
_MAX_LINES = 16      # at most 1 KiB of a row is asked for (longer rows: their head)


def _prefetch_name(ptr_type) -> str:
    # LLVM's name carries the pointer type: "p0" with opaque pointers (llvmlite >= 0.44 by
    # default), "p0i8" with typed ones
    return "llvm.prefetch.p0" if str(ptr_type) == "ptr" else "llvm.prefetch.p0i8"


@intrinsic
def prefetch_row(typingctx, arr, i):
    """Prefetch row ``i`` of a C-contiguous 2-D array for reading (a hint; no bounds check is
    needed: a prefetch never faults). Use inside ``@njit`` code only."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2 and arr.layout == "C"
            and isinstance(i, types.Integer)):
        return None
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        arrty = signature.args[0]
        aval, ival = args
        ary = context.make_array(arrty)(context, builder, aval)
        ncols = builder.extract_value(ary.shape, 1)
        idx = ival
        if idx.type.width < ncols.type.width:
            idx = builder.sext(idx, ncols.type)
        elif idx.type.width > ncols.type.width:
            idx = builder.trunc(idx, ncols.type)
        row = builder.gep(ary.data, [builder.mul(idx, ncols)])
        i8p = ir.IntType(8).as_pointer()
        base = builder.bitcast(row, i8p)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _prefetch_name(i8p))
        itemsize = context.get_abi_sizeof(context.get_data_type(arrty.dtype))
        nbytes = builder.mul(ncols, ir.Constant(ncols.type, itemsize))
        i32 = ir.IntType(32)
        for line in range(_MAX_LINES):       # one hint per 64-byte line of the row
            with builder.if_then(builder.icmp_signed(">", nbytes, ir.Constant(ncols.type, 64 * line))):
                ptr = builder.gep(base, [ir.Constant(ir.IntType(64), 64 * line)])
                # read (0), keep in every cache level (3), data cache (1)
                builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
