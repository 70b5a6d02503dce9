"""Expanding the host run-time checks (`check.*` ops) into plain IR, before a host backend.

The frontend emits one `check.*` instruction per checked access of a non-release host build
(docs/reference/runtime-checks.md); the optimizer sees it as one instruction that may end
the program (opt/check_hoist.py removes or hoists the redundant ones). Here, after -O, each
check becomes a compare and a branch to a cold block that calls the module's failure
routine, so the backends only ever see cmp/cbr/call/unreachable:

    <bad> = cmp ...; cbr <bad>, check.fail, <rest of the block>
    check.fail:  call @.rt.check_fail(fmt, a, b); unreachable

The failure routine formats `file:line:col: <what>` with snprintf into a stack buffer,
writes it to standard error (file descriptor 2) with one `write` and exits with
CHECK_EXIT_CODE (exit flushes the program's buffered standard output first; the `mettle
test` runner passes its own status, so a failed check is told apart from a test's exit(1)). The only thing
that differs between C runtimes is the name of POSIX `write` (the UCRT calls it `_write`),
which the caller passes in.
"""
from __future__ import annotations

from .builder import Builder
from .module import Block, Const, Function, Global, Instr, Module
from .ops import CHECK_OPS
from .types import I32, I64, U8, U64, VOID, ArrayType, ptr

CHECK_EXIT_CODE = 1          # the reference compiler's status for a failed check
FAIL_FN = ".rt.check_fail"
_BUF = 512

# The message after "file:line:col: " per check, as a printf format of (a, b).
MESSAGES = {
    "check.index": "index out of bounds: index %lld, length %lld",
    "check.range": "index out of bounds: index %lld, length %lld",
    "check.null": "null pointer dereference",
    ("check.null", "call"): "call through a null function value",
    ("check.nonzero", "div"): "division by zero",
    ("check.nonzero", "rem"): "remainder by zero",
}


def runtime_extern(b: Builder, name: str, params, ret, link: str) -> Function:
    """The C library function `link`, declared once in the module under `name`."""
    fn = b.module.functions.get(name)
    return fn if fn is not None else b.extern_function(name, params, ret, link)


def write_fn(b: Builder, write_name: str = "write") -> Function:
    """POSIX `write` (`_write` in the UCRT), shared by the failure routines that report on
    file descriptor 2 (this module's, and ir/stack_guard.py's)."""
    return runtime_extern(b, ".rt.check_write", [("fd", I32), ("buf", ptr(U8)), ("n", I64)],
                          I64, write_name)


def message_format(ins: Instr) -> str:
    what = ins.attrs.get("what", "div" if ins.op == "check.nonzero" else None)
    key = (ins.op, what) if what else ins.op
    return ins.attrs["site"].replace("%", "%%") + ": " + MESSAGES[key] + "\n"


def has_checks(module: Module) -> bool:
    return any(ins.op in CHECK_OPS for fn in module.functions.values()
               for b in fn.blocks for ins in b.instrs)


def strip_checks(module: Module) -> None:
    """Delete every check (a module built with checks, compiled as a release build)."""
    for fn in module.functions.values():
        for b in fn.blocks:
            b.instrs = [i for i in b.instrs if i.op not in CHECK_OPS]


def expand_checks(module: Module, write_name: str = "write",
                  exit_code: int = CHECK_EXIT_CODE) -> bool:
    """Replace every `check.*` of `module` by its test and failure branch; True iff any."""
    expander = None
    for fn in list(module.functions.values()):
        if fn.is_extern or not any(i.op in CHECK_OPS for b in fn.blocks for i in b.instrs):
            continue
        if expander is None:
            expander = _Expander(module, write_name, exit_code)
        expander.function(fn)
    return expander is not None


