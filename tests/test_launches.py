"""benchmarks.launches: the array operations of a GPU fit, counted on the NumPy path."""
from __future__ import annotations

import numpy as np

from benchmarks import launches


def test_the_counter_counts_operations_and_not_views():
    c = launches._Counter()
    launches._COUNTER = c
    try:
        a = np.arange(6.0).reshape(2, 3).view(launches.Counted)
        b = a + a                               # a ufunc through an operator
        np.sum(b, axis=0)                       # a NumPy function
        a[[0, 1]]                               # a gather: a kernel on CuPy
        a[0:1, None]                            # a view: none
        with c.within("inner"):
            a[0, 0] = 1.0
    finally:
        launches._COUNTER = None
    assert c.counts == {("setup", "add"): 1, ("setup", "np.sum"): 1, ("setup", "take (fancy index)"): 1,
                        ("inner", "assign by index"): 1}
    assert type(b) is launches.Counted


def test_the_toy_fit_is_counted_by_stage_and_the_fused_cg_makes_fewer_operations():
    problem = launches._toy()
    kw = dict(dtype=np.float64, dense_max=launches.TOY_DENSE_MAX)
    plain = launches.count_cr5(*problem, **kw)
    fused = launches.count_cr5(*problem, fused=True, **kw)
    assert plain["methods"] == ["dense", "cg"] and plain["cg_iterations"] > 0
    assert set(plain["stages"]) >= {"setup", "blocks' set-up", "eigen-solver", "cg"}
    assert plain["operations"] == sum(s["total"] for s in plain["stages"].values())
    # the same iterations, fewer operations in them (one per fused kernel), the same fit
    assert fused["cg_iterations"] == plain["cg_iterations"]
    assert fused["stages"]["cg"]["total"] < plain["stages"]["cg"]["total"] / 2
    assert {k for k in fused["stages"]["cg"]["kinds"] if k.startswith("fused kernel")} == {
        "fused kernel " + n for n in ("coldot", "alpha", "update", "beta", "direction")}
    np.testing.assert_allclose(fused["singular_values"], plain["singular_values"], rtol=1e-10)


def test_the_command_line_writes_its_json(tmp_path, capsys):
    assert launches.main(["--toy", "--fused", "--out", str(tmp_path)]) == 0
    assert "fused CG" in capsys.readouterr().out and (tmp_path / "launches_fused.json").exists()
    assert launches.main(["--inputs", str(tmp_path), "--out", str(tmp_path)]) == 2     # no verse inputs
