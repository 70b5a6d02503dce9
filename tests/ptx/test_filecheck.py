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
