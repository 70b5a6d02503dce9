"""Whole-program checker: declarations, types, globals, then per-function lowering.

Checking and lowering happen in one walk (each expression is type-checked as it is lowered,
see lower_expr.py); this module owns the program-level half: struct/enum/const/global/
function declarations, the device call graph pre-pass, and the error-code table below.

Diagnostic codes owned here (E0001/E0002/E0003 syntax are the parser's):
  E0003  `var` without a type (also reported by the parser)
  E0004  float -> int (or `%` on floats) needs an explicit cast
  E0010  statement not allowed here (break/continue outside a loop, bad label)
  E0011  missing return in a function with a return type
  E0012  aggregate literal outside a var/const initializer or assignment
  E0013  initializer must be a compile-time constant
  E0014  switch case value is not a compile-time integer / duplicate case
  E0015  switch over bool/enum is not exhaustive
  E0016  condition is a pointer (write `p != 0`) or not a number
  E0101  undefined name          E0102 unknown type            E0103 duplicate definition
  E0104  local used before it is assigned                      E0105 declared, never defined
  E0106  not assignable (const, parameter of a kernel view, rvalue)
  E0107  not callable            E0108 wrong argument count    E0109 `&` needs an lvalue
  E0110  a name another module keeps private (module scopes: set_modules)
  E0201  type mismatch           E0202 operator not defined for these types
  E0203  pointer <-> integer needs a cast (literal 0 excepted) E0204 invalid cast
  E0205  no such field           E0206 not indexable           E0207 dereference of non-pointer
  E0208  return value type / void function returns a value     E0212 named arguments
  E0301  kernel must return void E0302 bad kernel parameter    E0303 bad kernel block shape
  E0304  per = warp needs a block volume multiple of 32
  E0310  built-in only legal directly inside a GPU kernel
  E0311  kernel locals cannot be arrays; `&local` in device code (use `private var`)
  E0312  workgroup/private var misuse (initializer, rebinding, element type)
  E0313  pointer into workgroup/private memory stored where a global pointer is expected
  E0320  atomic misuse (pointer/value type, order, scope, space)
  E0321  async copy misuse (spaces, transaction, cache, pending count)
  E0322  subgroup built-in misuse (value not exactly uint32/float32, predicate not bool,
         lane or ballot word not an integer)
  E0323  barrier misuse          E0324 tensor_transfer_workgroup misuse
  E0325  GPU intrinsic misuse (argument count/types)
  E0340-E0343  tensor_mma/tensor_matmul/tensor_epilogue options, region controls, epilogue
         operands and operand storage types (lower_tensor.py)
  E0330  dispatch misuse (inside a kernel, arguments, controls, dimensions, stream twice)
  M0116  constant divide by zero
Warnings: W0001 unreachable statement.
docs/reference/language_rules.md lists every GPU built-in rule with the code that enforces it.
"""
from __future__ import annotations

from . import ast as A
from ...records import field_names
from ..diagnostics import DiagnosticBag, Span as _Span, closest, did_you_mean
from ..ir import Builder, IRTypeError, Module
from ..ir.types import (I64, U8, VOID, ArrayType, FnPtrType, PtrType, StructType, Type,
                        ptr)
from .consteval import NOT_CONST, ConstDivZero, const_value
from .scope import FnSym, ModuleAlias, Scope, TypeSym, VarSym
from .typesys import BUILTIN_TYPES, STRING, StructTable, describe
from .globals_init import lower_global
from .static_assert import check_static_assert
from .lower_later import AMBIGUOUS, type_key
from .tagged import TaggedEnum, complete_tagged
from .closures import closure_type
from .testing import TestPlan, check_test_signature, is_test

VOID_POINTER_HELP = ("an untyped pointer is `uint8*` (or `cstring`), which converts to and from "
                     "any other data pointer")

INDEX_NAMES = ("thread", "block", "block_dim", "grid_dim")


