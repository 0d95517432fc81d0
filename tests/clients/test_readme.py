"""The README's curl walk-through and its Python and MCP examples run as written against the
local service."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import ROOT, LocalService, run_example

WALK = "## A walk-through with curl"
SECTION = "## From Python, TypeScript, an MCP client, or an OpenAI Agents SDK agent"


def _blocks(heading: str, language: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading) : text.index("\n## ", text.index(heading) + 1)]
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def test_the_curl_walk_through_runs_as_written_twice(
    local_service: LocalService, tmp_path: Path
) -> None:
    """Twice at once on one server: a reader may run it again, or beside a colleague."""
    script = "\n".join(_blocks(WALK, "sh"))
    env = os.environ | {"MEMORY_ADMIN_TOKEN": local_service.admin_token, "API": local_service.url}
    runs = []
    for run in range(2):
        (tmp_path / str(run)).mkdir()
        runs.append(
            subprocess.Popen(
                ["bash", "-e", "-o", "pipefail", "-c", script],
                cwd=tmp_path / str(run),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in runs:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert '{"status":"ok"}' in out
        assert "The user's budget is 1500 EUR." in out, "session memory learned the turn"
        assert "is vegetarian." in out, "the memory bot learned the person's words"
        assert '"name":"updateWorkingMemory"' in out, "the thread's context has the tool"
        assert out.count("Always wants express shipping.") == 2, "saved, then recalled"
        assert '"_tag"' not in out, "no call answered an error"


def _examples() -> list[str]:
    blocks = _blocks(SECTION, "python")
    assert len(blocks) == 2
    return blocks


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
