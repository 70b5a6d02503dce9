"""Expression checking + lowering (LANGUAGE §2 conversions, §4 expressions).

Each expression is type-checked while it is lowered. Entry points:
- value(e, hint): lower `e`; `hint` is the context type that untyped literals adopt.
- rvalue(e, want): value(e) then the implicit conversion to `want` (coerce).
- cond(e): a bool for if/while/for/&&/||; comparisons feed cbr directly.
- addr(e): the address of an lvalue; place(e) picks address-or-value for bases.

Values: comparisons and `!` give int32 0/1; `&&`/`||` short-circuit through a bool Local.
Aggregates are loaded/stored whole; an aggregate that must be addressed is spilled to an
alloca. A string literal is a NUL-terminated constant; as `string` it is built in a
temporary {chars, length}; where a cstring is wanted only its bytes are passed (§12.3).
"""
from __future__ import annotations

import math
import struct

from . import ast as A
from ..ir import Global, Local
from ..ir.module import Const, Instr
from ..ir.types import BOOL, F64, I64, U8, ArrayType, FnPtrType, PtrType, StructType, Type, ptr
from .consteval import NOT_CONST, ConstDivZero, const_value
from .closures import closure_sig, data_pointer
from .globals_init import init_items, pointer_constant_error
from .scope import FnSym, TypeSym, VarSym
from .typesys import STRING, describe, literal_type, same_ignoring_space

_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem", "&": "and",
          "|": "or", "^": "xor", "<<": "shl", ">>": "shr"}
_AGG_LITS = (A.ArrayLit, A.ArrayRepeat, A.StructLit)
# Operators of a constant expression: computed exactly at compile time (consteval), never in
# the operand types, so `K > -1` with `const K: uint32` is 1 like `K - -1` is K + 1.
_FOLDABLE = frozenset(_ARITH) | frozenset(_CMP) | {"&&", "||"}


