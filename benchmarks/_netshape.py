"""A network of a known bandwidth on one machine: the loopback interface shaped with ``tc``.

A ``LocalCluster``'s processes talk over the loopback interface, whose bandwidth (several GB/s)
is far above any real cluster's network. :func:`shaped_loopback` puts a token-bucket filter
(``tc qdisc ... tbf``) on ``lo`` for the duration of a ``with`` block, so that every byte the
client and the workers exchange crosses one link of the given rate: what the scaling model
(:mod:`benchmarks.dask_scaling`) calls the network. Every loopback flow of the machine shares
that one link while the block runs, as the client's one network interface does on a cluster.

It needs root (``CAP_NET_ADMIN``) and the ``tc`` program, refuses to replace a queueing
discipline that is already on ``lo``, and removes its own on the way out, also on errors.
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

DEVICE = "lo"


def _tc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["tc", *args], capture_output=True, text=True, check=check)


def loopback_qdisc() -> str:
    """The root queueing discipline on the loopback interface, as ``tc qdisc show`` prints it."""
    return _tc("qdisc", "show", "dev", DEVICE).stdout.strip()


@contextmanager
def shaped_loopback(gbit: float) -> Iterator[float]:
    """Limit the loopback interface to ``gbit`` Gbit/s inside the block (0: leave it alone).

    Yields the rate in bytes per second (``inf`` when unshaped)."""
    if not gbit:
        yield float("inf")
        return
    if gbit < 0:
        raise ValueError(f"gbit must be positive (or 0 for no shaping), got {gbit}")
    if shutil.which("tc") is None:
        raise RuntimeError("shaping the loopback needs the `tc` program (iproute2), which is not on PATH")
    before = loopback_qdisc()
    if not before.startswith("qdisc noqueue"):
        raise RuntimeError(f"the loopback interface already has a queueing discipline ({before!r}); "
                           "remove it first (`tc qdisc del dev lo root`) or run unshaped")
    # a burst of a few loopback MTUs (65,536 bytes); queued packets wait at most 100 ms
    done = _tc("qdisc", "add", "dev", DEVICE, "root", "tbf", "rate", f"{gbit}gbit", "burst", "4mb",
               "latency", "100ms", check=False)
    if done.returncode:
        raise RuntimeError(f"`tc qdisc add dev lo root tbf` failed ({done.stderr.strip()}): shaping the "
                           "loopback needs root (CAP_NET_ADMIN)")
    try:
        yield gbit * 1e9 / 8
    finally:
        _tc("qdisc", "del", "dev", DEVICE, "root")
