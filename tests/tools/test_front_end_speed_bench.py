"""bench/front_end_speed.py, which took over the suite's wall-clock assertions (they
flaked on a loaded machine), runs and reports every phase; how fast each is, it reports
rather than asserts."""
from __future__ import annotations

import json

from bench.front_end_speed import main

PHASES = ["lex 200 lines", "parse 200 lines", "spirv typical200", "ptx 200 lines",
          "ptx 800 lines", "ptx 800/200 ratio"]


def test_every_phase_is_measured_and_written(tmp_path, capsys):
    out = tmp_path / "speed.json"
    assert main(["--runs", "1", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["name"] for r in rows] == PHASES
    assert all(r.get("ms", 1) > 0 and r.get("ratio", 1) > 0 for r in rows)
    table = capsys.readouterr().out
    assert all(name in table for name in PHASES)
