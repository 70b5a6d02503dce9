"""The Windows x64 runtime object written with our x86-64 Assembler: the source of the bytes
frozen in toolchain/linker/pe_startup.py (the linker may not import the code generator);
test_pe_link.py checks that the two agree.

mainCRTStartup: ucrtbase.dll initialises itself when loaded; the entry sets the console app
type, has the CRT parse the command line (_configure_narrow_argv) and the environment, calls
main(*__p___argc(), *__p___argv()) and passes its result to exit(), which flushes stdio.
Entry rsp is 8 mod 16: `sub rsp, 40` aligns it and reserves the 32-byte shadow space plus a
slot for argc.

The printf family: ucrtbase.dll exports no printf (the UCRT headers inline it over
__stdio_common_vfprintf), so these weak definitions do what those inlines do, with the
default (C99-conforming) options 0: printf/fprintf spill their register arguments to the
home area, which makes the arguments after the format one contiguous va_list (Win64
variadic callers also pass floats in the GPRs), and call
__stdio_common_vfprintf(0, stream, format, NULL, va_list); vprintf/vfprintf pass their
va_list through; sprintf/snprintf use __stdio_common_vsprintf(options, buf, count, ...) with
count -1 (no limit) and option 1 (legacy termination, as the UCRT inline) for
sprintf, option 2 (standard snprintf result) for snprintf."""
from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.operands import Imm, Mem, Sym
from toolchain.compiler.targets.x86_64.regs import BY_NAME as R

RSP = R["rsp"]
SHIMS = ("printf", "fprintf", "vprintf", "vfprintf", "sprintf", "snprintf")


def _entry(a: Assembler) -> None:
    a.function("mainCRTStartup")
    a.emit("sub", RSP, Imm(40))
    a.emit("mov", R["ecx"], Imm(1))                      # _crt_console_app
    a.emit("call", Sym("_set_app_type"))
    a.emit("mov", R["ecx"], Imm(1))                      # _crt_argv_unexpanded_arguments
    a.emit("call", Sym("_configure_narrow_argv"))
    a.emit("call", Sym("_initialize_narrow_environment"))
    a.emit("call", Sym("__p___argc"))
    a.emit("mov", R["eax"], Mem(R["rax"]))
    a.emit("mov", Mem(RSP, disp=32), R["rax"])
    a.emit("call", Sym("__p___argv"))
    a.emit("mov", R["rdx"], Mem(R["rax"]))
    a.emit("mov", R["ecx"], Mem(RSP, disp=32, size=32))
    a.emit("call", Sym("main"))
    a.emit("mov", R["ecx"], R["eax"])
    a.emit("call", Sym("exit"))
    a.emit("int3")                                       # exit never returns
    a.end_symbol("mainCRTStartup")


def _spill(a: Assembler) -> None:
    for k, reg in enumerate(("rcx", "rdx", "r8", "r9")):
        a.emit("mov", Mem(RSP, disp=8 + 8 * k), R[reg])


def _vfprintf_call(a: Assembler, stream_from_stdout: bool, fmt_home: int | None,
                   va: str | None, va_home: int | None) -> None:
    """Inside a 56-byte frame: __stdio_common_vfprintf(0, stream, fmt, NULL, va_list).
    Homes are entry-relative offsets (entry rsp = frame rsp + 56)."""
    if stream_from_stdout:
        a.emit("mov", R["ecx"], Imm(1))
        a.emit("call", Sym("__acrt_iob_func"))
        a.emit("mov", R["rdx"], R["rax"])
    if va_home is not None:
        a.emit("lea", R["rax"], Mem(RSP, disp=56 + va_home))
    else:
        a.emit("mov", R["rax"], R[va])
    a.emit("mov", Mem(RSP, disp=32), R["rax"])
    if fmt_home is not None:
        a.emit("mov", R["r8"], Mem(RSP, disp=56 + fmt_home))
    a.emit("xor", R["r9d"], R["r9d"])
    a.emit("xor", R["ecx"], R["ecx"])
    a.emit("call", Sym("__stdio_common_vfprintf"))
    a.emit("add", RSP, Imm(56))
    a.emit("ret")


def _shims(a: Assembler) -> None:
    a.align(16)
    a.function("printf")                  # printf(fmt, ...)
    _spill(a)
    a.emit("sub", RSP, Imm(56))
    _vfprintf_call(a, True, 8, None, 16)
    a.end_symbol("printf")
    a.align(16)
    a.function("fprintf")                 # fprintf(stream, fmt, ...)
    _spill(a)
    a.emit("sub", RSP, Imm(56))
    a.emit("mov", R["rdx"], Mem(RSP, disp=56 + 8))
    _vfprintf_call(a, False, 16, None, 24)
    a.end_symbol("fprintf")
    a.align(16)
    a.function("vprintf")                 # vprintf(fmt, va)
    a.emit("sub", RSP, Imm(56))
    a.emit("mov", Mem(RSP, disp=40), R["rcx"])
    a.emit("mov", Mem(RSP, disp=48), R["rdx"])
    a.emit("mov", R["ecx"], Imm(1))
    a.emit("call", Sym("__acrt_iob_func"))
    a.emit("mov", R["rdx"], R["rax"])
    a.emit("mov", R["r8"], Mem(RSP, disp=40))
    a.emit("mov", R["r10"], Mem(RSP, disp=48))
    _vfprintf_call(a, False, None, "r10", None)
    a.end_symbol("vprintf")
    a.align(16)
    a.function("vfprintf")                # vfprintf(stream, fmt, va)
    a.emit("sub", RSP, Imm(56))
    a.emit("mov", R["r10"], R["r8"])
    a.emit("mov", R["r8"], R["rdx"])
    a.emit("mov", R["rdx"], R["rcx"])
    _vfprintf_call(a, False, None, "r10", None)
    a.end_symbol("vfprintf")
    for name, count_arg, options in (("sprintf", False, 1), ("snprintf", True, 2)):
        # __stdio_common_vsprintf(options, buf, count, fmt, locale, va_list)
        a.align(16)
        a.function(name)
        _spill(a)
        a.emit("sub", RSP, Imm(56))
        fmt_home, va_home = (24, 32) if count_arg else (16, 24)
        a.emit("lea", R["rax"], Mem(RSP, disp=56 + va_home))
        a.emit("mov", Mem(RSP, disp=40), R["rax"])           # 6th: va_list
        a.emit("mov", Mem(RSP, disp=32, size=64), Imm(0))    # 5th: locale NULL
        a.emit("mov", R["r9"], Mem(RSP, disp=56 + fmt_home))
        if count_arg:
            a.emit("mov", R["r8"], Mem(RSP, disp=56 + 16))
        else:
            a.emit("mov", R["r8"], Imm(-1))
        a.emit("mov", R["rdx"], Mem(RSP, disp=56 + 8))
        a.emit("mov", R["ecx"], Imm(options))
        a.emit("call", Sym("__stdio_common_vsprintf"))
        a.emit("add", RSP, Imm(56))
        a.emit("ret")
        a.end_symbol(name)


def assemble_start() -> Assembler:
    a = Assembler()
    _entry(a)
    _shims(a)
    return a


if __name__ == "__main__":
    obj = assemble_start().finish()
    print(obj.sections[".text"].data.hex())
    print(obj.sections[".text"].relocs)
    print([(s.name, s.value, s.size) for s in obj.symbols if s.section])
