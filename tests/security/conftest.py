"""`--run-slow` for the longer schemathesis budget (the `slow` marker is declared in
pyproject.toml). Run `pytest tests/security --run-slow`: pytest reads options only from the
conftest files it loads before parsing the command line (those of the paths given)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="run tests marked slow (schemathesis with a large budget)",
    )


@pytest.fixture(autouse=True)
def _skip_slow(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("slow") and not request.config.getoption(
        "--run-slow", default=False
    ):
        pytest.skip("slow: run with --run-slow")
