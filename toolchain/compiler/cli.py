"""`mettle` command line (also `python -m toolchain.compiler`). LANGUAGE.md §10.

Exit codes: 0 success, 1 compile errors, 2 usage errors, 70 internal compiler error.
A failed compile writes no output file.
"""
from __future__ import annotations

import gc
import os
import sys

from .cli_args import HOST_TARGETS, fast_parse
from .diagnostics import CompileError, Diagnostic, SourceMap, Span, render_json, render_text

VERSION = "0.1.0"


def native_target() -> str:
    """The --target of the machine running the compiler (a DGX Spark builds AArch64).
    os.uname().machine is what platform.machine() reads on POSIX, without importing
    platform (its import and regexes cost every compile ~2 ms)."""
    if sys.platform == "win32":
        return "x86_64-windows"
    return "aarch64-linux" if os.uname().machine.lower() in ("aarch64", "arm64") \
        else "x86_64-linux"
EXIT_INTERNAL = 70


class _UsageError(Exception):
    pass


def _formatter_class(argparse):
    """argparse's formatter, sized as argparse would but without importing `shutil`, and
    measured once per parser: argparse makes a formatter per add_argument (the import cost
    every compile a few ms; asking the terminal each time, a hundred failed ioctls)."""
    try:
        width = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        try:
            width = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            width = 80

    def formatter(prog: str) -> argparse.HelpFormatter:
        return argparse.RawDescriptionHelpFormatter(prog, width=width - 2)
    return formatter


# `--help`'s closing lines: the subcommands, which argparse does not see (`_subcommand`).
SUBCOMMANDS_HELP = """subcommands:
  mettle explain [CODE]  what a diagnostic code (E0123) means; no CODE lists every code
  mettle check FILE...   frontend and GPU verifiers only: no code generation, no output
  mettle fmt FILE...     rewrite files in the canonical style (--check, --diff, - for stdin)
  mettle test FILE       build and run the file's @test functions (--filter=SUBSTR)
  mettle imports FILE... the modules each file imports, as JSON (for build tools)
  mettle version         print the version (also --version)
  mettle help            print this help

Without --emit-ptx, --emit-spirv or --build, FILE compiles as host code to an object file
(--emit-obj). Exit status: 0 success, 1 compile error, 2 usage error, 70 internal error."""


