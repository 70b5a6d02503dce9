"""cli_args.fast_parse against argparse: on every generated command line the fast reader
either declines (None) or gives exactly argparse's namespace; it never accepts a line that
argparse refuses, and it does read the lines build rules and users type."""
from __future__ import annotations

import contextlib
import io
import random

import pytest

from toolchain.compiler import cli
from toolchain.compiler.cli_args import DEFAULTS, fast_parse

WORDS = ["k.mettle", "other.mettle", "", "=x", "a=b", "-", "--", "-O", "-r", "--release",
         "--emit-ptx", "--emit-spirv", "--emit-obj", "--build", "-o", "out.ptx", "-oout",
         "-i", "--gpu-arch", "--gpu-arch=sm_90a", "--gpu-arch=", "sm_90a", "--gpu-a=sm_90",
         "--ptx-version=8.0", "--target", "x86_64-linux", "--target=mips", "--fp-contract=off",
         "--fp-contract=maybe", "--gpu-wmma-staging", "off", "--gpu-tensor-tuple-budget=16",
         "--gpu-tensor-tuple-budget=x", "--gpu-tensor-tuple-budget", "+5", "-5", "--explain",
         "--explain=1", "--verify", "--verify-each", "--profile", "--dump-ir", "--dump-spirv",
         "--print-target", "--gpu-checks", "--ml-opt", "--error-format=json",
         "--error-format", "text", "-I", "inc", "-l", "m", "--link-arg=-x", "--stdlib", "std",
         "--dump-ir-after", "gvn", "-h", "-Or", "--unknown"]


def argparse_namespace(argv: list[str]) -> dict | None:
    """argparse's namespace for argv, or None where argparse refuses it (or prints help)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return vars(cli.build_parser().parse_args(argv))
    except (cli._UsageError, SystemExit):
        return None


def test_defaults_are_argparses():
    assert argparse_namespace([]) == DEFAULTS
    assert vars(fast_parse([])) == DEFAULTS


@pytest.mark.parametrize("argv", [
    ["--emit-ptx", "--gpu-arch=sm_90a", "k.mettle", "-o", "k.ptx"],
    ["--emit-ptx", "-O", "--gpu-arch", "sm_121a", "--fp-contract=off", "-o", "k.ptx",
     "k.mettle"],
    ["--build", "-O", "host.mettle", "-o", "host", "--target=aarch64-linux"],
    ["--emit-spirv", "-i", "k.mettle", "-o", "k.spv", "--error-format=json"],
    ["--print-target", "--gpu-arch=gb10"],
    ["--emit-ptx", "--gpu-tensor-tuple-budget=8", "--gpu-wmma-staging=off", "k.mettle"],
])
def test_common_lines_take_the_fast_path_with_argparses_result(argv):
    fast = fast_parse(argv)
    assert fast is not None
    assert vars(fast) == argparse_namespace(argv)


def test_generated_lines_agree_or_fall_back():
    rng = random.Random(7)
    taken = 0
    for _ in range(4000):
        argv = [rng.choice(WORDS) for _ in range(rng.randint(0, 7))]
        fast = fast_parse(argv)
        if fast is None:
            continue
        taken += 1
        assert vars(fast) == argparse_namespace(argv), argv
    assert taken > 300          # the generator does reach the fast path


def test_an_emit_ptx_compile_does_not_import_argparse(tmp_path):
    import subprocess
    import sys
    src = tmp_path / "k.mettle"
    src.write_text("kernel k(x: float32*) { x[0] = 1.0; }\n")
    code = ("import sys; from toolchain.compiler import cli; "
            f"status = cli.main(['--emit-ptx', '--gpu-arch=sm_90a', {str(src)!r}, '-o', "
            f"{str(tmp_path / 'k.ptx')!r}]); "
            "print(status, 'argparse' in sys.modules, 'locale' in sys.modules)")
    root = cli.__file__.rsplit("/toolchain/", 1)[0]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=120).stdout.split()
    assert out == ["0", "False", "False"]
