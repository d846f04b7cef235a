"""Matrix-free operators for the Cr5 family: centred Gram, block inverses, Woodbury, cross-covariance.

All operators are matmat-first :class:`LinearOperator` objects (see ``docs/engine.md``).
"""
from linxling._linop import (CallableOperator, DotTestResult, IdentityOperator,
                                      LinearOperator, MatrixOperator, as_operator, dottest)
from linxling.operators.block import BlockDiagonal
from linxling.operators.crosscov import CrossCovariance
from linxling.operators.gram import CenteredGram, Gram, GramBlockInverse, gram_nnz_estimate
from linxling.operators.woodbury import WoodburyInverse, woodbury_from_blocks

__all__ = [
    "LinearOperator", "MatrixOperator", "IdentityOperator", "CallableOperator", "as_operator",
    "dottest", "DotTestResult",
    "Gram", "CenteredGram", "GramBlockInverse", "gram_nnz_estimate",
    "BlockDiagonal", "WoodburyInverse", "woodbury_from_blocks", "CrossCovariance",
    "DaskCenteredGram",
]


def __getattr__(name: str):
    # dask is imported only when its operator is asked for
    if name == "DaskCenteredGram":
        from linxling.operators._dask import DaskCenteredGram
        return DaskCenteredGram
    raise AttributeError(f"module 'linxling.operators' has no attribute {name!r}")