def build_parser():
    """The whole command line (argparse.ArgumentParser); cli_args.fast_parse reads the
    common lines without it."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # argparse would print usage and exit(2) itself
            raise _UsageError(message)

    p = _Parser(prog="mettle", description="The Mettle compiler.", add_help=True,
                formatter_class=_formatter_class(argparse), epilog=SUBCOMMANDS_HELP)
    p.add_argument("file", nargs="?", help="the .mettle entry file")
    p.add_argument("-i", dest="input", help="the entry file (alternative spelling)")
    p.add_argument("-o", dest="output", help="output path (default: from the input name)")
    emit = p.add_mutually_exclusive_group()
    emit.add_argument("--emit-ptx", dest="emit", action="store_const", const="ptx",
                      help="compile the file's kernels to PTX text (x.ptx)")
    emit.add_argument("--emit-spirv", dest="emit", action="store_const", const="spirv",
                      help="compile the file's kernels to a SPIR-V binary (x.spv)")
    emit.add_argument("--emit-obj", dest="emit", action="store_const", const="obj",
                      help="compile host code to an object file (x.o; the default)")
    emit.add_argument("--build", dest="emit", action="store_const", const="exe",
                      help="compile and link a host program with `fn main` into an "
                           "executable (x, or x.exe)")
    p.add_argument("-O", dest="optimize", action="store_true", help="optimize")
    p.add_argument("-r", "--release", action="store_true", help="-O without run-time checks")
    p.add_argument("--gpu-arch", help="gb10 | portable | sm_NN | sm_NNa | compute_NN")
    p.add_argument("--target", choices=tuple(HOST_TARGETS), default=None,
                   help="host machine for --emit-obj/--build (default: this machine's)")
    p.add_argument("--ptx-version", help="PTX ISA version M.m (default: the profile's)")
    p.add_argument("--gpu-tensor-tuple-budget", type=int, default=0, metavar="N",
                   help="registers per lane a tensor region may keep resident (0: the "
                        "architecture's default)")
    p.add_argument("--gpu-wmma-staging", choices=("on", "off"), default="on",
                   help="stage resident WMMA K-loop operands through shared memory "
                   "(default on)")
    p.add_argument("--gpu-tile-mma", choices=("on", "off"), default="on",
                   help="tile tensor_matmul on warp tensor cores where the profile has them "
                   "(default on; off: the exact replay)")
    p.add_argument("--gpu-tile-wgmma", choices=("on", "off"), default="on",
                   help="register-resident tile matmuls on wgmma (A from registers) where "
                   "the profile has it, sm_90a (default on; off: mma.sync)")
    p.add_argument("--gpu-tile-wgmma-a", choices=("registers", "shared"),
                   default="shared",
                   help="on wgmma, where a matmul's A tile is a variable only tile_load "
                   "assigns: keep it in workgroup memory, read through a descriptor "
                   "(default), or in registers")
    p.add_argument("--gpu-tile-rescale-skip", choices=("on", "off"), default="on",
                   help="register tiles: a tile scaled by a row vector skips the multiply "
                   "in subgroups whose factors are all exactly 1 (default on)")
    p.add_argument("--gpu-tile-copy-wait", choices=("load", "matmul"), default="load",
                   help="shared tiles: a tile_load's write-after-read barrier waits for "
                   "every copy in flight (load, default), or only for readers, each matmul "
                   "waiting for its own copies (matmul)")
    p.add_argument("--gpu-checks", action="store_true", help="emit gpu_assert traps")
    p.add_argument("--fp-contract", choices=("on", "off"), default="on",
                   help="GPU float multiply-add contraction (default on; off: every f32/f64 "
                   "add/sub/mul separately rounded)")
    p.add_argument("--const", dest="consts", action="append", default=[],
                   metavar="NAME=VALUE", help="replace the value of a top-level const "
                   "(an integer, or a tile format f16|bf16|f32) before compiling (repeatable)")
    p.add_argument("--print-target", action="store_true",
                   help="print the resolved target and its capabilities as JSON, then exit")
    p.add_argument("--dump-ir", action="store_true", help="print the IR to stdout (--dump-ir=after:PASS|all: between -O "
                        "passes)")
    p.add_argument("--dump-spirv", action="store_true",
                   help="with --emit-spirv: also print the module's disassembly to stdout")
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                   help="also search DIR for imported modules (repeatable)")
    p.add_argument("--stdlib", help="standard library root")
    p.add_argument("--error-format", choices=("text", "json"), default="text",
                   help="diagnostics as text (default) or as one JSON object on stderr")
    p.add_argument("--link-arg", action="append", default=[], metavar="ARG",
                   help="pass a link argument: -lNAME, -LDIR, -rpath DIR (repeatable)")
    p.add_argument("-l", dest="libs", action="append", default=[], metavar="LIB",
                   help="link against a shared library, e.g. -l m (repeatable)")
    p.add_argument("--verify", "--verify-each", dest="verify", action="store_true",
                   help="verify the IR (SSA, dominance, types) after every pass")
    p.add_argument("--dump-ir-after", action="append", default=[], metavar="PASS",
                   help=argparse.SUPPRESS)          # spelled --dump-ir=after:PASS|all
    p.add_argument("--explain", action="store_true",
                   help="print each optimisation decision (fn: line N: pass: text)")
    p.add_argument("--profile", action="store_true", help="print per-phase timings")
    p.add_argument("--ml-opt", action="store_true", help="(refused with GPU output)")
    p.add_argument("--emit-signature", metavar="PATH",
                   help="with --emit-ptx/--emit-spirv: also write the kernels' typed "
                   "parameters as JSON (what `mettle.load` checks launches against)")
    return p


def _options(ns):
    from .driver import Options
    if not 0 <= ns.gpu_tensor_tuple_budget <= 4096:
        raise _UsageError("--gpu-tensor-tuple-budget must be in 0..4096")
    emit = ns.emit or "obj"
    if (ns.dump_ir or ns.dump_ir_after or ns.explain) and ns.emit is None and \
            ns.output is None:
        emit = "ir"
    if ns.dump_spirv and emit != "spirv":
        raise _UsageError("--dump-spirv needs --emit-spirv")
    if ns.emit_signature and emit not in ("ptx", "spirv"):
        raise _UsageError("--emit-signature needs --emit-ptx or --emit-spirv")
    if ns.ml_opt and emit in ("ptx", "spirv"):
        raise _UsageError("--ml-opt is refused with GPU output (--emit-ptx/--emit-spirv)")
    consts = []
    for item in ns.consts:
        name, eq, value = item.partition("=")
        if not eq or not name.isidentifier() or not value:
            raise _UsageError(f"--const {item}: expected NAME=VALUE")
        consts.append((name, value))
    if ns.dump_ir_after:
        from .opt.manager import pass_names
        for name in ns.dump_ir_after:
            if name != "all" and name not in pass_names():
                raise _UsageError(f"--dump-ir=after:{name}: no such pass (passes: "
                                  f"{', '.join(pass_names())}, or all)")
    return Options(emit=emit, output=ns.output,
                   optimize=ns.optimize or bool(ns.dump_ir_after), release=ns.release,
                   gpu_arch=ns.gpu_arch, ptx_version=ns.ptx_version,
                   gpu_checks=ns.gpu_checks, tensor_tuple_budget=ns.gpu_tensor_tuple_budget,
                   wmma_staging=ns.gpu_wmma_staging == "on",
                   tile_mma=ns.gpu_tile_mma == "on",
                   tile_wgmma=ns.gpu_tile_wgmma == "on",
                   tile_wgmma_a=ns.gpu_tile_wgmma_a,
                   tile_rescale_skip=ns.gpu_tile_rescale_skip == "on",
                   tile_copy_wait=ns.gpu_tile_copy_wait,
                   fp_contract=ns.fp_contract == "on",
                   include_dirs=list(ns.include), stdlib_dir=ns.stdlib,
                   link_args=list(ns.link_arg), libraries=list(ns.libs),
                   dump_ir=ns.dump_ir, dump_spirv=ns.dump_spirv, verify_each=ns.verify,
                   host_target=HOST_TARGETS[ns.target or native_target()],
                   profile=ns.profile, dump_ir_after=tuple(ns.dump_ir_after),
                   explain=ns.explain, consts=tuple(consts))


def _spell_dump_after(argv: list[str]) -> list[str]:
    """`--dump-ir=after:PASS` (or `after:all`) -> the hidden `--dump-ir-after PASS`; plain
    `--dump-ir` keeps meaning "print the final IR to stdout"."""
    out = []
    for a in argv:
        if a.startswith("--dump-ir="):
            value = a[len("--dump-ir="):]
            if not value.startswith("after:") or not value[len("after:"):]:
                raise _UsageError(f"{a}: expected --dump-ir=after:PASS or --dump-ir=after:all")
            out += ["--dump-ir-after", value[len("after:"):]]
        else:
            out.append(a)
    return out


# Diagnostics about a flag's value point at that flag on the command line.
_FLAG_OF = {"E0501": ("--gpu-arch",), "E0502": ("--ptx-version",),
            "E0503": ("--ptx-version", "--gpu-arch"), "E0603": ("-l", "--link-arg"),
            "E0600": ("--link-arg",)}
COMMAND_LINE = "<command line>"


def _locate_flags(diags: list[Diagnostic], argv: list[str]) -> list[Diagnostic]:
    """Give an unlocated flag diagnostic a span into `mettle ARGS` (file <command line>)."""
    out = []
    for d in diags:
        flags = _FLAG_OF.get(d.code, ()) if d.span is None else ()
        hit = next((i for f in flags for i, a in enumerate(argv)
                    if a == f or a.startswith(f + "=") or (len(f) == 2 and a.startswith(f))),
                   None)
        if hit is not None:
            col = len(" ".join(["mettle", *argv[:hit]])) + 2
            length = len(argv[hit]) + (len(argv[hit + 1]) + 1 if argv[hit] in flags and
                                       hit + 1 < len(argv) else 0)
            d = Diagnostic(d.code, d.message, Span(COMMAND_LINE, 1, col, length),
                           d.severity, d.help, d.notes)
        out.append(d)
    return out


def _report(diags: list[Diagnostic], fmt: str, argv: list[str] | None = None,
            summary: bool = True) -> None:
    """Print `diags`; with `argv`, flag diagnostics first point into the command line."""
    if not diags:
        return
    if argv is not None:
        diags = _locate_flags(diags, argv)
    if fmt == "json":
        print(render_json(diags), file=sys.stderr)
        return
    sources = SourceMap()
    if argv is not None:
        sources.add(COMMAND_LINE, " ".join(["mettle", *argv]))
    for d in diags:
        if d.span is not None and d.span.file not in sources.files:
            try:
                with open(d.span.file, encoding="utf-8", errors="replace") as f:
                    sources.add(d.span.file, f.read())
            except OSError:
                pass
    for d in diags:
        print(render_text(d, sources), file=sys.stderr)
    errors = sum(1 for d in diags if d.severity == "error")
    if errors and summary:
        print(f"error: could not compile due to {errors} previous "
              f"error{'s' if errors != 1 else ''}", file=sys.stderr)


def _subcommand(argv: list[str]) -> int | None:
    if argv[:1] in (["version"], ["--version"]):
        print(f"mettle {VERSION}")
        return 0
    if argv[:1] == ["explain"]:
        return _explain(argv[1:])
    if argv[:1] == ["check"]:
        return _check(argv[1:])
    if argv[:1] == ["imports"]:
        return _imports(argv[1:])
    if argv[:1] == ["test"]:
        return _test(argv[1:])
    if argv[:1] == ["help"]:
        build_parser().print_help()
        return 0
    if argv[:1] == ["fmt"]:         # `mettle fmt --help` describes it
        from .fmt.command import main as fmt_main
        return fmt_main(argv[1:])
    return None


def _tool_parser(prog: str, description: str):
    """A subcommand's parser: FILE..., -I, --stdlib, --target, --error-format."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):
            raise _UsageError(message)

    p = _Parser(prog=prog, description=description,
                formatter_class=_formatter_class(argparse))
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    p.add_argument("--stdlib", help="standard library root")
    p.add_argument("--target", choices=tuple(HOST_TARGETS), default=None,
                   help="host machine whose OS picks std/x.<os> and `import ... if <os>`")
    p.add_argument("--error-format", choices=("text", "json"), default="text")
    return p


