"""The `_start` routine written with our Assembler: the source of the bytes frozen in
toolchain/linker/startup.py (the linker may not import the code generator, see DESIGN.md
layers). `test_startup.py` checks that the two agree."""
from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.operands import Imm, Sym, rip
from toolchain.compiler.targets.x86_64.regs import BY_NAME as R


def assemble_start() -> Assembler:
    a = Assembler()
    a.function("_start")
    a.emit("xor", R["ebp"], R["ebp"])   # outermost frame marker for debuggers/unwinders
    a.emit("mov", R["r9"], R["rdx"])    # rtld_fini from the dynamic loader
    a.emit("pop", R["rsi"])             # argc
    a.emit("mov", R["rdx"], R["rsp"])   # argv
    a.emit("and", R["rsp"], Imm(-16))   # SysV: 16-byte aligned stack at the call
    a.emit("push", R["rax"])            # padding so the next push keeps the alignment
    a.emit("push", R["rsp"])            # stack_end
    a.emit("xor", R["r8d"], R["r8d"])   # fini = NULL
    a.emit("xor", R["ecx"], R["ecx"])   # init = NULL (glibc >= 2.34 runs constructors)
    a.emit("lea", R["rdi"], rip("main"))
    a.emit("call", Sym("__libc_start_main"))
    a.emit("hlt")                       # __libc_start_main never returns
    a.end_symbol("_start")
    return a


if __name__ == "__main__":
    obj = assemble_start().finish()
    print(obj.sections[".text"].data.hex())
    print(obj.sections[".text"].relocs)