class _Expander:
    def __init__(self, module: Module, write_name: str, exit_code: int):
        self.module = module
        self.exit_code = exit_code
        self.b = Builder(module)
        self.formats: dict[str, Global] = {}
        self.fail_fn = self._failure_routine(write_name)

    def function(self, fn: Function) -> None:
        cold: list[Block] = []
        i = 0
        while i < len(fn.blocks):
            blk = fn.blocks[i]
            for k, ins in enumerate(blk.instrs):
                if ins.op in CHECK_OPS:
                    cold.append(self._split(fn, blk, k, ins, i))
                    break
            i += 1
        fn.blocks.extend(cold)            # failure paths last: the hot path falls through

    def _split(self, fn: Function, blk: Block, k: int, ins: Instr, index: int) -> Block:
        rest = Block(f"{blk.name}.ok", function=fn)
        for moved in blk.instrs[k + 1:]:
            rest.append(moved)
        blk.instrs = blk.instrs[:k]
        fn.blocks.insert(index + 1, rest)
        for succ in rest.successors:      # (host IR reaches here out of SSA; kept general)
            for phi in succ.phis:
                phi.targets = [rest if t is blk else t for t in phi.targets]
        fail = Block(f"{blk.name}.check", function=fn)
        b = self.b
        b.position_at_end(blk)
        bad, args = self._test(ins)
        b.cbr(bad, fail, rest, span=ins.span)
        b.position_at_end(fail)
        args = [self._finish_arg(a) for a in args]
        b.call(self.fail_fn, [b.elemptr(self._format(ins)), *args], span=ins.span)
        b.unreachable()
        b.block = None
        return fail

    def _test(self, ins: Instr):
        """(the bool that is true when the check fails, the message's two numbers)."""
        b = self.b
        ops = ins.operands
        zero64 = Const(I64, 0)
        if ins.op == "check.index":
            idx, n = ops[0], ops[1]
            bad = b.cmp("ge", b.convert(idx, U64), b.convert(n, U64))
            args = [idx, n]
        elif ins.op == "check.range":
            first, end, n = ops[0], ops[1], ops[2]
            bad = b.binop("or", b.cmp("lt", first, zero64), b.cmp("gt", end, n))
            args = [("range", first, n), n]
        elif ins.op == "check.null":
            bad = b.cmp("eq", ops[0], Const(ops[0].type, 0))
            args = [zero64, zero64]
        else:
            bad = b.cmp("eq", ops[0], Const(ops[0].type, 0))
            args = [zero64, zero64]
        if ins.attrs.get("guarded"):
            bad = b.binop("and", bad, ops[-1])
        return bad, args

    def _finish_arg(self, a):
        """A check.range's reported index, computed on the failure path only: the first
        index of first..end-1 that fails (first itself when negative or past the end)."""
        if isinstance(a, tuple):
            _, first, n = a
            b = self.b
            return b.select(b.cmp("lt", first, n), b.select(b.cmp("lt", first, Const(I64, 0)),
                                                            first, n), first)
        return a

    def _format(self, ins: Instr) -> Global:
        text = message_format(ins)
        g = self.formats.get(text)
        if g is None:
            data = text.encode()
            g = self.b.global_var(f".check.msg.{len(self.formats)}",
                                  ArrayType(U8, len(data) + 1), data + b"\0", constant=True)
            self.formats[text] = g
        return g

    def _failure_routine(self, write_name: str) -> Function:
        """fn(fmt, a, b): snprintf the message, write it to fd 2, exit(self.exit_code)."""
        b = self.b
        u8p = ptr(U8)
        snprintf = runtime_extern(b, ".rt.snprintf", [("buf", u8p), ("size", I64),
                                                      ("fmt", u8p), ("a", I64), ("b", I64)],
                                  I32, "snprintf")
        write = write_fn(b, write_name)
        exit_ = runtime_extern(b, ".rt.exit", [("status", I32)], VOID, "exit")
        fn = b.function(FAIL_FN, [("fmt", u8p), ("a", I64), ("b", I64)], VOID)
        b.position_at_end(b.append_block(fn, "entry"))
        buf = b.addrspacecast(b.elemptr(b.alloca(ArrayType(U8, _BUF), "msg")), "generic")
        fmt, x, y = fn.params
        n = b.call(snprintf, [buf, Const(I64, _BUF), fmt, x, y])
        limit, zero = Const(I32, _BUF - 1), Const(I32, 0)
        n = b.select(b.cmp("lt", n, limit), n, limit)       # snprintf's length if it fit
        n = b.select(b.cmp("lt", n, zero), zero, n)
        b.call(write, [Const(I32, 2), buf, b.convert(n, I64)])
        b.call(exit_, [Const(I32, self.exit_code)])
        b.unreachable()
        b.block = None
        return fn


__all__ = ["CHECK_EXIT_CODE", "MESSAGES", "expand_checks", "has_checks", "strip_checks",
           "message_format"]