def _check(args: list[str]) -> int:
    """`mettle check FILE...`: the frontend and the GPU verifiers, no code generation and
    no output file (exit 1 on any error; with --deny-warnings also on any warning)."""
    from .driver import Options, check_file
    p = _tool_parser("mettle check", "Check Mettle files without generating code.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--gpu", dest="gpu", action="store_const", const=True,
                      help="check as GPU code (default: GPU if the file declares a kernel)")
    mode.add_argument("--host", dest="gpu", action="store_const", const=False,
                      help="check as host code")
    p.add_argument("--deny-warnings", action="store_true", help="warnings fail the check")
    fmt = _requested_format(args)
    try:
        ns = p.parse_args(args)
    except _UsageError as e:
        _report([Diagnostic("E0090", f"usage: {e}")], fmt)
        return 2
    opts = Options(include_dirs=list(ns.include), stdlib_dir=ns.stdlib,
                   host_target=HOST_TARGETS[ns.target or native_target()])
    status = 0
    for path in ns.files:
        try:
            warnings = check_file(path, opts, ns.gpu)
        except CompileError as e:
            _report(e.diagnostics, ns.error_format)
            status = 1
            continue
        except RecursionError:
            _report([Diagnostic("E0091", "program nests too deeply to compile")],
                    ns.error_format)
            status = 1
            continue
        _report(warnings, ns.error_format)
        if warnings and ns.deny_warnings:
            status = 1
    return status


