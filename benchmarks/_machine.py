"""The machine description every benchmark records next to its numbers."""
from __future__ import annotations

import os
import platform


def machine() -> dict:
    """CPU model, cores, memory, Python/NumPy/numba/implicit versions and BLAS threads."""
    import numba
    import numpy as np
    import psutil
    import threadpoolctl

    import linxling
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import implicit
        implicit_version = implicit.__version__
    except ImportError:
        implicit_version = None
    return {"cpu": cpu, "cores": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "implicit": implicit_version, "linxling": linxling.__version__,
            "blas": [{k: v for k, v in i.items() if k in ("internal_api", "version", "num_threads")}
                     for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]}
