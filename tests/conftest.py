"""Suite-wide fixtures: the pinned ptxas assembler.

The `ptxas` fixture yields a callable `assemble(ptx_text, arch)` bound to the wheel's
ptxas. It skips (with the reason) only when neither the wheel nor `$METTLE_PTXAS` is
available; under Pants the wheel is always a dependency of the tests, so it never skips there.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support import ptxas as ptxas_support


@pytest.fixture(scope="session")
def ptxas_path() -> str:
    path = ptxas_support.find_ptxas()
    if path is None:
        pytest.skip(f"ptxas unavailable: {ptxas_support.WHEEL} is not installed and "
                    "METTLE_PTXAS is unset")
    return path


@pytest.fixture(scope="session")
def ptxas(ptxas_path: str) -> Callable[[str, str], None]:
    def assemble(ptx_text: str, arch: str) -> None:
        ptxas_support.assemble(ptx_text, arch, ptxas=ptxas_path)
    return assemble


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Pants runs each test file in its own session. A file whose tests all skip at module
    # level (no GPU, optional tool missing) then ends in "no tests collected" (exit 5),
    # which Pants reports as a failure; a skip is not a failure. A file that collects
    # nothing without skipping still fails.
    if exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped"):
        session.exitstatus = pytest.ExitCode.OK
