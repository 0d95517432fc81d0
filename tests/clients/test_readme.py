"""The README's Python and MCP examples run as written against the local service (the Agents
SDK one needs a model, so only its session part is run, in test_openai_agents.py)."""

from __future__ import annotations

import re

import pytest

from tests.clients.conftest import ROOT, LocalService, run_example

SECTION = "## From Python, an MCP client, or an OpenAI Agents SDK agent"


def _examples() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(SECTION) : text.index("\n## ", text.index(SECTION) + 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3
    return [b for b in blocks if "from agents import" not in b]


@pytest.mark.parametrize(
    ("example", "printed"),
    zip(_examples(), ["Always wants express shipping.", "Prefers window seats."], strict=True),
    ids=["python", "mcp"],
)
def test_the_readme_example_runs(
    example: str,
    printed: str,
    local_service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _org, _user, token = local_service.user()
    run_example(example, local_service, token, monkeypatch)
    assert printed in capsys.readouterr().out