class ExprMixin:
    # ---------------------------------------------------------------- storage
    def store_to(self, st, v) -> None:
        if isinstance(st, Local):
            self.b.local_set(st, v)
        else:
            self.b.store(st, v)

    def load_slot(self, st):
        return self.b.local_get(st) if isinstance(st, Local) else self.b.load(st)

    def spill(self, v):
        tmp = self.b.alloca(v.type, "tmp")
        self.b.store(tmp, v)
        return tmp

    def _const_global(self, t: Type, items: list):
        self._tmp += 1
        name = f".init.{self.fn.name}.{self._tmp}"
        return self.b.global_var(name, t, items or None, constant=True)

    def store_init(self, p, t: Type, e: A.Expr) -> None:
        if isinstance(e, _AGG_LITS) or (isinstance(e, A.StrLit) and isinstance(t, ArrayType)):
            if not isinstance(t, (ArrayType, StructType)):
                raise self.fail("E0012", f"aggregate literal cannot initialize "
                                f"{describe(t)}", e.span)
            saved, self.ctx.const_scope = self.ctx.const_scope, self.scope
            try:                                # elements may name local integer consts
                items = init_items(self.ctx, t, e, 0)
            finally:
                self.ctx.const_scope = saved
            g = self._const_global(t, items)
            self.b.memcpy(p, g, t.size)
            return
        self.b.store(p, self.rvalue(e, t))

    def zero_fill(self, p, t: Type) -> None:
        """A local array or struct without initializer starts zeroed, on every target: host
        code copies from a zero constant; device code stores zero field by field (a SPIR-V
        kernel cannot read a constant global through a generic pointer)."""
        if not self.device:
            self.b.memcpy(p, self._const_global(t, []), t.size)
            return
        if isinstance(t, StructType):
            full = self.ctx.structs.full(t)
            if full is not t:
                p = self.b.bitcast(p, ptr(full, p.type.space))
            for i, (_, ft) in enumerate(full.fields):
                self.zero_fill(self.b.fieldptr(p, i), ft)
        elif isinstance(t, ArrayType):
            first = self.b.elemptr(p)
            for k in range(t.count):
                self.zero_fill(self.b.ptradd(first, self.b.const(I64, k)), t.elem)
        else:
            self.b.store(p, self.b.const(t, 0.0 if t.is_float else 0))

    # ---------------------------------------------------------------- constants
    def lookup(self, name: str):
        return self.scope.lookup(name)

    def sizeof_const(self, t: A.TypeExpr) -> int:
        return self.ctx.sizeof_const(t)

    def const_int(self, e: A.Expr):
        try:
            v = const_value(e, self.lookup)
        except ConstDivZero as z:
            self.error("M0116", "constant divide by zero", z.span)
            return None
        if isinstance(v, bool):
            return int(v)
        return v if isinstance(v, int) else None

    def untyped(self, e: A.Expr) -> bool:
        """An expression of literals/folded consts only, whose type comes from context."""
        # Tested on every expression lowered: the (disjoint) cases go most frequent first.
        if isinstance(e, A.Name):
            sym = self.scope.lookup(e.name)
            return isinstance(sym, VarSym) and sym.kind == "const" and \
                isinstance(sym.storage, (int, float)) and sym.enum is None
        if isinstance(e, A.Binary):       # comparisons and && || of constants fold too
            return e.op in _FOLDABLE and self.untyped(e.left) and self.untyped(e.right)
        if isinstance(e, (A.IntLit, A.FloatLit)):
            return True
        if isinstance(e, A.Unary) and e.op in "-+~!":
            return self.untyped(e.operand)
        return False

    def make_const(self, v, t: Type | None, span):
        if isinstance(t, (PtrType, FnPtrType)):
            why = pointer_constant_error(v, t)
            if why is not None:
                raise self.fail(*why, span)
            return self.b.const(t, 0)
        if t is not None and t.is_int:
            if isinstance(v, float):
                raise self.fail("E0004", f"float to {describe(t)} needs a cast", span)
            return self.b.const(t, int(v))
        if t is not None and (t.is_float or t.is_bool):
            return self.b.const(t, _round_to(t, float(v)) if t.is_float else bool(v))
        if isinstance(v, bool):
            return self.b.const(BOOL, v)
        if isinstance(v, float):
            return self.b.const(F64, v)
        return self.b.const(literal_type(v), v)

    def literal(self, e: A.Expr, hint: Type | None):
        try:
            v = const_value(e, self.lookup)
        except ConstDivZero as z:
            raise self.fail("M0116", "constant divide by zero", z.span)
        if v is NOT_CONST:           # e.g. `1.5 % 2`: lower it and let the operator judge
            return self.value(e, hint, untyped=False)
        scalar = hint is not None and (hint.is_int or hint.is_float or hint.is_bool or
                                       isinstance(hint, (PtrType, FnPtrType)))
        return self.make_const(v, hint if scalar else None, e.span)

    # ---------------------------------------------------------------- entry points
    def rvalue(self, e: A.Expr, want: Type | None, keep_space: bool = False):
        if isinstance(e, _AGG_LITS):
            raise self.fail("E0012", "aggregate literals are only allowed as a var/const "
                            "initializer or the right side of an assignment", e.span)
        # One `untyped` test serves both paths (it walks the whole operand tree, and value()
        # would repeat it): with want None, literal(e, None) is exactly what value() returns.
        # A literal takes a scalar `want` itself; coerce judges any other (a struct: E0201).
        if self.untyped(e):
            return self.coerce(self.literal(e, want), want, e.span, keep_space)
        return self.coerce(self.value(e, want, untyped=False), want, e.span, keep_space)

    def value(self, e: A.Expr, hint: Type | None, discard: bool = False,
              untyped: bool | None = None):
        """Lower `e`; `untyped=False` says the caller already knows `untyped(e)` is False."""
        if (untyped is None and self.untyped(e)) or isinstance(e, A.BoolLit):
            return self.literal(e, hint)
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise self.fail("E0012", "this expression is not allowed here", e.span)
        if isinstance(e, A.Call):
            return self.expr_Call(e, hint, discard)
        return method(e, hint)

    # ---------------------------------------------------------------- conversions
    def _decay(self, v):
        """An array/string loaded whole, re-addressed: drop the load if it is the last."""
        blk = self.b.block
        if isinstance(v, Instr) and v.op == "load":
            if blk.instrs and blk.instrs[-1] is v:
                blk.instrs.pop()
            return v.operands[0]
        return self.spill(v)

    def coerce(self, v, t: Type | None, span, keep_space: bool = False):
        s = v.type
        if t is None or s == t:
            return v
        if isinstance(s, ArrayType) and isinstance(t, PtrType):
            v = self.b.elemptr(self._decay(v))
            s = v.type
        elif s == STRING and isinstance(t, PtrType) and t.pointee == U8:
            v = self.b.load(self.b.fieldptr(self._decay(v), 0))
            s = v.type
        if isinstance(t, PtrType):
            if isinstance(s, FnPtrType) and closure_sig(t) is not None:
                return self.adapt_thin(v, t, span)      # thin value into an `Fn` slot
            return self._coerce_ptr(v, t, span, keep_space)
        if isinstance(t, FnPtrType):
            if isinstance(v, Const) and v.value == 0 and s.is_int and \
                    not self.b.from_variable(v):
                return self.b.const(t, 0)
            if closure_sig(s) is not None:
                raise self.fail("E0201", f"a capturing closure cannot be stored in the plain "
                                f"function-pointer type {describe(t)}", span,
                                help="declare the slot with a closure type `Fn(...) -> R`")
            raise self._mismatch(t, s, span)
        if t.is_int or t.is_float or t.is_bool:
            if isinstance(s, (PtrType, FnPtrType)):
                raise self.fail("E0203", f"pointer to {describe(t)} needs a cast", span)
            if s.is_float and not t.is_float:
                raise self.fail("E0004", f"{describe(s)} to {describe(t)} needs a cast",
                                span, help=f"write ({describe(t)})expr")
            return self.to_numeric(v, t, span)
        if same_ignoring_space(s, t):
            return v
        raise self._mismatch(t, s, span)

    def _mismatch(self, t, s, span):
        return self.fail("E0201", f"type mismatch: expected {describe(t)}, found "
                         f"{describe(s)}", span)

    def to_numeric(self, v, t: Type, span):
        s = v.type
        if not (s.is_int or s.is_float or s.is_bool):
            raise self._mismatch(t, s, span)
        if t.is_bool and not s.is_bool:
            return self.b.cmp("ne", v, self.b.const(s, 0))
        return self.b.convert(v, t)

    def _coerce_ptr(self, v, t: PtrType, span, keep_space: bool):
        s = v.type
        if not isinstance(s, PtrType):
            if s.is_int and isinstance(v, Const) and v.value == 0 and \
                    not self.b.from_variable(v):
                return self.b.const(t, 0)
            if s.is_int:
                raise self.fail("E0203", f"{describe(s)} to {describe(t)} needs a cast "
                                "(only literal 0 is a null pointer)", span)
            raise self._mismatch(t, s, span)
        if not same_ignoring_space(s.pointee, t.pointee):
            # uint8* is the untyped pointer (void*), of data pointers only
            if U8 not in (s.pointee, t.pointee) or not (data_pointer(s) and data_pointer(t)):
                raise self._mismatch(t, s, span)
        if s.pointee != t.pointee:
            v = self.b.bitcast(v, ptr(t.pointee, s.space))
        if s.space == t.space or keep_space:
            return v
        if t.space == "generic":
            return self.b.addrspacecast(v, "generic")
        raise self.fail("E0313", f"a pointer into {s.space} memory cannot be used where a "
                        f"{t.space} pointer is expected", span)

    # ---------------------------------------------------------------- names
    def check_init(self, sym: VarSym, span) -> None:
        if sym.needs_init and self.assigned is not None and \
                id(sym) not in self.assigned and not sym.reported_uninit:
            sym.reported_uninit = True
            self.error("E0104", f"`{sym.name}` may be used before it is assigned", span)

    def host_kernel_hint(self, name: str) -> str | None:
        """A kernel body lowered as host code (no --emit-ptx/--emit-spirv) meets `thread`
        and friends as plain, undefined names: say which flag was meant."""
        if self.in_kernel and not self.ctx.gpu and name in ("thread", "block", "block_dim",
                                                            "grid_dim"):
            return (f"`{name}` is a GPU built-in, but this file is being compiled as host "
                    "code: compile kernels with --emit-ptx or --emit-spirv")
        return None

    def expr_Name(self, e: A.Name, hint):
        sym = self.lookup(e.name)
        if sym is None:
            enum = self.variant_owner(e.name, hint, e.span)     # `Plus` (tagged enums)
            if enum is not None:
                return self.construct(enum, e.name, [], e.span)
            code, message = self.ctx.unknown(e.name, "name")
            help = self.host_kernel_hint(e.name) or self.near_miss(e.name)
            raise self.fail(code, message, e.span, help=help)
        if isinstance(sym, TypeSym):
            raise self.fail("E0201", f"type `{e.name}` used as a value", e.span)
        if isinstance(sym, FnSym):
            if sym.fn is None:
                raise self.fail("E0107", f"kernel `{e.name}` is only usable in `dispatch`",
                                e.span)
            return self.function_value(sym, e.span)
        if sym.kind == "const" and not isinstance(sym.storage, (Global, Instr)):
            return self.make_const(sym.storage, sym.type, e.span)
        if sym.kind in ("gpu", "param"):
            return sym.storage
        if sym.kind == "format":
            raise self.fail("E0355", f"format constant {e.name} used as a value", e.span,
                            help="a format constant names a tile format (tile<ELEM, R, C>)")
        if sym.kind == "tile":
            raise self.fail("E0353", f"tile `{e.name}` used as a scalar value", e.span,
                            help="tiles have no element access; use the tile operations")
        self.check_init(sym, e.span)
        return self.load_slot(sym.storage)

    def function_value(self, sym: FnSym, span):
        """A function used as a value (not called). Neither GPU target has function
        pointers: refused here, in the program as written, with the code the back end
        gives (so -O, which would delete an unused one first, cannot change the verdict)."""
        if not self.device:
            return sym.fn
        if self.ctx.device_target == "spirv":
            raise self.fail("E0510", f"function `{sym.name}` cannot be used as a value in "
                            "device code: OpenCL SPIR-V has no function pointers (no "
                            "indirect calls on this target)", span)
        raise self.fail("E0505", f"the address of function `{sym.name}` cannot be taken in "
                        "device code (PTX has no indirect calls here)", span)

    def place(self, e: A.Expr):
        """('addr', pointer-to-e) for lvalues held in memory, else ('val', value)."""
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            if isinstance(sym, VarSym) and isinstance(sym.storage, (Instr, Global)) and \
                    sym.kind in ("local", "global", "const"):
                self.check_init(sym, e.span)
                return "addr", sym.storage
            return "val", self.value(e, None)
        if isinstance(e, (A.Index, A.Arrow, A.Deref)) or \
                (isinstance(e, A.Member) and not self.is_index_builtin(e)):
            return "addr", self.addr(e)
        return "val", self.value(e, None)

    def addr(self, e: A.Expr):
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            if isinstance(sym, VarSym) and isinstance(sym.storage, (Instr, Global)) and \
                    sym.kind != "gpu":
                return sym.storage
            if sym is None:
                raise self.fail(*self.ctx.unknown(e.name, "name"), e.span,
                                self.near_miss(e.name))
            raise self.fail("E0109", f"`{e.name}` has no address here", e.span)
        if isinstance(e, A.Index):
            base, count = self.index_base(e.base)
            k = self.const_int(e.index)
            if isinstance(count, int) and k is not None and not 0 <= k < count:
                self.error("M0105", f"index {k} is out of bounds for an array of {count}",
                           e.index.span)
            index = self.index_value(e.index)
            self.check_access(base, count, index, k, e.span)
            return self.b.ptradd(base, index)
        if isinstance(e, (A.Member, A.Arrow)):
            sp = self.struct_ptr(e.base, isinstance(e, A.Arrow), e.span)
            st = sp.type.pointee
            if self.tagged_of(st) is not None:      # its {tag, payload} record is internal
                raise self.fail("E0205", f"{describe(st)} is a tagged enum and has no fields; "
                                "`match` reads its variants", e.span)
            try:
                i = st.field_index(e.name)
            except KeyError:
                raise self.fail("E0205", f"{describe(st)} has no field `{e.name}`", e.span)
            return self.b.fieldptr(sp, i)
        if isinstance(e, A.Deref):
            p = self.value(e.operand, None)
            if not data_pointer(p.type):
                raise self.fail("E0207", f"cannot dereference {describe(p.type)}", e.span)
            self.check_null(p, e.span)
            return p
        raise self.fail("E0109", "expression is not assignable / has no address", e.span)

    def index_value(self, e: A.Expr):
        v = self.rvalue(e, I64) if self.untyped(e) else self.value(e, I64)
        if not (v.type.is_int or v.type.is_bool):
            raise self.fail("E0206", f"index must be an integer, not {describe(v.type)}",
                            e.span)
        return self.b.convert(v, I64)

    def index_base(self, base: A.Expr):
        k, v = self.place(base)
        if k == "addr":
            pt = v.type.pointee
            if isinstance(pt, ArrayType):
                return self.b.elemptr(v), pt.count
            if isinstance(pt, PtrType) or pt == STRING:
                v = self.b.load(v)
            else:
                raise self.fail("E0206", f"{describe(pt)} cannot be indexed", base.span)
        if isinstance(v.type, ArrayType):
            return self.b.elemptr(self.spill(v)), v.type.count
        if v.type == STRING:        # (its length only for the run-time index check)
            s = self.spill(v)
            length = self.b.load(self.b.fieldptr(s, 1)) if self.checking else None
            return self.b.load(self.b.fieldptr(s, 0)), length
        if data_pointer(v.type):
            return v, None
        raise self.fail("E0206", f"{describe(v.type)} cannot be indexed", base.span)

    def struct_ptr(self, base: A.Expr, arrow: bool, span):
        if arrow:
            v = self.value(base, None)
            self.check_null(v, span)
        else:
            k, v = self.place(base)
            if k == "addr" and isinstance(v.type.pointee, PtrType):
                v = self.b.load(v)      # `.` on a pointer to a struct dereferences
                self.check_null(v, span)
            elif k == "val" and isinstance(v.type, StructType):
                v = self.spill(v)
            elif k == "val" and isinstance(v.type, PtrType):
                self.check_null(v, span)        # `.` on a pointer value dereferences too
        t = v.type
        if not (data_pointer(t) and isinstance(t.pointee, StructType)):
            what = "`->` needs a pointer to a struct" if arrow else "`.` needs a struct"
            raise self.fail("E0205", f"{what}, found {describe(t)}", span)
        full = self.ctx.structs.full(t.pointee)
        return v if full == t.pointee else self.b.bitcast(v, ptr(full, t.space))

    # ---------------------------------------------------------------- assignment
    def assign(self, target: A.Expr, value: A.Expr) -> None:
        sym = self.lookup(target.name) if isinstance(target, A.Name) else None
        if isinstance(target, A.Name):
            if sym is None:
                raise self.fail(*self.ctx.unknown(target.name, "name"), target.span,
                                self.near_miss(target.name))
            if not isinstance(sym, VarSym) or sym.is_const or sym.kind == "const":
                raise self.fail("E0106", f"cannot assign to `{target.name}`", target.span)
            if sym.kind == "gpu":
                raise self.fail("E0312", f"{sym.storage_class} var `{target.name}` cannot be"
                                " rebound (assign to its elements)", target.span)
            if sym.kind == "tile":
                self.tile_assign(sym, value, target.span)
                return
            if isinstance(sym.storage, Local):
                v = self.rvalue(value, sym.type)
                self.b.local_set(sym.storage, v)
                self._mark(sym)
                return
        p = self.addr(target)
        t = p.type.pointee
        if isinstance(value, _AGG_LITS):
            self.store_init(p, t, value)
        else:
            self.b.store(p, self.rvalue(value, t))
        if sym is not None:
            self._mark(sym)

    def _mark(self, sym: VarSym) -> None:
        if self.assigned is not None:
            self.assigned.add(id(sym))

    def enum_of(self, e: A.Expr):
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            return getattr(sym, "enum", None) if isinstance(sym, VarSym) else None
        if isinstance(e, A.Call) and isinstance(e.callee, A.Name):
            sym = self.lookup(e.callee.name)
            return sym.ret_enum if isinstance(sym, FnSym) else None
        return None


def _round_to(t: Type, v: float) -> float:
    """A float32 constant holds a float32 value (0.1 rounded, 2147483647 -> 2^31): the
    optimizer folds with the constant's value, the backends with its encoding, and the two
    must agree."""
    if t.bits != 32:
        return v
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:                   # past FLT_MAX: the IEEE rounding is infinity
        return math.copysign(math.inf, v)
