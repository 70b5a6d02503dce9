"""tools/gpu/ncu_hot.py and sass_blocks.py on small hand-made inputs: the hottest
instructions come first with their main stall reasons, and samples land in the SASS block
the report's addresses map to once lined up by the anchor instruction."""
from __future__ import annotations

import io
import sys

from tools.gpu import ncu_hot, sass_blocks

CSV = """\
"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","stall_long_sb","stall_wait"
"0x7f0000001000","HGMMA.64x256x16.F32 R24, gdesc[UR28], R24","30","20","1","25"
"0x7f0000001010","@!P2 BRA 0x7f0000001000","60","60","55","2"
"0x7f0000001020","EXIT","10","10","0","0"
"""

SASS = """\
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   HGMMA.64x256x16.F32 R24, gdesc[UR28], R24 ;
        /*0020*/              @!P2 BRA `(.L_x_1) ;
.L_x_2:
        /*0030*/                   EXIT ;
"""


def hot_list(monkeypatch, capsys, argv: list[str]) -> str:
    """ncu_hot.py's output for CSV on its standard input."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(CSV))
    assert ncu_hot.main(argv) == 0
    return capsys.readouterr().out


def test_hottest_first_with_reasons(monkeypatch, capsys):
    lines = hot_list(monkeypatch, capsys, ["2"]).splitlines()
    assert lines[0].startswith("3 instructions, 100 samples")
    assert "60.0%" in lines[1] and "BRA" in lines[1] and "stall_long_sb=55" in lines[1]
    assert "30.0%" in lines[2] and "HGMMA" in lines[2] and "stall_wait=25" in lines[2]
    assert len(lines) == 3                    # N = 2 instructions


def test_samples_summed_per_block(tmp_path, monkeypatch, capsys):
    (tmp_path / "k.sass").write_text(SASS)
    (tmp_path / "hot.txt").write_text(hot_list(monkeypatch, capsys, ["10"]))
    rc = sass_blocks.main([str(tmp_path / "k.sass"), str(tmp_path / "hot.txt"), "HGMMA"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and out[0] == "unmatched 0.0%"
    # report 0x...1000 is the HGMMA at 0x10: the loop block gets HGMMA + BRA, EXIT its own
    assert out[1].startswith(" 90.0% .L_x_1") and "n=   2" in out[1]
    assert out[2].startswith(" 10.0% .L_x_2")


def test_missing_anchor_is_an_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "k.sass").write_text(SASS)
    (tmp_path / "hot.txt").write_text(hot_list(monkeypatch, capsys, []))
    assert sass_blocks.main([str(tmp_path / "k.sass"), str(tmp_path / "hot.txt"), "UTMALDG"]) == 1
