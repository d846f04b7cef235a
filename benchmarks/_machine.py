"""The machine description every benchmark records next to its numbers."""
from __future__ import annotations

import os
import platform


def cpu_identity() -> dict:
    """The CPU's model name, family and model numbers and widest x86 vector extension, from
    /proc/cpuinfo (``"unknown"`` / None where it is not there). A VM's "AMD EPYC" is not one chip:
    on 2026-11-29 the 2-core VM reported family 26 (Zen 5) with AVX-512 and fitted Cr5 at K =
    485,000 in 154-160 s against 210 s at best in the earlier sessions, which had not recorded the
    family."""
    info: dict = {"cpu": "unknown", "cpu_family": None, "cpu_model": None, "vector_isa": None}
    keys = {"model name": "cpu", "cpu family": "cpu_family", "model": "cpu_model"}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                name, value = name.strip(), value.strip()
                if name in keys and info[keys[name]] in ("unknown", None):
                    info[keys[name]] = value if name == "model name" else int(value) if value.isdigit() else value
                elif name == "flags":
                    flags = set(value.split())
                    info["vector_isa"] = next((isa for isa, flag in (("avx512", "avx512f"), ("avx2", "avx2"),
                                                                     ("avx", "avx"), ("sse2", "sse2"))
                                               if flag in flags), None)
                    break
    except OSError:
        pass
    return info


def cpu_label(c: dict | None = None) -> str:
    """``cpu_identity()`` (or a dict with its keys) in a few words, e.g. "AMD EPYC (family 26,
    model 2, avx512)"."""
    c = cpu_identity() if c is None else c
    extra = [f"{k} {c[f'cpu_{k}']}" for k in ("family", "model") if c[f"cpu_{k}"] is not None]
    extra += [c["vector_isa"]] if c["vector_isa"] else []
    return c["cpu"] + (f" ({', '.join(extra)})" if extra else "")


def machine() -> dict:
    """CPU (model name, family, model, vector extension), cores, memory, Python/NumPy/numba/implicit
    versions, numba's threads and threading layer (TBB or OpenMP, linxling/_forksafe.py) and BLAS
    threads."""
    import numba
    import numpy as np
    import psutil
    import threadpoolctl

    import linxling
    ident = cpu_identity()
    try:
        import implicit
        implicit_version = implicit.__version__
    except ImportError:
        implicit_version = None
    return {**ident, "cores": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
            "numba_layer": numba.threading_layer(),     # started by get_num_threads above
            "implicit": implicit_version, "linxling": linxling.__version__,
            "blas": [{k: v for k, v in i.items() if k in ("internal_api", "version", "num_threads")}
                     for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]}