def _imports(args: list[str]) -> int:
    """`mettle imports FILE...`: each file's imports and the paths the compiler would try
    for them (per OS), as JSON lines on stdout; build tools infer dependencies from it."""
    import json
    from .frontend.import_scan import scan_report
    p = _tool_parser("mettle imports", "List the modules Mettle files import (JSON).")
    try:
        ns = p.parse_args(args)
    except _UsageError as e:
        _report([Diagnostic("E0090", f"usage: {e}")], "text")
        return 2
    std_root = ns.stdlib if ns.stdlib is not None else "std"
    for path in ns.files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            _report([Diagnostic("E0102", f"cannot read '{path}': {e.strerror}")], "text")
            return 1
        print(json.dumps(scan_report(path, text, ns.include, std_root), sort_keys=True))
    return 0


def _test(argv: list[str]) -> int:
    """`mettle test FILE [--filter=SUBSTR] [flags]`: build the @test runner natively and run
    each test in its own process (test_report.py has the report format)."""
    import tempfile
    from . import test_report as tr
    from .driver import compile_file
    from .frontend.testing import ASSERT_FAILED_STATUS, CHECK_FAILED_STATUS
    fmt = _requested_format(argv)
    filt = next((a.split("=", 1)[1] for a in argv if a.startswith("--filter=")), "")
    argv = [a for a in argv if not a.startswith("--filter=")]
    try:
        ns = build_parser().parse_args(argv)
        source = ns.input or ns.file
        if not source:
            raise _UsageError("mettle test FILE: no input file")
        opts = _options(ns)
    except _UsageError as e:
        _report([Diagnostic("E0090", f"usage: {e}")], fmt)
        return 2
    if opts.host_target != HOST_TARGETS[native_target()]:
        _report([Diagnostic("E0090", "usage: mettle test runs tests natively; --target must "
                            "be this machine's")], fmt)
        return 2
    opts.emit, opts.test_mode = "exe", True
    try:
        result = compile_file(source, opts)
    except CompileError as e:
        _report(e.diagnostics, fmt)
        return 1
    except Exception as e:  # a compiler bug: say so plainly, never a traceback
        _report([Diagnostic("E0900", f"internal compiler error: {type(e).__name__}: {e}",
                            help="please report this with the input file")], fmt)
        return EXIT_INTERNAL
    _report(result.warnings, fmt)
    plan = result.test_plan
    chosen = [(i, n) for i, n in enumerate(plan.tests) if filt in n]
    print(f"\nrunning {len(chosen)} test{'' if len(chosen) == 1 else 's'} (native build)")
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "mettle-tests")
        with open(exe, "wb") as f:
            f.write(result.data)
        os.chmod(exe, 0o755)
        for i, name in chosen:
            outcome, detail, own, assertion, trap = tr.run_one(exe, i, ASSERT_FAILED_STATUS,
                                                               CHECK_FAILED_STATUS)
            if own:
                sys.stdout.write(own.decode("utf-8", "replace") + "\n")
            print(f"test {name} ... {outcome}" + (f" ({detail})" if detail else ""),
                  flush=True)
            if assertion is not None:
                _report([tr.assertion_diag(plan, assertion)], fmt, summary=False)
            if trap is not None:
                print(trap, file=sys.stderr, flush=True)
            passed, failed = (passed + 1, failed) if outcome == "ok" else (passed, failed + 1)
    print("\n" + tr.summary(passed, failed, source))
    if not chosen:
        print("note: no @test functions found" + (f" matching '{filt}'" if filt else "") +
              "\n  declare one as: @test fn test_name() -> int64 { assert(1 + 1 == 2); "
              "return 0; }")
    return 1 if failed else 0


