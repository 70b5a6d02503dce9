"""`mettle check FILE...`: frontend + shared GPU verifiers, no code generation, no output."""
from __future__ import annotations

from pathlib import Path

from toolchain.compiler import cli

ROOT = Path(__file__).resolve().parents[2]
KERNEL = """kernel k(a: float32*) {
  a[thread.x] = 1.0;
}
"""
# A collective under thread-varying control: only the shared uniformity verifier sees it.
DIVERGENT = """kernel k(a: float32*) {
  if (thread.x < 3) {
    barrier(workgroup);
  }
}
"""


def check(tmp_path: Path, text: str, *flags: str) -> int:
    src = tmp_path / "m.mettle"
    src.write_text(text)
    return cli.main(["check", str(src), "--stdlib", str(ROOT / "std"), *flags])


def test_a_good_kernel_passes_and_writes_nothing(tmp_path, capsys):
    assert check(tmp_path, KERNEL) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mettle"]
    assert capsys.readouterr().err == ""


def test_syntax_error_is_located(tmp_path, capsys):
    assert check(tmp_path, "kernel k( {\n") == 1
    err = capsys.readouterr().err
    assert "error[E" in err and "m.mettle:1:" in err


def test_the_gpu_verifier_runs(tmp_path, capsys):
    assert check(tmp_path, DIVERGENT) == 1
    assert "error[E04" in capsys.readouterr().err


def test_host_program_with_std_imports_passes():
    assert cli.main(["check", str(ROOT / "app/host.mettle"), "--stdlib",
                     str(ROOT / "std")]) == 0


def test_warnings_fail_only_with_deny_warnings(tmp_path, capsys):
    (tmp_path / "a.mettle").write_text('import "b";\nfn fa() { }\n')
    (tmp_path / "b.mettle").write_text('import "a";\nfn fb() { }\n')
    entry = str(tmp_path / "a.mettle")
    assert cli.main(["check", entry, "--host"]) == 0
    assert "warning[W0103]" in capsys.readouterr().err
    assert cli.main(["check", entry, "--host", "--deny-warnings"]) == 1


def test_usage_error_exits_2(capsys):
    assert cli.main(["check"]) == 2
    assert "error[E0090]" in capsys.readouterr().err
