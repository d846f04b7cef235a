"""Optional dependencies of the test suite: flags and parameter marks that skip with the reason."""
from __future__ import annotations

import importlib.util

import pytest

HAS_CHOLMOD = importlib.util.find_spec("sksparse") is not None
NO_CHOLMOD = "scikit-sparse (CHOLMOD) is not installed: pip install 'linxling[cholmod]'"

#: the "cholmod" value of a block-method parametrisation, skipped without scikit-sparse
CHOLMOD = pytest.param("cholmod", marks=pytest.mark.skipif(not HAS_CHOLMOD, reason=NO_CHOLMOD))