def _exit_now(status: int) -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:         # `mettle ... | head`: the reader left, nothing to say
        pass
    os._exit(status)


def _explain(args: list[str]) -> int:
    """`mettle explain CODE`: what a diagnostic code means; no CODE lists every code."""
    from .diagnostic_codes import CODES, explain
    text = "".join(f"{code}  {title}\n" for code, (title, _) in CODES.items()) if not args \
        else explain(args[0]) if len(args) == 1 else None
    if text is None:
        what = f"unknown diagnostic code `{args[0]}`" if len(args) == 1 else "one CODE"
        print(render_text(Diagnostic("E0090", f"usage: mettle explain CODE: {what}",
                                     help="`mettle explain` lists every code")),
              file=sys.stderr)
        return 2
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:         # `mettle explain | head`
        sys.stdout = None
    return 0


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        # The process entry (the `mettle` script, `python -m`): no cyclic garbage collection
        # (the compile pauses it anyway; the imports before it made ~3% of a run's work
        # collections), and exit without interpreter teardown, which (freeing ~140 modules
        # and the compile's objects) cost ~25 ms of a ~170 ms run. In-process callers pass
        # argv and get the status back.
        gc.disable()
        _exit_now(main(sys.argv[1:]))
    argv = list(argv)
    sub = _subcommand(argv)
    if sub is not None:
        return sub
    fmt = _requested_format(argv)
    try:
        argv = _spell_dump_after(argv)
        ns = fast_parse(argv) or build_parser().parse_args(argv)
        if ns.print_target:
            return _print_target(ns, fmt, argv)
        source = ns.input or ns.file
        if not source:
            raise _UsageError("no input file")
        opts = _options(ns)
        return _compile(source, opts, ns.error_format, argv, ns.emit_signature)
    except _UsageError as e:
        _report([Diagnostic("E0090", f"usage: {e}")], fmt)
        return 2
    except KeyboardInterrupt:
        return 130


