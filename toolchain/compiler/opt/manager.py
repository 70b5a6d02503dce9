"""The optimizer pipeline: the only place that sets pass order (STYLE.md §2).

Each pass is one module with `run(fn, analyses) -> bool` (True iff the IR changed), listed
in PASSES with the analyses it requires (built before it runs) and the ones it
invalidates when it changes something. The manager owns the analyses cache, verification
after every changing pass (`--verify-each`), and `--dump-ir=after:PASS|all` (the function
printed to stderr under a `; after PASS: @fn` header). GPU `-O` runs over kernel-reachable
functions only (gpu.md "Building"); host `-O` over every defined function.

The pipeline starts with mem2reg (locals -> SSA) and ends with out-of-SSA (phis -> locals),
so the backends consume the same local.get/local.set IR they always did. Adding a pass is
one file plus one `Pass(...)` row, placed in PIPELINE.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, TextIO

from ..ir import Module, device_program, verify_function
from ..ir.printer import format_function
from . import (constfold, copyprop, dce, gvn, licm, mem2reg, out_of_ssa, simplify_cfg)
from .analyses import Analyses, TargetInfo


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable
    requires: tuple[str, ...] = ()
    invalidates: tuple[str, ...] | str = "all"


PASSES = {p.name: p for p in (
    Pass("mem2reg", mem2reg.run, ("domtree",), ("uses",)),
    Pass("simplify-cfg", simplify_cfg.run, (), "all"),
    Pass("constfold", constfold.run, ("uses",), "all"),
    Pass("copyprop", copyprop.run, ("uses",), ()),
    Pass("gvn", gvn.run, ("domtree",), ("uses",)),
    Pass("licm", licm.run, ("loops",), "all"),
    Pass("dce", dce.run, (), ("uses",)),
    Pass("out-of-ssa", out_of_ssa.run, (), ("uses",)),
)}

PIPELINE: tuple[str, ...] = (
    "mem2reg", "simplify-cfg", "constfold", "copyprop", "gvn", "licm", "dce",
    "simplify-cfg", "out-of-ssa",
)


@dataclass
class OptOptions:
    verify_each: bool = False
    dump_after: frozenset[str] = frozenset()       # pass names, or {"all"}
    dump_stream: TextIO | None = None              # default: sys.stderr
    pipeline: tuple[str, ...] | None = None        # tests run single passes
    extra: dict = field(default_factory=dict)


def optimize(module: Module, *, gpu: bool, target_info=None, options: OptOptions | None = None,
             verify_each: bool = False) -> bool:
    """Run the pipeline over `module` in place; True iff anything changed."""
    opts = options or OptOptions(verify_each=verify_each)
    target = TargetInfo.from_any(target_info)
    functions = device_program(module).functions if gpu else \
        [f for f in module.functions.values() if not f.is_extern]
    changed = False
    for fn in functions:
        changed |= run_pipeline(fn, opts.pipeline or PIPELINE,
                                Analyses(fn, module, gpu, target), opts)
    return changed


def run_pipeline(fn, names, analyses: Analyses, opts: OptOptions) -> bool:
    changed = False
    for name in names:
        p = PASSES[name]
        for r in p.requires:
            analyses.get(r)
        if p.run(fn, analyses):
            changed = True
            analyses.invalidate(p.invalidates)
            if opts.verify_each:
                _verify(fn, name)
        if opts.dump_after and ({name, "all"} & set(opts.dump_after)):
            out = opts.dump_stream or sys.stderr
            out.write(f"; after {name}: @{fn.name}\n{format_function(fn)}\n")
    return changed


def _verify(fn, name: str) -> None:
    from ..diagnostics import CompileError, Diagnostic
    try:
        verify_function(fn, ssa=True)
    except CompileError as e:
        d = e.diagnostics[0]
        raise CompileError(Diagnostic(d.code, f"{d.message} (after pass {name})", d.span)) \
            from None


def pass_names() -> tuple[str, ...]:
    return tuple(PASSES)
