"""The GPU suite's own code (benchmarks/gpu.py, benchmarks/_gpu_peer.py), run on the CPU: the
rehearsal runs every measurement with NumPy for CuPy at toy sizes, and the numba-cuda peer runs
in numba's CUDA simulator against linxling's CPU ALS (issue #28)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]


def _run(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, **kw)


def test_the_suite_refuses_to_run_without_a_device_and_names_the_rehearsal(tmp_path, capsys):
    from benchmarks import gpu
    from linxling._backend import cupy_status
    if cupy_status()[0]:
        pytest.skip("a CUDA device is present: the suite would run")
    assert gpu.main(["run", str(tmp_path / "out")]) == 2
    assert "--rehearse" in capsys.readouterr().err
    assert gpu.main(["run", str(tmp_path / "out"), "--rehearse", "--only", "nope"]) == 2


def test_verse_inputs_round_trip(tmp_path):
    from benchmarks.gpu import _verse_inputs, save_verse_inputs
    rng = np.random.default_rng(0)
    blocks = {lang: sp.random(30, 12 + i, density=0.3, random_state=rng, format="csr") for i, lang in enumerate("ab")}
    test = {lang: sp.random(8, X.shape[1], density=0.3, random_state=rng, format="csr") for lang, X in blocks.items()}
    concepts = {lang: np.arange(30) for lang in blocks}
    save_verse_inputs(tmp_path, blocks, concepts, test, np.arange(5))
    b, c, t, q, ref = _verse_inputs(tmp_path)
    assert ref is None and list(b) == ["a", "b"]
    for lang in blocks:
        assert (b[lang] != blocks[lang]).nnz == 0 and (t[lang] != test[lang]).nnz == 0
        np.testing.assert_array_equal(c[lang], concepts[lang])
    np.testing.assert_array_equal(q, np.arange(5))
    with pytest.raises(ValueError, match="verse-aligned"):
        save_verse_inputs(tmp_path, blocks, {"a": np.arange(30), "b": np.arange(1, 31)}, test, q)


@pytest.mark.slow
def test_the_rehearsal_runs_every_measurement(tmp_path):
    proc = _run(["-m", "benchmarks.gpu", "run", str(tmp_path), "--rehearse"], timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((tmp_path / "gpu.json").read_text())
    assert res["rehearse"] and set(res["results"]) == {"tests", "bandwidth", "spmm", "cr5_verse", "cr5_wiki",
                                                        "wmf", "csls"}
    assert not any("error" in v for v in res["results"].values())
    wmf = res["results"]["wmf"]
    # the peer (simulated) reaches linxling's loss: the same CG steps from the same start
    assert abs(wmf["peer_numba_cuda"]["loss_ratio_linxling_over_peer"] - 1) < 1e-4
    verse = res["results"]["cr5_verse"]
    # (the toy problem's spectrum is flat: its P@1 at the paper's loose tolerances means nothing;
    # on the verse data the array path's P@1 is the CPU fit's: 0.8588 against 0.8584, float32)
    assert verse["gpu_float64_converged"] and 0 <= verse["cpu_p1"] <= 1
    # the fit again under each variant (FUSED_CG flipped: on NumPy the same array path; every
    # block dense), the settings restored after
    import linxling.xp.cr5 as xc
    import linxling.xp.linalg as xl
    from benchmarks import gpu
    var = verse["variants"]
    assert var["fused_cg"]["FUSED_CG"] is (not xl.FUSED_CG) and var["dense_blocks"]["DENSE_MAX"] == 16384
    assert all(w["gpu_float32_s"] > 0 and len(w["times_s"]) == gpu.VERSE_ROUNDS for w in var.values())
    assert set(var) == {"default", "fused_cg", "dense_blocks", "host_start", "cg_check_2", "cg_check_4"}
    assert xc.DENSE_MAX == 8192 and xl.CG_CHECK_EVERY == 1
    assert var["cg_check_2"]["CG_CHECK_EVERY"] == 2 and var["cg_check_4"]["CG_CHECK_EVERY"] == 4
    # the flags read less often: the same fits, up to every - 1 more iterations a solve
    assert var["default"]["cg_iterations"] <= var["cg_check_4"]["cg_iterations"]
    assert var["host_start"]["START_ON_DEVICE"] is False and xc.START_ON_DEVICE is True
    # where the time goes: the host profile, the synchronised operations (restored after), eigh
    prof = verse["profile"]
    assert prof["fit_s"] > 0 and len(prof["host"]) == 20 and all(r["own_s"] >= 0 for r in prof["host"])
    assert prof["operations"]["eigh"]["calls"] > 0 and prof["operations"]["orthonormalize"]["calls"] > 0
    assert set(prof["eigh"]) == {"110", "330"} and all(t["device"] > 0 and t["host"] > 0 for t in prof["eigh"].values())
    fused, default = var["fused_cg"], var["default"]
    assert fused["time_ratio_to_default"] == fused["gpu_float32_s"] / default["gpu_float32_s"]
    assert res["results"]["csls"]["P@1"] > 0.9
    assert "REHEARSAL" in (tmp_path / "gpu.md").read_text()


_PEER_SCRIPT = """
import numpy as np
from benchmarks._gpu_peer import PeerALS
from benchmarks.bench_wmf import zipf_binary
from linxling import WMF
X = zipf_binary(14, 10, 3, seed=0)
k = 4
rng = np.random.default_rng(1)
E0, V0 = rng.random((14, k)) * 0.1, rng.random((10, k)) * 0.1
for steps, solver in ((k, "cholesky"), (3, "cg")):
    peer = PeerALS(np, X, E0, V0, 0.1, 0.5, cg_steps=steps, max_blocks=5, min_threads=1)
    peer.fit(2)
    E, V = peer.factors()
    m = WMF(n_components=k, alpha=0.5, missing_weight=0.1, max_iter=2, solver=solver, cg_steps=3,
            show_progress=False, dtype=np.float64).fit(X, init_components=V0.T.copy(), init_embedding=E0.copy())
    print(solver, np.abs(E - m.embedding_).max(), np.abs(V - m.components_.T).max())
