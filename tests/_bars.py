"""Every progress bar made through :mod:`linxling._progress` while installed (the global switch on):
its total, its count, whether it was shown and whether it was closed (tests/test_contract.py,
tests/test_cllsi.py)."""
from __future__ import annotations


class RecordedBars:
    """Install with ``RecordedBars(monkeypatch)``; ``made`` lists the bars in the order made."""

    def __init__(self, monkeypatch):
        import linxling._progress as lp
        self.made: list = []
        record = self.made

        class Recorded(lp.tqdm):  # type: ignore[misc, name-defined]
            def __init__(self, *a, **k):
                super().__init__(*a, **k)
                self.shown, self.closed = not self.disable, False
                record.append(self)

            def close(self):
                self.closed = True
                super().close()
        monkeypatch.setattr(lp, "tqdm", Recorded)
        monkeypatch.setitem(lp._STATE, "show", True)

    def shown(self) -> list:
        return [b for b in self.made if b.shown]