# C and Rust type names and the Mettle types they mean (unknown-type suggestions)
FOREIGN_TYPES = {
    "int": ["int32"], "long": ["int64"], "short": ["int16"], "char": ["uint8", "int8"],
    "unsigned": ["uint32"], "float": ["float32"], "double": ["float64"],
    "size_t": ["uint64"], "usize": ["uint64"], "isize": ["int64"],
    "i8": ["int8"], "i16": ["int16"], "i32": ["int32"], "i64": ["int64"],
    "u8": ["uint8"], "u16": ["uint16"], "u32": ["uint32"], "u64": ["uint64"],
    "f32": ["float32"], "f64": ["float64"], "str": ["string"], "String": ["string"],
    "boolean": ["bool"],
}


class ProgramLowerer:
    """Lowers a list of top-level items (all modules, already merged) to one IR module."""

    def __init__(self, name: str, gpu: bool, bag: DiagnosticBag,
                 generic_params: set[tuple[str, int]] | None = None, ssa: bool = False,
                 methods=(), checks: bool = False):
        self.gpu = gpu
        self.device_target: str | None = None   # the GPU output ("ptx", "spirv"), if known
        self.tile_mma = False       # the target has warp m16n8k16 f16/bf16 MMA (tile_mma.py)
        self.tile_wgmma = False     # ... and register tiles go on wgmma (tile_plan.py)
        self.tile_wgmma_a = "shared"        # ... with loaded A tiles in workgroup memory
        self.tile_rescale_skip = True       # ... row scaling skips factors of exactly 1
        self.tile_copy_wait = "load"        # ... copies waited at loads (or at matmuls)
        self.checks = checks and not gpu    # run-time checks of host code (lower_checks.py)
        self.ssa = ssa          # build scalar locals as SSA values (ir/ssa_builder.py)
        self.bag = bag
        self.module = Module(name)
        self.b = Builder(self.module)
        self.public = Scope()       # every module's public names (LANGUAGE §6)
        self.globals = self.public  # the scope of the module being declared or lowered
        self._scope_of: dict[int, Scope] = {}   # id(top-level decl) -> its module's scope
        self._hidden: dict[int, set[str]] = {}  # id(module scope) -> its non-exported names
        self._private_in: dict[str, str] = {}   # hidden name -> first module hiding it
        self._externs: dict[str, FnSym] = {}    # extern fns by IR name, shared by modules
        self.structs = StructTable()
        self.generic_params = set(generic_params or ())
        self.wanted_generic: set[tuple[str, int]] = set()
        self.device_fns: set[str] = set()
        self.module.structs["string"] = STRING
        self._facts: dict[int, tuple[object, BodyFacts]] = {}
        self.method_entries = list(methods)     # later.py: struct methods, impl functions
        self.method_names = {m.name for m in self.method_entries}
        self.generic_fns: frozenset[str] = frozenset()      # templates (a bare call: a help)
        self.methods: dict[object, dict[str, str]] = {}   # type_key -> name -> function
        self.tagged: dict[str, TaggedEnum] = {}             # IR struct name -> tagged enum
        self.variant_owners: dict[str, list[str]] = {}      # variant -> tagged enum IR names
        self.pending_lambdas: list = []                     # closures.py: lifted, to lower
        self.lambda_count: dict[str, int] = {}
        self.adapters: dict[object, object] = {}            # thin signature -> adapter fn
        self.test_mode = False                              # `mettle test` (testing.py)
        self.const_scope = None     # a local aggregate initializer's scope (local consts)
        self.test_plan = TestPlan()

    def body_facts(self, body) -> BodyFacts:
        """`scan_body(body)`, walked once per body however many passes ask."""
        hit = self._facts.get(id(body))
        if hit is None or hit[0] is not body:
            hit = self._facts[id(body)] = (body, scan_body(body))
        return hit[1]

    # ------------------------------------------------------------------ types
    def _type_near_miss(self, name: str) -> str | None:
        """`did you mean ...?` for an unknown type: Mettle's spelling of a C or Rust type
        name, else the closest visible type names."""
        close = FOREIGN_TYPES.get(name)
        if close is None:
            names = set(BUILTIN_TYPES)
            s = self.globals
            while s is not None:
                names.update(n for n, sym in s.names.items() if isinstance(sym, TypeSym))
                s = s.parent
            close = closest(name, names)
        return did_you_mean(close)

    def resolve_type(self, t: A.TypeExpr | None, placeholder_ok: bool = False) -> Type:
        if t is None:
            return VOID
        if isinstance(t, A.NamedType):
            if t.args:      # instances were renamed by generics.py: this one is not generic
                self.bag.error("E0018", f"`{t.name}` is not a generic type, so it takes no "
                               "type arguments", t.span)
                return I64
            if t.name in BUILTIN_TYPES:
                return BUILTIN_TYPES[t.name]
            sym = self.globals.lookup(t.name)
            if isinstance(sym, TypeSym):
                return sym.type
            code, msg = self.unknown(t.name, "type")
            help = None
            if code == "E0101":         # not private elsewhere: E0102, as before modules
                code, msg = "E0102", f"unknown type `{t.name}`"
                help = self._type_near_miss(t.name)
            self.bag.error(code, msg, t.span, help)
            return I64
        if isinstance(t, A.PointerType):
            elem = self.resolve_type(t.elem, True)
            if elem == VOID:                # C's void*: the language spells it uint8*
                self.bag.error("E0201", "`void*` is not a type: void is a return type only",
                               t.span, help=VOID_POINTER_HELP)
                elem = U8
            return ptr(elem)
        if isinstance(t, A.ArrayType):
            elem = self.value_type(t.elem, "an array element")
            if t.size <= 0:
                self.bag.error("E0102", "array size must be positive", t.span)
            return ArrayType(elem, max(t.size, 1))
        if isinstance(t, A.FnPtrType):
            params = tuple(self.value_type(p, "a parameter") for p in t.params)
            if t.is_closure:
                return closure_type(self.module, params, self.resolve_type(t.ret))
            return FnPtrType(params, self.resolve_type(t.ret))
        if isinstance(t, A.TileTypeExpr):
            self.bag.error("E0353", "a tile can only be the type of a `var` local in a "
                           "kernel body", t.span,
                           help="tiles are not parameters, results, globals, fields, "
                           "array elements or pointer targets")
            return I64
        self.bag.error("E0102", "unsupported type", t.span)
        return I64

    def enum_of_type(self, t: A.TypeExpr | None) -> str | None:
        if isinstance(t, A.NamedType):
            sym = self.globals.lookup(t.name)
            if isinstance(sym, TypeSym):
                return sym.enum
        return None

    def lookup_const(self, name: str):
        return (self.const_scope or self.globals).lookup(name)

    def value_type(self, t: A.TypeExpr, what: str) -> Type:
        """resolve_type where a value is stored: `void` is a return type only (LANGUAGE.md
        section 2), so a parameter, field, element, global or sizeof of it is an error."""
        r = self.resolve_type(t)
        if r == VOID:
            self.bag.error("E0201", f"{what} cannot have type void", t.span,
                           help="void is a return type only")
            return I64
        return r

    def sizeof_const(self, t: A.TypeExpr) -> int:
        """`sizeof(T)` for the constant folder (consteval.py asks its lookup's owner)."""
        return self.value_type(t, "`sizeof`'s operand").size

    def const_eval(self, e: A.Expr, lookup=None):
        try:
            return const_value(e, lookup or self.lookup_const)
        except ConstDivZero as z:
            self.bag.error("M0116", "constant divide by zero", z.span)
            return NOT_CONST

    def define(self, name: str, sym, span) -> None:
        if name in self.globals.names or (self._is_public(name) and
                                          name in self.public.names):
            self.bag.error("E0103", f"`{name}` is already defined", span)
            return
        self._bind(name, sym)

    # ------------------------------------------------------------------ module scopes
    def set_modules(self, modules) -> None:
        """Give each module (its items and hidden names, see modules.py) its own scope:
        its names, private ones included, shadow the program-wide public scope, so a
        module's private names neither leak to nor collide with other modules."""
        for path, items, hidden, aliases in modules:
            scope = Scope(self.public)
            for a in aliases:
                scope.names[a.name] = a
            self._hidden[id(scope)] = set(hidden)
            for n in hidden:
                self._private_in.setdefault(n, path)
            for d in items:
                self._scope_of[id(d)] = scope

    def enter(self, d) -> Scope:
        """Make `d`'s module current (for its declaration or body); returns the last."""
        prev, self.globals = self.globals, self._scope_of.get(id(d), self.public)
        return prev

    def _is_public(self, name: str) -> bool:
        return name not in self._hidden.get(id(self.globals), ())

    def _bind(self, name: str, sym) -> None:
        self.globals.names[name] = sym
        if self.globals is not self.public and self._is_public(name):
            self.public.names[name] = sym

    def unknown(self, name: str, what: str) -> tuple[str, str]:
        """(code, message) for a name the current module cannot see."""
        owner = self._private_in.get(name)
        if owner is not None and name in self._hidden.get(id(self.globals), ()):
            owner = None                  # its own private name: not the reason
        if owner is not None:
            return "E0110", (f"`{name}` is private to module '{owner}'; only its exported "
                             "names are visible to importers")
        return "E0101", f"undefined {what} `{name}`"

    def qualified(self, e: A.Member, lookup, fail) -> str | None:
        """For `alias.x` (an `import ... as alias`), the key under which the current
        module's scope now binds the public symbol `x` (so name lowering can use it);
        None when `e` is an ordinary member access. Errors raise `fail(code, msg, span)`."""
        if not isinstance(e.base, A.Name):
            return None
        alias = lookup(e.base.name)
        if not isinstance(alias, ModuleAlias):
            return None
        key = f"{alias.name}.{e.name}"
        if e.name in alias.public and e.name in self.public.names:
            self.globals.names.setdefault(key, self.public.names[e.name])
            return key
        if e.name in alias.hidden:
            raise fail("E0110", f"`{e.name}` is private to module '{alias.path}'; only "
                       "its exported names are visible to importers", e.span)
        raise fail("E0101", f"module '{alias.path}' (imported as `{alias.name}`) has no "
                   f"public name `{e.name}`", e.span)

    def _all_scopes(self) -> list[Scope]:
        seen, out = set(), [self.public]
        for sc in self._scope_of.values():
            if id(sc) not in seen:
                seen.add(id(sc))
                out.append(sc)
        return out

    # ------------------------------------------------------------------ declarations
    def declare_types(self, items: list[A.Stmt]) -> None:
        structs = [i for i in items if isinstance(i, A.StructDecl) or
                   isinstance(i, A.EnumDecl) and i.tagged]
        for s in structs:   # placeholders first, so fields may point at any struct
            self.enter(s)
            self.define(s.name, TypeSym(s.name, StructType(self._ir_name(s), ())), s.span)
        for e in (i for i in items if isinstance(i, A.EnumDecl) and not i.tagged):
            self.enter(e)
            self.define(e.name, TypeSym(e.name, I64, enum=e.name), e.span)
            self._declare_enum(e)
        for s in structs:
            self._complete_any(s, set())
        self.globals = self.public

    def _complete_any(self, d, active: set[str]) -> StructType:
        if isinstance(d, A.EnumDecl):
            return complete_tagged(self, d, active)
        return self._complete_struct(d, active)

    def declare_methods(self) -> None:
        """The method table: receiver type -> method name -> lifted function name."""
        saved, self.bag = self.bag, DiagnosticBag()    # the lifted functions report these
        try:
            for m in self.method_entries:
                key = type_key(self.resolve_type(m.for_type))
                table = self.methods.setdefault(key, {})
                # two impls (of different traits) defining m for one type: a call is
                # ambiguous (lower_later.py reports it); the lifted names stay callable
                table[m.name] = AMBIGUOUS if m.name in table else m.fn_name
        finally:
            self.bag = saved

    def _complete_struct(self, s: A.StructDecl, active: set[str]) -> StructType:
        name = self._ir_name(s)
        if name in self.structs.by_name:
            return self.structs.by_name[name]
        fields, seen = [], set()
        outer = self.enter(s)               # field types resolve in s's own module
        active.add(s.name)
        for f in s.fields:
            if f.name in seen:
                self.bag.error("E0103", f"duplicate field `{f.name}`", f.span)
            seen.add(f.name)
            if isinstance(f.type, A.NamedType) and f.type.name in active:
                self.bag.error("E0102", f"struct `{s.name}` contains itself", f.span)
                continue
            ft = self.value_type(f.type, "a field")
            if isinstance(ft, StructType) and not ft.fields:
                decl = self._struct_decls.get(ft.name)
                ft = self._complete_any(decl, active) if decl else ft
            fields.append((f.name, ft))
        active.discard(s.name)
        full = StructType(name, tuple(fields))
        self.structs.by_name[name] = full
        self._bind(s.name, TypeSym(s.name, full))
        self.module.structs[name] = full
        self.globals = outer
        return full

    def _declare_enum(self, e: A.EnumDecl) -> None:
        nxt = 0
        for v in e.variants:
            if v.value is not None:
                val = self.const_eval(v.value)
                if not isinstance(val, int) or isinstance(val, bool):
                    self.bag.error("E0013", "enum value must be a compile-time integer",
                                   v.value.span)
                    val = nxt
                nxt = val
            self.define(v.name, VarSym(v.name, I64, "const", nxt, v.span, enum=e.name,
                                       is_const=True), v.span)
            nxt += 1

    @staticmethod
    def _ir_name(d) -> str:
        return d.internal_name or d.name

    def declare_functions(self, items: list[A.Stmt]) -> list[A.FnDecl]:
        bodies = []
        for d in items:
            if not isinstance(d, A.FnDecl):
                continue
            self.enter(d)
            shared = self._externs.get(self._ir_name(d)) if d.is_extern else None
            if shared is not None and shared.decl.body is None and \
                    self.globals.names.get(d.name) in (None, shared):
                self._bind(d.name, shared)  # the same extern declared by another module
                continue
            prev = self.globals.names.get(d.name)
            if isinstance(prev, FnSym) and (prev.decl.body is None or d.body is None) \
                    and not d.is_kernel:
                if d.body is not None:
                    prev.decl = d
                    bodies.append(d)
                continue
            if prev is not None or self._ir_name(d) in self.module.functions:
                self.bag.error("E0103", f"`{d.name}` is already defined", d.span)
                continue
            sym = self._fn_sym(d)
            self.define(d.name, sym, d.span)
            if d.is_extern:
                self._externs[self._ir_name(d)] = sym
            if d.body is not None:
                bodies.append(d)
        self.globals = self.public
        reported = set()
        for scope in self._all_scopes():
            for name, sym in scope.names.items():
                if isinstance(sym, FnSym) and sym.decl.body is None and \
                        not sym.is_extern and id(sym) not in reported:
                    reported.add(id(sym))
                    self.bag.error("E0105", f"function `{name}` is declared but never "
                                   "defined", sym.decl.span)
        return bodies

    def _fn_sym(self, d: A.FnDecl) -> FnSym:
        params = [self.value_type(p.type, "a parameter") for p in d.params]
        ret = self.resolve_type(d.ret)
        sym = FnSym(d.name, d, params, ret, is_kernel=d.is_kernel, is_extern=d.is_extern,
                    ret_enum=self.enum_of_type(d.ret))
        name = self._ir_name(d)
        if d.is_kernel:
            params = self._kernel_signature(d, params, ret)
            sym.params = params
            sym.block_shape, sym.per_warp = d.kernel_block, d.kernel_per == "warp"
            if d.is_extern:
                self.b.kernel_decl(name, params, d.kernel_block, sym.per_warp)
                return sym
            sym.fn = self.b.function(name, [(p.name, t) for p, t in zip(d.params, params)],
                                     VOID, kind="kernel", linkage="export",
                                     block_shape=d.kernel_block, per_warp=sym.per_warp,
                                     span=d.span)
            return sym
        if self.gpu and name in self.device_fns:
            params = [self._device_param(d.name, i, t) for i, t in enumerate(params)]
            sym.params = params
        named = [(p.name, t) for p, t in zip(d.params, params)]
        if d.is_extern:
            sym.fn = self.b.extern_function(name, named, ret, link_name=d.link_name)
            sym.fn.span = d.span        # an unresolved link symbol points here
        else:
            linkage = "export" if (d.exported or d.name == "main") else "internal"
            sym.fn = self.b.function(name, named, ret, linkage=linkage, span=d.span,
                                     link_name=d.link_name)
        return sym

    def _device_param(self, fn: str, i: int, t: Type) -> Type:
        if isinstance(t, PtrType):
            return ptr(t.pointee, "generic" if (fn, i) in self.generic_params else "global")
        return t

    def _kernel_signature(self, d: A.FnDecl, params: list[Type], ret: Type) -> list[Type]:
        if ret != VOID:
            self.bag.error("E0301", f"kernel `{d.name}` must return void", d.ret.span)
        out = []
        for p, t in zip(d.params, params):
            ok = t.is_int or t.is_float or t.is_bool or (
                isinstance(t, PtrType) and (t.pointee.is_int or t.pointee.is_float))
            if not ok:
                self.bag.error("E0302", f"kernel parameter `{p.name}` has type "
                               f"{describe(t)}; kernels take scalars or pointers to scalars",
                               p.span)
            out.append(ptr(t.pointee, "global") if isinstance(t, PtrType) else t)
        self._check_block_shape(d)
        return out

    def _check_block_shape(self, d: A.FnDecl) -> None:
        shape = d.kernel_block
        if shape is None:
            if d.kernel_per == "warp":
                self.bag.error("E0304", "`per = warp` needs a declared block", d.span)
            return
        vol = shape[0] * shape[1] * shape[2]
        if any(not 1 <= x <= 1024 for x in shape) or vol > 1024:
            self.bag.error("E0303", f"kernel block {shape} is invalid: each dimension must "
                           "be 1..1024 and the volume at most 1024", d.span)
        elif d.kernel_per == "warp" and vol % 32:
            self.bag.error("E0304", f"`per = warp` needs a block volume that is a multiple "
                           f"of 32 (got {vol})", d.span)

    def declare_globals(self, items: list[A.Stmt]) -> None:
        for d in items:
            if isinstance(d, A.VarDecl):
                self.enter(d)
                lower_global(self, d)
        self.globals = self.public

    # ------------------------------------------------------------------ device call graph
    def compute_device_fns(self, items: list[A.Stmt]) -> None:
        """IR names of ordinary functions reachable from a kernel by direct calls (AST
        walk); a callee name resolves in the caller's module (private names first)."""
        decls = [d for d in items if isinstance(d, A.FnDecl) and d.body is not None]
        fns = {self._ir_name(d): d for d in decls}
        private = {(id(self._scope_of.get(id(d))), d.name): self._ir_name(d)
                   for d in decls if d.internal_name}
        work = [d for d in decls if d.is_kernel]
        seen: set[str] = set()
        while work:
            d = work.pop()
            scope = self._scope_of.get(id(d))
            where = id(scope)
            facts = self.body_facts(d.body)
            by_method = [m.fn_name for m in self.method_entries if m.name in facts.methods]
            via_alias = [f for a, f in facts.qualified if scope is not None and
                         isinstance(scope.names.get(a), ModuleAlias)]
            for name in (*facts.called, *by_method, *via_alias):
                callee = private.get((where, name), name)
                if callee in fns and callee not in seen and not fns[callee].is_kernel:
                    seen.add(callee)
                    work.append(fns[callee])
        self.device_fns = seen

    # ------------------------------------------------------------------ driver
    def run(self, items: list[A.Stmt]) -> Module:
        try:
            return self._run(items)
        except IRTypeError as e:   # a lowering bug: located report, never a traceback
            self.bag.error("E0900", f"internal error in declarations: {e}")
            return self.module

    def _run(self, items: list[A.Stmt]) -> Module:
        from .lower_fn import FunctionLowerer
        self._struct_decls = {d.internal_name or d.name: d for d in items
                              if isinstance(d, A.StructDecl) or
                              isinstance(d, A.EnumDecl) and d.tagged}
        self.declare_types(items)
        self.declare_methods()
        if self.gpu:
            self.compute_device_fns(items)
        bodies = self.declare_functions(items)
        self.declare_globals(items)
        for d in items:
            if isinstance(d, A.StaticAssert):
                check_static_assert(d, self.const_eval, self.bag.error)
        for d in bodies:
            self.enter(d)
            sym = self.globals.names.get(d.name)
            if isinstance(sym, FnSym) and sym.fn is not None and not sym.fn.blocks:
                FunctionLowerer(self, sym).lower()
                while self.pending_lambdas:
                    self.pending_lambdas.pop(0).lower()
        self.globals = self.public
        for d in bodies:
            if is_test(d):
                check_test_signature(d, self.bag)
                if not self.test_mode:      # type-checked, never part of a normal build
                    self.module.functions.pop(self._ir_name(d), None)
        return self.module


