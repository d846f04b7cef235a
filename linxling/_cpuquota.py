"""numba's thread count within a container's CPU limit.

numba starts one thread per CPU the process may run on (``os.sched_getaffinity``), which a
container's CPU *quota* does not change: Kubernetes' ``limits.cpu: 2`` or ``docker run --cpus 2``
on a 32-core host leaves the affinity at 32 CPUs and gives the container 2 CPUs' worth of time in
each scheduling period (CFS bandwidth control). numba's 32 threads then spend the quota in a
fraction of the period and the whole process is stopped until the next one, at every parallel
kernel; each kernel's barrier waits for the slowest thread, so a fit slows by far more than the
quota's share. joblib/loky read the quota for the same reason; numba and OpenBLAS do not.

At ``import linxling``, before numba is imported, :func:`apply_cpu_limit` sets
``NUMBA_NUM_THREADS`` to the quota, rounded up, when the quota is below the affinity and the
variable is not set already (set it to choose yourself). Where numba was imported first its
pool is already sized and nothing changes.
"""
from __future__ import annotations

import math
import os
import sys
from collections.abc import MutableMapping

__all__ = ["cgroup_cpu_limit", "apply_cpu_limit", "APPLIED"]

#: What :func:`apply_cpu_limit` did at import: ``{"cpus": quota, "threads": n}``, or empty.
APPLIED: dict = {}


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _v2_limit(directory: str) -> float | None:
    text = _read(os.path.join(directory, "cpu.max"))          # "max 100000" or "200000 100000"
    if not text:
        return None
    quota, _, period = text.partition(" ")
    if quota == "max" or not period:
        return None
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _v1_limit(directory: str) -> float | None:
    quota = _read(os.path.join(directory, "cpu.cfs_quota_us"))
    period = _read(os.path.join(directory, "cpu.cfs_period_us"))
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None               # -1: no quota


def _ancestors(root: str, path: str) -> list[str]:
    """``root/path`` and each directory above it, up to ``root`` (a quota applies to its subtree)."""
    parts = [p for p in path.strip("/").split("/") if p and p not in (".", "..")]
    return [os.path.join(root, *parts[:i]) for i in range(len(parts), -1, -1)]


def cgroup_cpu_limit(root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> float | None:
    """The CPUs' worth of time this process's cgroup may use per period (the smallest quota /
    period on its path, cgroup v2 or v1), or None where there is no quota or no cgroup file."""
    text = _read(proc_cgroup)
    if text is None:
        return None
    limits = []
    for line in text.splitlines():
        hier, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hier == "0" and controllers == "":                  # the v2 (unified) hierarchy
            for base in (root, os.path.join(root, "unified")):
                limits += [x for d in _ancestors(base, path) if (x := _v2_limit(d)) is not None]
        elif "cpu" in controllers.split(","):                  # v1's cpu controller
            for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                limits += [x for d in _ancestors(os.path.join(root, mount), path) if (x := _v1_limit(d)) is not None]
    return min(limits) if limits else None


def apply_cpu_limit(environ: MutableMapping[str, str] | None = None, numba_imported: bool | None = None,
                    limit: float | None = None, cpus: int | None = None) -> int | None:
    """Set ``NUMBA_NUM_THREADS`` to the cgroup's CPU quota (rounded up) when it is below the CPUs
    this process may run on, the variable is unset and numba not yet imported. Returns the
    thread count set, or None. The arguments default to this process's (tests pass their own)."""
    environ = os.environ if environ is None else environ
    if numba_imported is None:
        numba_imported = "numba" in sys.modules
    if numba_imported or "NUMBA_NUM_THREADS" in environ:
        return None
    try:
        limit = cgroup_cpu_limit() if limit is None else limit
        if cpus is None:
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    except Exception:                                            # never break import over a hint
        return None
    if limit is None:
        return None
    threads = max(1, math.ceil(limit - 1e-9))
    if threads >= cpus:
        return None
    environ["NUMBA_NUM_THREADS"] = str(threads)
    if environ is os.environ:
        APPLIED.update(cpus=limit, threads=threads)
    return threads