def _requested_format(argv: list[str]) -> str:
    """The diagnostics format the arguments ask for, read before they are parsed (a usage
    error must be reported in it too): `--error-format=json` or `--error-format json`."""
    for i, a in enumerate(argv):
        if a == "--error-format=json" or (a == "--error-format" and argv[i + 1:i + 2] == ["json"]):
            return "json"
    return "text"


def _print_target(ns, fmt: str, argv: list[str] = ()) -> int:
    """`--print-target`: the target the other flags select (`--gpu-arch` alone means PTX),
    resolved, as one JSON object on stdout; build rules and benchmarks read this instead of
    parsing `.target` out of PTX."""
    import json
    from .targets import for_options
    from types import SimpleNamespace
    emit = ns.emit or ("ptx" if ns.gpu_arch or ns.ptx_version else "obj")
    opts = SimpleNamespace(emit=emit, gpu_arch=ns.gpu_arch, ptx_version=ns.ptx_version,
                           host_target=HOST_TARGETS[ns.target or native_target()])
    try:
        resolved = for_options(opts).resolve(opts)
    except CompileError as e:
        _report(e.diagnostics, fmt, list(argv))
        return 1
    print(json.dumps(resolved.as_json(), sort_keys=True))
    return 0


def _compile(source: str, opts, fmt: str, argv: list[str] = (),
             signature_path: str | None = None) -> int:
    from .driver import compile_file, default_output, write_atomic
    try:
        result = compile_file(source, opts)
    except CompileError as e:
        _report(e.diagnostics, fmt, list(argv))
        return 1
    except RecursionError:
        _report([Diagnostic("E0091", "program nests too deeply to compile")], fmt)
        return 1
    except Exception as e:  # a compiler bug: say so plainly, never a traceback
        _report([Diagnostic("E0900", f"internal compiler error: {type(e).__name__}: {e}",
                            help="please report this with the input file")], fmt)
        return EXIT_INTERNAL
    _report(result.warnings, fmt)
    if result.ir_text is not None:
        sys.stdout.write(result.ir_text)
    if result.explain is not None:
        sys.stdout.write(result.explain)
    if opts.dump_spirv and result.data is not None:
        # By module name, as the driver loads the backend: importing the CLI does not make
        # a program (or a test) depend on the SPIR-V backend's sources.
        import importlib
        disasm = importlib.import_module("toolchain.compiler.targets.spirv.disasm")
        sys.stdout.write(disasm.disassemble(result.data))
    if result.data is not None:
        out = opts.output or default_output(source, opts.emit)
        try:
            write_atomic(out, result.data, executable=opts.emit == "exe")
        except OSError as e:
            _report([Diagnostic("E0092", f"cannot write {out}: {e.strerror}")], fmt)
            return 1
    if signature_path and result.signature is not None:
        from .signature import dumps
        try:
            write_atomic(signature_path, dumps(result.signature).encode())
        except OSError as e:
            _report([Diagnostic("E0092", f"cannot write {signature_path}: {e.strerror}")],
                    fmt)
            return 1
    if opts.profile:
        for phase, secs in result.timings.items():
            print(f"{phase:>22}: {secs * 1000:8.2f} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
