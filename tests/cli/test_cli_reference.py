"""docs/reference/cli.md describes every flag `mettle --help` offers and every exit code cli.py uses."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from toolchain.compiler import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")


def mentioned(word: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", DOC) is not None


def test_every_flag_is_documented():
    flags = [opt for action in cli.build_parser()._actions
             if action.help != argparse.SUPPRESS for opt in action.option_strings]
    assert len(flags) > 20
    assert [f for f in flags if not mentioned(f)] == []


def test_every_exit_code_is_documented():
    source = (ROOT / "toolchain" / "compiler" / "cli.py").read_text(encoding="utf-8")
    codes = {int(c) for c in re.findall(r"\breturn (\d+)\b", source)} | {cli.EXIT_INTERNAL}
    table = DOC[DOC.index("## Exit codes"):]
    assert [c for c in sorted(codes) if f"| {c} |" not in table] == []


def test_every_flag_and_subcommand_has_help_text():
    actions = [a for a in cli.build_parser()._actions if a.help != argparse.SUPPRESS]
    assert [a.option_strings or a.dest for a in actions if not a.help] == []
    text = cli.build_parser().format_help()
    for sub in ("mettle explain", "mettle version", "mettle help"):
        assert sub in text
    assert "--emit-obj" in text.split("subcommands:")[1]       # the default is named
