"""The frontend seam: Mettle source -> (ir.Module, warnings).

    compile_to_ir(entry_path, *, include_dirs=(), stdlib_dir=None, gpu, source_text=None,
                  target_os="linux", ssa=False)

Raises CompileError with every error found (at most MAX_ERRORS); returns the module and the
warning diagnostics otherwise. `gpu=True` is an --emit-ptx/--emit-spirv compile (index
built-ins recognised); `gpu=False` a host compile. `target_os` ("linux" or "windows") picks
`std/x.<os>.mettle` variants and `import ... if <os>;` guards. `ssa=True` builds scalar
locals as SSA values and phis (ir/ssa_builder.py) instead of `local.get`/`local.set` slots:
the optimizer's input form, which GPU -O asks for (no mem2reg walk). `checks=True` (a host
build without --release) emits the run-time checks of lower_checks.py.

Device helper pointer parameters start as `global`; when a call site passes a pointer of
another space the module is lowered again with that parameter `generic` (a small fixpoint,
bounded by the number of pointer parameters). Only the last round's diagnostics count.

Scopes: every module's public names share one program-wide scope; each module also has its
own scope in front of it holding its private (non-exported) names, so those are invisible
to other modules (E0110) and never collide with another module's (docs/reference/modules.md).
"""
from __future__ import annotations

import os

from ..diagnostics import CompileError, Diagnostic, DiagnosticBag
from ..ir import Module, verify_module
from .checker import ProgramLowerer
from .embed import resolve_embeds
from .kernel_block import resolve_kernel_blocks
from .ast import FnDecl
from .later import expand_later_tier, place_in_modules
from .testing import TestPlan, runnable_tests, runner_items
from .parser import parse_source

_MAX_ROUNDS = 16


def _load_items(entry_path: str, include_dirs, stdlib_dir, source_text, target_os="linux"):
    if source_text is not None:
        mod = parse_source(source_text, str(entry_path))
        if not mod.imports:
            return [(str(entry_path), mod, {}, [])], []
    from .modules import load_program
    if source_text is not None:
        raise CompileError(Diagnostic("E0101", "imports need the program on disk "
                                      "(source_text given)", mod.imports[0].span))
    prog = load_program(entry_path, include_dirs, stdlib_dir, target_os=target_os)
    return [(m.path, m.ast, m.hidden, _aliases(m)) for m in prog.modules], list(prog.warnings)


def _aliases(mod) -> list:
    from .scope import ModuleAlias
    return [ModuleAlias(b.alias, b.module.shown, frozenset(b.module.public),
                        frozenset(b.module.hidden)) for b in mod.imports if b.alias]


def compile_to_ir(entry_path: str, *, include_dirs=(), stdlib_dir=None, gpu: bool,
                  source_text: str | None = None, target_os: str = "linux",
                  ssa: bool = False, checks: bool = False,
                  test_mode: bool = False, device_target: str | None = None,
                  consts=(), tile_mma: bool = False,
                  tile_wgmma: bool = False,
                  tile_wgmma_a: str = "shared", tile_rescale_skip: bool = True,
                  tile_copy_wait: str = "load") -> tuple[Module, list[Diagnostic]]:
    modules, warnings = _load_items(entry_path, include_dirs, stdlib_dir, source_text,
                                    target_os)
    units = [(path, [i for i in m.items if not _is_import(i)], hidden, aliases)
             for path, m, hidden, aliases in modules]
    items = [i for _, unit, _, _ in units for i in unit]
    asts = [m for _, m, _, _ in modules]
    plan = TestPlan()
    if test_mode:       # `mettle test`: keep the tests, replace `main` by the runner
        tests = runnable_tests(asts)
        plan.tests = [d.name for d in tests]
        items = [i for i in items if not (isinstance(i, FnDecl) and i.name == "main")] + \
            runner_items(tests)
    name = os.path.splitext(os.path.basename(str(entry_path)))[0] or "main"
    later_bag = DiagnosticBag()
    resolve_embeds(asts, include_dirs, stdlib_dir, later_bag)
    if consts:                      # --const NAME=VALUE: the entry module's top-level consts
        from .const_override import apply_consts
        apply_consts(modules[0][0], units[0][1], consts, later_bag)
    for _, unit, _, _ in units:     # kernel(block = NAME): after --const, before checking
        resolve_kernel_blocks(unit, later_bag)
    homes = {id(i): n for n, (_, unit, _, _) in enumerate(units) for i in unit}
    generic_fns = frozenset(i.name for i in items if isinstance(i, FnDecl) and i.type_params)
    items, methods, origin = expand_later_tier(items, later_bag, homes)
    units = place_in_modules(units, items, origin)     # made items join their source's module
    generic: set[tuple[str, int]] = set()
    for _ in range(_MAX_ROUNDS):
        bag = DiagnosticBag()
        bag.extend(later_bag.items)
        lowerer = ProgramLowerer(name, gpu, bag, generic, ssa, methods, checks)
        lowerer.set_modules(units)
        lowerer.device_target = device_target     # "ptx"/"spirv": which code refuses what
        lowerer.generic_fns = generic_fns
        lowerer.tile_mma = tile_mma                 # tile matmul on warp MMA (tile_mma.py)
        lowerer.tile_wgmma = tile_wgmma             # ... on wgmma (tile_plan.py)
        lowerer.tile_wgmma_a = tile_wgmma_a         # ... A tiles kept in workgroup memory
        lowerer.tile_rescale_skip = tile_rescale_skip   # ... row scaling skips factors of 1
        lowerer.tile_copy_wait = tile_copy_wait     # ... where shared tile copies are waited
        lowerer.test_mode, lowerer.test_plan = test_mode, TestPlan(plan.tests)
        try:
            module = lowerer.run(items)
        except CompileError:       # the bag hit MAX_ERRORS
            raise CompileError(bag.items) from None
        if lowerer.wanted_generic <= generic:
            break
        generic |= lowerer.wanted_generic
    bag.raise_if_errors()
    if test_mode:
        module.test_plan = lowerer.test_plan
    verify_module(module)
    return module, warnings + [d for d in bag.items if d.severity == "warning"]


def _is_import(item) -> bool:
    from . import ast as A
    return isinstance(item, A.Import)
