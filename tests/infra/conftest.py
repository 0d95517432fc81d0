"""The template every infrastructure test reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.cfn_yaml import load_template

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    """template.yaml with its short tags in their long forms (read once per worker)."""
    return load_template(ROOT / "template.yaml")
