"""numba's threads within a container's CPU quota (linxling/_cpuquota.py): the quota read from
cgroup v2 and v1 files laid out in a temporary directory, and when it sets NUMBA_NUM_THREADS."""
from __future__ import annotations

from linxling._cpuquota import apply_cpu_limit, cgroup_cpu_limit


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_quota_the_smallest_on_the_path(tmp_path):
    proc = tmp_path / "proc_cgroup"
    _write(proc, "0::/kubepods/pod1/ctr\n")
    root = tmp_path / "cg"
    _write(root / "cpu.max", "max 100000\n")                       # the host: no quota
    _write(root / "kubepods" / "pod1" / "cpu.max", "250000 100000\n")   # the pod: 2.5 CPUs
    _write(root / "kubepods" / "pod1" / "ctr" / "cpu.max", "max 100000\n")
    assert cgroup_cpu_limit(str(root), str(proc)) == 2.5
    _write(root / "kubepods" / "pod1" / "ctr" / "cpu.max", "50000 100000\n")
    assert cgroup_cpu_limit(str(root), str(proc)) == 0.5
    _write(proc, "0::/\n")                                           # a container's own namespace
    _write(root / "cpu.max", "200000 100000\n")
    assert cgroup_cpu_limit(str(root), str(proc)) == 2.0


def test_cgroup_v1_cfs_quota_and_no_quota(tmp_path):
    proc = tmp_path / "proc_cgroup"
    _write(proc, "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n")
    root = tmp_path / "cg"
    for d in (root / "cpu,cpuacct", root / "cpu,cpuacct" / "docker" / "abc"):
        _write(d / "cpu.cfs_quota_us", "-1\n")
        _write(d / "cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(str(root), str(proc)) is None          # -1: unlimited
    _write(root / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us", "300000\n")
    assert cgroup_cpu_limit(str(root), str(proc)) == 3.0


def test_no_cgroup_files_or_garbage_is_no_limit(tmp_path):
    assert cgroup_cpu_limit(str(tmp_path), str(tmp_path / "missing")) is None
    proc = tmp_path / "proc_cgroup"
    _write(proc, "0::/a\n")
    _write(tmp_path / "cg" / "a" / "cpu.max", "lots 0\n")
    assert cgroup_cpu_limit(str(tmp_path / "cg"), str(proc)) is None


def test_numba_threads_set_to_the_quota_only_when_it_binds():
    env: dict = {}
    assert apply_cpu_limit(env, numba_imported=False, limit=2.5, cpus=32) == 3 and env == {"NUMBA_NUM_THREADS": "3"}
    env = {}
    assert apply_cpu_limit(env, numba_imported=False, limit=0.2, cpus=32) == 1 and env["NUMBA_NUM_THREADS"] == "1"
    env = {}
    assert apply_cpu_limit(env, numba_imported=False, limit=4.0, cpus=4) is None and env == {}   # not below
    env = {"NUMBA_NUM_THREADS": "16"}                                # the user's choice stands
    assert apply_cpu_limit(env, numba_imported=False, limit=2.0, cpus=32) is None and env["NUMBA_NUM_THREADS"] == "16"
    env = {}                                                         # numba's pool is sized already
    assert apply_cpu_limit(env, numba_imported=True, limit=2.0, cpus=32) is None and env == {}
