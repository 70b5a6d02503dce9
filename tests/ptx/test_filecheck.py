"""The FileCheck helper itself: each directive accepts what it should and rejects the rest."""
import pytest

from tests.support.filecheck import FileCheckError, filecheck

TEXT = "alpha one\nbeta  two\ngamma three\ndelta 42\n"


def test_check_in_order_and_regex():
    filecheck(TEXT, "CHECK: alpha\nCHECK: gamma\nCHECK: delta {{[0-9]+}}")
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "CHECK: gamma\nCHECK: alpha")


def test_check_next_and_same():
    filecheck(TEXT, "CHECK: beta\nCHECK-SAME: two\nCHECK-NEXT: gamma")
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "CHECK: alpha\nCHECK-NEXT: gamma")
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "CHECK: beta\nCHECK-SAME: three")


def test_check_not_between_matches_and_at_end():
    filecheck(TEXT, "CHECK: alpha\nCHECK-NOT: delta\nCHECK: gamma")
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "CHECK: alpha\nCHECK-NOT: beta\nCHECK: gamma")
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "CHECK: gamma\nCHECK-NOT: 42")


def test_label_and_whitespace_runs():
    filecheck(TEXT, "CHECK-LABEL: beta two\nCHECK: delta")
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "CHECK-LABEL: nothing")


def test_script_without_directives_is_an_error():
    with pytest.raises(FileCheckError):
        filecheck(TEXT, "just words")


REGS = "ld.param.u64 %rd7, [p];\nadd.s32 %r3, %r2, 1;\nst.global.u32 [%rd7], %r3;\n"


def test_captures_bind_and_later_uses_must_repeat_the_text():
    filecheck(REGS, "CHECK: ld.param.u64 [[P:%rd[0-9]+]], [p];\n"
                    "CHECK: add.s32 [[X:%r[0-9]+]], %r2, 1;\n"
                    "CHECK-NEXT: st.global.u32 [ [[P]] ], [[X]];".replace("[ [[P]] ]",
                                                                         "[[[P]]]"))
    with pytest.raises(FileCheckError):
        filecheck(REGS, "CHECK: add.s32 [[X:%r[0-9]+]], [[X]], 1;")      # %r3 vs %r2
    with pytest.raises(FileCheckError):
        filecheck(REGS, "CHECK: ld.param.u64 [[P:%rd[0-9]+]], [p];\n"
                        "CHECK: add.s32 [[P]], %r2, 1;")


def test_a_use_within_one_pattern_is_a_back_reference():
    filecheck("mov.u32 %r4, %r4;\n", "CHECK: mov.u32 [[R:%r[0-9]+]], [[R]];")
    with pytest.raises(FileCheckError):
        filecheck("mov.u32 %r4, %r5;\n", "CHECK: mov.u32 [[R:%r[0-9]+]], [[R]];")


def test_check_not_uses_variables_and_unbound_uses_fail():
    filecheck(REGS, "CHECK: add.s32 [[X:%r[0-9]+]]\nCHECK-NOT: ld.global.u32 [[X]]")
    with pytest.raises(FileCheckError):
        filecheck(REGS, "CHECK: add.s32 [[X:%r[0-9]+]]\nCHECK-NOT: st.global.u32 [%rd7], [[X]]")
    with pytest.raises(FileCheckError):
        filecheck(REGS, "CHECK: add.s32 [[Y]]")
    with pytest.raises(FileCheckError):
        filecheck(REGS, "CHECK-NOT: [[Z:%r9]]\nCHECK: add")
