"""docs/api.md's parameter tables are the estimators' signatures (issue #26: one vocabulary)."""
from __future__ import annotations

from pathlib import Path

from tests._api_table import END, MEANING, START, _estimators, _params, render

ROOT = Path(__file__).resolve().parents[1]


def test_api_md_tables_match_the_signatures():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1
    block = text[text.index(START):text.index(END) + len(END)]
    assert block == render(), ("docs/api.md's parameter tables drifted from the code; replace the block "
                               "between the markers with the output of `python -m tests._api_table`")


def test_every_parameter_of_every_estimator_is_in_the_tables():
    block = render()
    for name, cls in _estimators():
        for p in _params(cls):
            assert f"`{p}`" in block or f"`{p}=" in block, (name, p)


def test_a_name_two_estimators_share_has_one_stated_meaning():
    uses: dict[str, int] = {}
    for _, cls in _estimators():
        for p in _params(cls):
            uses[p] = uses.get(p, 0) + 1
    unexplained = sorted(p for p, n in uses.items() if n >= 2 and p not in MEANING)
    assert not unexplained, f"shared parameters without a meaning in tests/_api_table.py: {unexplained}"
    # the renamed vocabulary: no estimator still takes the old names as its own parameter
    assert "epochs" not in uses and "loss_history" not in uses
