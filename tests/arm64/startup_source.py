"""The AArch64 `_start` written with our AArch64 Assembler: the source of the bytes frozen
in toolchain/linker/startup_aarch64.py (the linker may not import the code generator);
test_arm64_link.py checks that the two agree. Mirrors glibc's sysdeps/aarch64/start.S."""
from toolchain.compiler.targets.arm64.assembler import Assembler
from toolchain.compiler.targets.arm64.operands import Imm, Lo12, Mem, Page, Sym
from toolchain.compiler.targets.arm64.regs import FP, LR, SP, X, XZR


def assemble_start() -> Assembler:
    a = Assembler()
    a.function("_start")
    a.emit("mov", FP, XZR)               # outermost frame marker for unwinders
    a.emit("mov", LR, XZR)
    a.emit("mov", X[5], X[0])            # rtld_fini from the dynamic loader
    a.emit("ldr", X[1], Mem(SP))         # argc
    a.emit("add", X[2], SP, Imm(8))      # argv
    a.emit("mov", X[6], SP)              # stack_end (sp is 16-byte aligned at entry)
    a.emit("adrp", X[0], Page("main"))
    a.emit("add", X[0], X[0], Lo12("main"))
    a.emit("mov", X[3], XZR)             # init = NULL (glibc >= 2.34 runs constructors)
    a.emit("mov", X[4], XZR)             # fini = NULL
    a.emit("bl", Sym("__libc_start_main"))
    a.emit("udf", Imm(0))                # __libc_start_main never returns
    a.end_symbol("_start")
    return a


if __name__ == "__main__":
    obj = assemble_start().finish()
    print(obj.sections[".text"].data.hex())
    print(obj.sections[".text"].relocs)