"""


@pytest.mark.slow
def test_the_numba_cuda_peer_equals_linxlings_als_in_the_simulator():
    """cg_steps = k CG steps solve each row exactly (= Cholesky); 3 steps = linxling's CG."""
    proc = _run(["-c", _PEER_SCRIPT], env={"NUMBA_ENABLE_CUDASIM": "1"}, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for line in proc.stdout.strip().splitlines():
        solver, de, dv = line.split()
        assert float(de) < 1e-9 and float(dv) < 1e-9, line


def test_the_fused_kernel_sweep_runs_its_settings_and_tables_them(monkeypatch):
    """The `wmf` measurement's sweep of the fused CG kernel's settings, its plumbing run here with
    NumPy and a stand-in for the CUDA kernel (the array path, recording the settings it is called
    with); the table names the default and the best."""
    from benchmarks import gpu
    from benchmarks.bench_wmf import zipf_binary
    from linxling.xp import _cuda_cg as cc
    from linxling.xp import als as xals
    from linxling.xp import device
    seen = []

    def stand_in(X, Y, out, G, dw, cg_steps, *, long_row=None):
        seen.append((long_row, cc.MAX_TEAM_WARPS, cc.SHORT_TEAMS))
        return xals.half_step(dev, X, Y, out, G, dw, "cg", cg_steps, fused=False)

    monkeypatch.setattr(cc, "fused_cg_half_step", stand_in)
    dev = device("cpu")
    X = zipf_binary(60, 30, 4, seed=0)
    rng = np.random.default_rng(0)
    E0, V0 = rng.random((60, 4)) * 0.1, rng.random((30, 4)) * 0.1
    sw = gpu._fused_sweep(dev, X, E0, V0, 0.1, 1.0)
    assert sw["default"] == f"long_row={cc.LONG_ROW} team_warps={cc.MAX_TEAM_WARPS} short_teams={cc.SHORT_TEAMS}"
    for side in ("rows", "cols"):
        assert sw[side][sw["default"]]["rel_diff_vs_array_path"] == 0.0
        assert len(sw[side]) == 2 + len(gpu.FUSED_SETTINGS)        # the array path, the default, the others
    assert (1 << 62, 32, 4) in seen and (cc.MAX_TEAM_WARPS, cc.SHORT_TEAMS) == (32, 4)   # restored
    v = {"linxling": {"s_per_iteration": 0.04}, "implicit_gpu": {"skipped": "x"}, "peer_numba_cuda": {"skipped": "y"},
         "shape": [60, 30], "k": 4, "fused_kernel_sweep": sw}
    text = gpu.table({"results": {"wmf": v}, "rehearse": True,
                      "machine": {"gpu": None, "cpu": "c", "cores": 2, "date": "d"}})
    assert "rows half-step: array path" in text and "fused default" in text and "best long_row=" in text


def test_the_spmm_row_tables_the_kernel_beside_cusparse():
    """The `spmm` row with linxling's kernel timed beside cuSPARSE (one product) and failed (the
    other): both named, the goal judged on the better of the two."""
    from benchmarks import gpu
    v = {"X @ V": {"seconds": 0.03, "GB_per_s": 26.0, "fraction_of_copy": 0.01,
                   "kernel": {"seconds": 0.01, "GB_per_s": 78.0, "rel_diff_vs_cusparse": 1e-7,
                              "fraction_of_copy": 0.03}},
         "X.T @ W": {"seconds": 0.045, "GB_per_s": 18.0, "fraction_of_copy": 0.006,
                     "kernel": {"error": "Traceback ...\nCUDADriverError: launch failed\n"}},
         "fraction_of_copy": 0.006}
    text = gpu.table({"results": {"spmm": v}, "rehearse": False,
                      "machine": {"gpu": "G", "cpu": "c", "cores": 2, "date": "d"}})
    assert "X V 10.0 ms against cuSPARSE's 30.0 ms" in text
    assert "Xᵀ W: kernel failed (CUDADriverError: launch failed)" in text and "**missed**" in text


def test_the_spmm_and_bandwidth_rows_give_the_gather_rates():
    """The rates the products gather rows at, beside the rate 50 % of copy would need, and the
    cache's read bandwidth beside the copy bandwidth (or why it is missing)."""
    from benchmarks import gpu
    nnz, b, copy = 1_000_000, 64, 3000.0
    gathered, nbytes = nnz * b * 4, 10_000_000
    v = {"X @ V": {"seconds": 0.002, "GB_per_s": nbytes / 0.002 / 1e9, "fraction_of_copy": 0.0017,
                   "gathered_bytes": gathered, "gathered_GB_per_s": gathered / 0.002 / 1e9,
                   "gathered_GB_per_s_for_goal": 0.5 * copy * gathered / nbytes,
                   "kernel": {"seconds": 0.001, "GB_per_s": nbytes / 0.001 / 1e9, "rel_diff_vs_cusparse": 1e-7,
                              "fraction_of_copy": 0.0033, "gathered_GB_per_s": gathered / 0.001 / 1e9}},
         "X.T @ W": {"seconds": 0.004, "GB_per_s": nbytes / 0.004 / 1e9, "fraction_of_copy": 0.0008,
                     "gathered_bytes": gathered, "gathered_GB_per_s": gathered / 0.004 / 1e9,
                     "gathered_GB_per_s_for_goal": 0.5 * copy * gathered / nbytes},
         "fraction_of_copy": 0.0033}
    bw = {"GB_per_s": copy, "cache_read": {"l2_bytes": 50 << 20, "8 MiB": 7000.0, "1024 MiB": 2900.0}}
    text = gpu.table({"results": {"bandwidth": bw, "spmm": v}, "rehearse": False,
                      "machine": {"gpu": "G", "cpu": "c", "cores": 2, "date": "d"}})
    assert "gathered rows read at 256 / 64 GB/s, where 50 % of copy would need 38,400" in text
    assert "3000 GB/s; reads of a buffer, GB/s: 8 MiB 7,000, 1024 MiB 2,900 (L2 50 MiB)" in text
    bw["cache_read"] = {"error": "Traceback ...\nCompileException: nvrtc failed\n"}
    text = gpu.table({"results": {"bandwidth": bw}, "rehearse": False,
                      "machine": {"gpu": "G", "cpu": "c", "cores": 2, "date": "d"}})
    assert "cache reads failed (CompileException: nvrtc failed)" in text


def test_the_verse_row_gives_its_variants():
    from benchmarks import gpu
    v = {"r": 100, "cpu_2_threads_s": 2.81, "gpu_float32_s": 0.345, "gpu_float64_s": 0.333, "speedup": 8.4,
         "cpu_p1": 0.861, "gpu_float32_p1": 0.8608, "gpu_float64_p1": 0.8607, "p1_difference": 0.0003,
         "variants": {"default": {"times_s": [0.35, 0.36, 0.34], "gpu_float32_s": 0.35, "speedup": 8.0, "p1": 0.8606},
                      "fused_cg": {"FUSED_CG": True, "times_s": [0.25, 0.26, 0.24], "gpu_float32_s": 0.25,
                                   "speedup": 11.2, "p1": 0.8607, "time_ratio_to_default": 0.25 / 0.35},
                      "dense_blocks": {"DENSE_MAX": 16384, "error": "Traceback ...\nCompileException: bad\n"}}}
    text = gpu.table({"results": {"cr5_verse": v}, "rehearse": False,
                      "machine": {"gpu": "G", "cpu": "c", "cores": 2, "date": "d"}})
    assert ("GPU 0.861/0.861; default: f32 median of 3 interleaved 0.350 s (8.0x, P@1 0.861); "
            "fused_cg (FUSED_CG=True): f32 median of 3 interleaved 0.250 s (11.2x, 0.71 of the default's time, "
            "P@1 0.861); dense_blocks: failed (CompileException: bad)") in text and "**missed**" in text


def test_the_cr5_wiki_row_names_the_kernel_fit():
    from benchmarks import gpu
    v = {"K": 485000, "r": 300, "fit_s": 53.3, "generate_s": 57.0, "converged": True,
         "other_products": {"products": "cusparse", "default_products": "kernel", "fit_s": 31.0, "converged": True,
                            "max_rel_diff_singular_values": 2e-6}}
    text = gpu.table({"results": {"cr5_wiki": v}, "rehearse": False,
                      "machine": {"gpu": "G", "cpu": "c", "cores": 2, "date": "d"}})
    assert ("53.3 s (data made in 57 s), kernel products; cusparse products 31.0 s (singular values within 2e-06)"
            in text)
