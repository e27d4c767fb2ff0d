"""One line at the very end of a test session: how many tests skipped. A skip is a proof that did not run
here; each skip's reason is in the short test summary above it (`-ra`, pyproject's addopts)."""

from __future__ import annotations

import pytest


def skipped_count(reporter: pytest.TerminalReporter) -> int:
    """What pytest's own last line counts as skipped (a whole file skipped at import counts once)."""
    return sum(1 for report in reporter.stats.get("skipped", []) if getattr(report, "count_towards_summary", True))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # after the terminal's summary line, which pytest writes as the session finishes; an xdist worker's
    # reports reach the controller's terminal, which counts them all
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):
        return
    count = skipped_count(reporter)
    reporter.write_line(f"skipped: {count}" + (" (each one's reason: the SKIPPED lines above)" if count else ""))
