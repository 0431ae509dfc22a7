"""Print the mutation table after the run, when the mutation check ran."""

from __future__ import annotations

import pytest

from tests.mutation.harness import RESULTS_KEY, format_table
from tests.mutation.mutants import MUTANTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    results = config.stash.get(RESULTS_KEY, None)
    if results is None:
        return
    terminalreporter.section("mutation check")
    found = [results[m.name] for m in MUTANTS if m.name in results]
    terminalreporter.write_line(format_table(results["baseline"], found))
