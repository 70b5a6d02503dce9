"""A checked Linux host program's stack-overflow message (docs/reference/runtime-checks.md).

Unbounded recursion ends at the stack's guard page with SIGSEGV, which used to kill a checked
program with no message at all. Before `main`'s own code, a checked executable now runs
`.rt.stack_guard`, which

- records the range a stack overflow faults in: from the stack pointer there down by the
  stack's size limit (`getrlimit(RLIMIT_STACK)`, capped at 64 GiB when unlimited) and the
  kernel's 1 MiB guard gap below it;
- gives the thread an alternate signal stack (64 KiB of .bss: the overflowed stack has no
  room left for a handler), and
- installs `.rt.stack_overflow` for SIGSEGV and SIGBUS (SA_SIGINFO | SA_ONSTACK |
  SA_RESETHAND).

The handler reads the fault address (`siginfo_t.si_addr`, offset 16 on both Linux targets).
Inside the range it writes one line to file descriptor 2 and calls `_exit` with the checks'
status (the C library's `exit` could find stdio mid-call on the dead stack; only
async-signal-safe calls run here). Any other fault returns: SA_RESETHAND has restored the
default action, so the faulting instruction runs again and the signal kills the program as
it would have without the handler.

glibc's `struct sigaction` is the same on x86-64 and AArch64 (handler at 0, a 128-byte mask,
flags at 136, the restorer at 144: 152 bytes), and so is `stack_t` (pointer, int flags,
size at 16). Windows builds have none of this: the system ends an overflowing program with
status 0xC00000FD itself.
"""
from __future__ import annotations

from .builder import Builder
from .checks import runtime_extern, write_fn
from .module import Const, Function, Instr, Module
from .types import I32, I64, U8, U64, VOID, ArrayType, ptr

MESSAGE = b"stack overflow: the call stack passed its limit (unbounded recursion?)\n"
ALT_STACK = 64 * 1024
GUARD_GAP = 1 << 20                    # Linux's stack_guard_gap: 256 pages
UNLIMITED_CAP = 1 << 36
SIGBUS, SIGSEGV, RLIMIT_STACK = 7, 11, 3
SA_FLAGS = 0x4 | 0x08000000 | 0x80000000          # SA_SIGINFO | SA_ONSTACK | SA_RESETHAND
SIGACTION_BYTES, SA_FLAGS_AT = 152, 136


def install_stack_guard(module: Module, exit_code: int) -> bool:
    """Call the guard's installer first thing in `main`; False when there is no `main`."""
    main = module.functions.get("main")
    if main is None or main.is_extern or not main.blocks or ".rt.stack_guard" in \
            module.functions:
        return False
    b = Builder(module)
    u8p = ptr(U8)
    lo = b.global_var(".rt.stack_lo", U64)
    hi = b.global_var(".rt.stack_hi", U64)
    handler = _handler(b, lo, hi, exit_code)
    alt = b.global_var(".rt.alt_stack", ArrayType(U8, ALT_STACK))
    ss = b.global_var(".rt.alt_stack_t", ArrayType(U8, 24),
                      [(0, u8p, alt), (16, U64, ALT_STACK)])
    sa = b.global_var(".rt.sigaction", ArrayType(U8, SIGACTION_BYTES),
                      [(0, handler.type, handler), (SA_FLAGS_AT, I32, _i32(SA_FLAGS))])
    limit = b.global_var(".rt.stack_rlimit", ArrayType(U64, 2))
    getrlimit = runtime_extern(b, ".rt.getrlimit", [("resource", I32), ("rlim", ptr(U64))],
                               I32, "getrlimit")
    sigaltstack = runtime_extern(b, ".rt.sigaltstack", [("ss", u8p), ("old", u8p)], I32,
                                 "sigaltstack")
    sigaction = runtime_extern(b, ".rt.sigaction_fn", [("sig", I32), ("act", u8p),
                                                       ("old", u8p)], I32, "sigaction")

    fn = b.function(".rt.stack_guard", [], VOID)
    b.position_at_end(b.append_block(fn, "entry"))
    here = b.ptrtoint(b.alloca(U64, "here"), U64)
    b.call(getrlimit, [Const(I32, RLIMIT_STACK), b.elemptr(limit)])
    size = b.load(b.elemptr(limit))
    size = b.select(b.cmp("gt", size, Const(U64, UNLIMITED_CAP)), Const(U64, UNLIMITED_CAP),
                    size)
    span = b.add(size, Const(U64, GUARD_GAP))
    bottom = b.select(b.cmp("gt", span, here), Const(U64, 0), b.sub(here, span))
    b.store(lo, bottom)
    b.store(hi, here)
    null = b.inttoptr(Const(U64, 0), u8p)
    b.call(sigaltstack, [b.elemptr(ss), null])
    for sig in (SIGSEGV, SIGBUS):
        b.call(sigaction, [Const(I32, sig), b.elemptr(sa), null])
    b.ret()
    b.block = None

    entry = main.blocks[0]
    at = 0
    while at < len(entry.instrs) and entry.instrs[at].op in ("phi", "alloca"):
        at += 1
    entry.instrs.insert(at, Instr("call", VOID, [fn], {}, [], None, entry))
    return True


def _handler(b: Builder, lo, hi, exit_code: int) -> Function:
    write = write_fn(b)
    exit_ = runtime_extern(b, ".rt._exit", [("status", I32)], VOID, "_exit")
    msg = b.global_var(".rt.stack_msg", ArrayType(U8, len(MESSAGE) + 1), MESSAGE + b"\0",
                       constant=True)
    u8p = ptr(U8)
    fn = b.function(".rt.stack_overflow", [("sig", I32), ("info", u8p), ("context", u8p)],
                    VOID)
    entry, above, overflow, other = (b.append_block(fn, n) for n in
                                     ("entry", "above", "overflow", "other"))
    b.position_at_end(entry)
    si_addr = b.bitcast(b.byteadd(fn.params[1], Const(I64, 16)), ptr(U64))
    addr = b.load(si_addr)
    b.cbr(b.cmp("ge", addr, b.load(lo)), above, other)
    b.position_at_end(above)
    b.cbr(b.cmp("lt", addr, b.load(hi)), overflow, other)
    b.position_at_end(overflow)
    b.call(write, [Const(I32, 2), b.elemptr(msg), Const(I64, len(MESSAGE))])
    b.call(exit_, [Const(I32, exit_code)])
    b.unreachable()
    b.position_at_end(other)
    b.ret()
    b.block = None
    return fn


def _i32(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


__all__ = ["MESSAGE", "install_stack_guard"]