class BodyFacts:
    """What one walk of a function body finds: direct callees, plain-name assignment
    targets and names whose address is taken (`&x`)."""

    __slots__ = ("called", "qualified", "assigned", "addr_taken", "methods")

    def __init__(self) -> None:
        self.called: set[str] = set()
        self.qualified: set[tuple[str, str]] = set()    # `a.f(...)`: (a, f)
        self.methods: set[str] = set()      # `x.m(...)` calls: m (later.py's methods)
        self.assigned: set[str] = set()
        self.addr_taken: set[str] = set()


# Per AST class, the dataclass fields that may hold child nodes. `span` and `ty` never do
# (a Span is a tuple of str/ints; `ty` is a checker type), so skipping them keeps the walk
# to the syntax tree itself.
_NOT_CHILDREN = frozenset(("span", "ty"))
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_LEAF_TYPES = frozenset((str, int, bool, float, bytes))   # field values that hold no nodes


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = tuple(n for n in field_names(cls) if n not in _NOT_CHILDREN)
        _CHILD_FIELDS[cls] = names
    return names


def scan_body(body) -> BodyFacts:
    """One generic walk below `body` collecting its BodyFacts (see the class)."""
    facts = BodyFacts()
    stack = [body]
    push, pop = stack.append, stack.pop
    Node, Span, leaves = A.Node, _Span, _LEAF_TYPES
    while stack:
        n = pop()
        if not isinstance(n, Node):     # NamedArg / FieldInit / CaseRange tuples
            for x in n:
                if isinstance(x, (Node, tuple)) and type(x) is not Span:
                    push(x)
            continue
        if isinstance(n, A.Call):
            if isinstance(n.callee, A.Name):
                facts.called.add(n.callee.name)
            elif isinstance(n.callee, (A.Member, A.Arrow)):
                facts.methods.add(n.callee.name)
                if isinstance(n.callee, A.Member) and isinstance(n.callee.base, A.Name):
                    facts.qualified.add((n.callee.base.name, n.callee.name))
        elif isinstance(n, A.Assign):
            if isinstance(n.target, A.Name):
                facts.assigned.add(n.target.name)
        elif isinstance(n, A.AddrOf) and isinstance(n.operand, A.Name):
            facts.addr_taken.add(n.operand.name)
        for name in _CHILD_FIELDS.get(type(n)) or _child_fields(type(n)):
            v = getattr(n, name)
            if v is None or type(v) in leaves:
                continue
            if isinstance(v, Node):
                push(v)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, (Node, tuple)):
                        push(x)
            elif isinstance(v, tuple) and type(v) is not Span:
                push(v)
    return facts
