"""Large sealed payloads are compressed before encryption (a write unit per KB),
and rows sealed before compression existed still open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.adapters import envelope
from agent_memory.adapters.local_cipher import LocalCipher
from agent_memory.domain.errors import IntegrityError

SCOPE = {"org": "acme", "pool": "bot:b-1", "field": "learning"}
# A call log's shape: a prompt and JSON lines of entries, several KB.
LOG = json.dumps(
    {
        "task": "enrichment",
        "system": "You help a Bot. " * 60,
        "user": "\n".join(
            json.dumps({"id": f"e{n}", "content": f"Ana takes the 8:{n:02d} train."})
            for n in range(60)
        ),
    }
)


def test_a_large_text_seals_smaller_and_opens_as_it_was(tmp_path: Path) -> None:
    cipher = LocalCipher(tmp_path / "content.key")
    blob = cipher.seal(LOG, scope=SCOPE, row="CALL#1/sealed")
    assert len(blob) < len(LOG.encode()) / 2
    assert cipher.open(blob, scope=SCOPE, row="CALL#1/sealed") == LOG


def test_a_payload_sealed_uncompressed_still_opens() -> None:
    payload = json.dumps({"row": "CALL#1/sealed", "text": LOG}).encode()
    opened = envelope.unbind(payload, SCOPE, scope=SCOPE, row="CALL#1/sealed")
    assert opened == LOG


def test_a_short_text_is_not_compressed() -> None:
    assert envelope.bind("fine", "MEM#1/content").startswith(b"{")


def test_a_compressed_payload_still_binds_its_row() -> None:
    packed = envelope.bind(LOG, "CALL#1/sealed")
    assert packed[:1] == b"x"
    with pytest.raises(IntegrityError):
        envelope.unbind(packed, SCOPE, scope=SCOPE, row="CALL#2/sealed")
