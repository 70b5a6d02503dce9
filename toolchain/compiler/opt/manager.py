"""The optimizer pipeline: the only place that sets pass order (STYLE.md §2).

Each pass is one module with `run(fn, analyses) -> bool` (True iff the IR changed), listed
in PASSES with the analyses it requires and the ones it invalidates when it changes
something. A pass asks for what it requires (`analyses.get`) when it first needs it, so one
that has nothing to do on a function builds nothing (compile time). The manager owns the
analyses cache, verification after every changing pass (`--verify-each`), and
`--dump-ir=after:PASS|all` (the function printed to stderr under a `; after PASS: @fn`
header). GPU `-O` runs over kernel-reachable functions only (gpu.md "Building"); host `-O`
over every defined function, one at a time. On the GPU the functions run in groups
(`_levels`: helpers by call depth, then the kernels), each group pass by pass: one pass
over every function of the group before the next pass (compile time), so dumps of one
pass come together.

The pipeline starts with mem2reg (locals -> SSA) and ends with out-of-SSA (phis -> locals),
so the backends consume the same local.get/local.set IR they always did. GPU -O gets SSA
from the frontend (mem2reg then finds no slot) and runs out-of-SSA once every function is
optimized, so inline copies SSA callees. Adding a pass is
one file plus one `Pass(...)` row, placed in PIPELINE.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

from ..ir import Module, verify_function
from ..ir.module import Function
from ..ir.printer import format_function
from . import (async_staging, check_hoist, constfold, copyprop, dce, gvn, if_convert, index_scale, inline,
               inline_recursive, iv_reduce, licm, load_combine, load_ahead, mem2reg, out_of_ssa,
               simplify_cfg, subgroup_width, tail_recursion, tensor_residency, unroll,
               unroll_jam, unroll_runtime)
from .analyses import Analyses, TargetInfo


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable
    requires: tuple[str, ...] = ()
    invalidates: tuple[str, ...] | str = "all"


PASSES = {p.name: p for p in (
    Pass("tail-recursion", tail_recursion.run, (), "all"),
    Pass("inline", inline.run, (), "all"),
    Pass("inline-recursive", inline_recursive.run, (), "all"),
    Pass("subgroup-width", subgroup_width.run, ("loops",), "all"),
    Pass("mem2reg", mem2reg.run, ("domtree",), ("uses",)),
    Pass("simplify-cfg", simplify_cfg.run, (), ("uses",)),    # sets cfg_changed
    Pass("constfold", constfold.run, (), ()),     # both keep a cached UseMap exact
    Pass("copyprop", copyprop.run, (), ()),       # (constfold builds one past 4 rewrites)
    Pass("gvn", gvn.run, ("domtree", "preds"), ("uses",)),
    Pass("if-convert", if_convert.run, ("preds",), "all"),
    Pass("check-hoist", check_hoist.run, ("domtree", "loops"), ("uses",)),  # cfg_changed
    Pass("licm", licm.run, ("loops",), ("uses",)),            # sets cfg_changed
    Pass("dce", dce.run, (), ("uses",)),
    Pass("unroll", unroll.run, ("loops",), "all"),
    Pass("unroll-jam", unroll_jam.run, ("loops",), "all"),
    Pass("async-staging", async_staging.run, (), ("uses",)),
    Pass("tensor-residency", tensor_residency.run, ("loops",), "all"),
    Pass("iv-reduce", iv_reduce.run, ("loops",), "all"),
    Pass("unroll-runtime", unroll_runtime.run, ("loops",), "all"),
    Pass("load-ahead", load_ahead.run, ("loops",), "all"),
    Pass("load-combine", load_combine.run, (), ("uses",)),
    Pass("index-scale", index_scale.run, ("domtree",), ("uses",)),
    Pass("out-of-ssa", out_of_ssa.run, (), ("uses",)),
)}

PIPELINE: tuple = (
    "tail-recursion", "inline", "inline-recursive", "mem2reg", "subgroup-width",
    "simplify-cfg", "constfold", "copyprop", "gvn",
    ("if-convert", ("simplify-cfg",)), "check-hoist", "licm", ("unroll-jam", ("simplify-cfg", "gvn")),
    ("unroll", ("simplify-cfg", "constfold", "gvn")),
    "async-staging", "tensor-residency", "iv-reduce",
    ("unroll-runtime", ("simplify-cfg",)), ("load-ahead", ("simplify-cfg",)), "load-combine",
    "index-scale", "dce", "simplify-cfg", "out-of-ssa",
)


@dataclass
class OptOptions:
    verify_each: bool = False
    dump_after: frozenset[str] = frozenset()       # pass names, or {"all"}
    dump_stream: TextIO | None = None              # default: sys.stderr
    pipeline: tuple[str, ...] | None = None        # tests run single passes
    extra: dict = field(default_factory=dict)
    timings: dict | None = None                    # --profile: "opt.PASS" -> seconds


def optimize(module: Module, *, gpu: bool, target_info=None, options: OptOptions | None = None,
             verify_each: bool = False) -> bool:
    """Run the pipeline over `module` in place; True iff anything changed."""
    opts = options or OptOptions(verify_each=verify_each)
    target = TargetInfo.from_any(target_info)
    shared: dict = {"calls": {}}           # module facts kept across functions (analyses.py)
    functions = _functions(module, gpu, shared["calls"])
    names = opts.pipeline or PIPELINE
    late = ()
    if gpu and names is PIPELINE:
        names, late = PIPELINE[:-1], PIPELINE[-1:]
    changed = False
    groups = _levels(functions, shared["calls"]) if gpu else [[fn] for fn in functions]
    for group in groups:
        changed |= _run_group(group, names, [Analyses(fn, module, gpu, target, shared)
                                             for fn in group], shared, opts)
    if late:
        # GPU: out-of-SSA once every function is optimized, so inline copies SSA bodies
        # (the frontend built them in SSA form: no slots for mem2reg to promote again).
        # Every defined function: one -O did not reach is still in the frontend's SSA form.
        for fn in module.functions.values():
            if not fn.is_extern:
                changed |= run_pipeline(fn, late, Analyses(fn, module, gpu, target), opts)
    return changed


# Source directives are honoured without -O too: `@unroll(n)` is the user's request, not
# an optimisation choice, so an unoptimised compile runs just enough to carry it out.
DIRECTIVE_PIPELINE: tuple = ("mem2reg", "unroll", "out-of-ssa")


def honour_directives(module: Module, *, gpu: bool, target_info=None,
                      options: OptOptions | None = None) -> bool:
    """Without -O: unroll the `@unroll(n)` loops of the functions that have them."""
    opts = options or OptOptions()
    target = TargetInfo.from_any(target_info)
    functions = _functions(module, gpu)
    changed = False
    for fn in functions:
        if any(ins.op == "cbr" and ins.attrs.get("unroll") for ins in fn.instructions()):
            changed |= run_pipeline(fn, DIRECTIVE_PIPELINE, Analyses(fn, module, gpu, target),
                                    opts)
    return changed


def _functions(module: Module, gpu: bool, calls: dict | None = None) -> list:
    """GPU: the kernels and the helpers they reach (callees first); host: every defined
    function. The device verifiers (device_program) run later, in the backend; a call graph
    walk is all the optimizer needs. GPU: `calls` gets each function's direct calls, in
    block order, as the walk finds them (inline reads them while a function is unchanged)."""
    if not gpu:
        return [f for f in module.functions.values() if not f.is_extern]
    order: list = []
    seen: set = set()

    def visit(fn) -> None:
        seen.add(fn)
        found = []
        for b in fn.blocks:                 # (plain loops: faster than fn.instructions())
            for ins in b.instrs:
                if ins.op == "call":
                    callee = ins.operands[0]
                    if isinstance(callee, Function):
                        found.append(ins)
                    if callee not in seen and not callee.is_extern and not callee.is_kernel:
                        visit(callee)
        if calls is not None:
            calls[fn] = found
        order.append(fn)
    for k in module.kernels():
        if k not in seen:
            visit(k)
    return [f for f in order if not f.is_kernel] + [f for f in order if f.is_kernel]


def _levels(functions: list, calls: dict) -> list[list]:
    """GPU: `functions` (callees first) in groups that run the pipeline together: the
    helpers by call depth (a helper's callees are all in earlier groups, so each is
    optimized before it is inlined), then the kernels, which nothing inlines."""
    level: dict = {}
    groups: list[list] = []
    kernels = []
    for fn in functions:
        if fn.is_kernel:
            kernels.append(fn)
            continue
        n = level[fn] = 1 + max((level.get(c.operands[0], -1) for c in calls.get(fn, ())),
                                default=-1)
        if n == len(groups):
            groups.append([])
        groups[n].append(fn)
    return [g for g in groups + [kernels] if g]


def _run_group(group: list, names, analyses: list, shared: dict, opts: OptOptions) -> bool:
    """Run `names` over the functions of `group` pass by pass: each entry over every
    function before the next entry (compile time: a pass's code and data stay hot in the
    processor's caches from one function to the next, measured ~13% less optimizer CPU
    than each function through the whole pipeline; the instructions run are the same).
    The functions of a group do not call each other, so the order changes no result. A
    function's facts in `shared` are dropped whenever it changes (they describe the
    function as it was), and once its group is done."""
    changed = False
    if len(group) == 1:
        changed = run_pipeline(group[0], names, analyses[0], opts)
    else:
        quiet = opts.timings is None and not opts.dump_after and not opts.verify_each
        for entry in names:
            name, cleanup = entry if entry.__class__ is tuple else (entry, None)
            p = PASSES[name]
            for fn, an in zip(group, analyses):
                if not quiet:
                    did = run_pipeline(fn, (entry,), an, opts)
                elif p.run(fn, an):     # _run_quietly's step, inline: calling it per
                    # function and entry measured 0.5M instructions more on typical200
                    did = True
                    an.after_pass(p.invalidates)
                    if cleanup:
                        _run_quietly(fn, cleanup, an)
                else:
                    did = False
                if did:
                    changed = True
                    for facts in shared.values():
                        facts.pop(fn, None)
    for fn in group:
        for facts in shared.values():
            facts.pop(fn, None)
    return changed


def run_pipeline(fn, names, analyses: Analyses, opts: OptOptions) -> bool:
    """Run `names` in order. An entry `(name, (cleanup, ...))` runs the cleanup passes only
    when `name` changed the function (compile time: a loop pass that did nothing needs no
    re-simplification)."""
    if opts.timings is None and not opts.dump_after and not opts.verify_each:
        return _run_quietly(fn, names, analyses)
    changed = False
    for entry in names:
        if isinstance(entry, tuple):
            name, cleanup = entry
            if run_pipeline(fn, (name,), analyses, opts):
                changed = True
                run_pipeline(fn, cleanup, analyses, opts)
            continue
        name = entry
        p = PASSES[name]
        t0 = time.perf_counter() if opts.timings is not None else 0.0
        did = p.run(fn, analyses)       # it asks for p.requires itself, when it needs them
        if opts.timings is not None:
            key = f"opt.{name}"
            opts.timings[key] = opts.timings.get(key, 0.0) + time.perf_counter() - t0
        if did:
            changed = True
            analyses.after_pass(p.invalidates)
            if opts.verify_each:
                _verify(fn, name)
        if opts.dump_after and ({name, "all"} & set(opts.dump_after)):
            out = opts.dump_stream or sys.stderr
            out.write(f"; after {name}: @{fn.name}\n{format_function(fn)}\n")
    return changed


def _run_quietly(fn, names, analyses: Analyses) -> bool:
    """run_pipeline without timing, dumps or verification: the usual -O compile, whose
    pipeline runs about 25 entries per function (compile time: no per-entry checks)."""
    changed = False
    for entry in names:
        if entry.__class__ is tuple:
            entry, cleanup = entry
        else:
            cleanup = None
        p = PASSES[entry]
        if p.run(fn, analyses):
            changed = True
            analyses.after_pass(p.invalidates)
            if cleanup:
                _run_quietly(fn, cleanup, analyses)
    return changed


def _verify(fn, name: str) -> None:
    from ..diagnostics import CompileError, Diagnostic
    try:
        verify_function(fn, ssa=True)
    except CompileError as e:
        d = e.diagnostics[0]
        raise CompileError(Diagnostic(d.code, f"{d.message} (after pass {name})", d.span)) \
            from None


def flat_pipeline(names=None) -> tuple[str, ...]:
    """PIPELINE with its conditional cleanups spelled out (all of them run), for tests."""
    out: list[str] = []
    for e in (PIPELINE if names is None else names):
        if isinstance(e, tuple):
            out.append(e[0])
            out.extend(flat_pipeline(e[1]))
        else:
            out.append(e)
    return tuple(out)


def pass_names() -> tuple[str, ...]:
    return tuple(PASSES)
