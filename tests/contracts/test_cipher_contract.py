"""The Cipher port's contract: what is sealed for a row and scope opens there, and only there.

To run it against another set of adapters, add one entry to `CIPHERS`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.domain.errors import IntegrityError
from agent_memory.ports import Cipher

SCOPE = {"org": "acme", "pool": "s-1", "field": "entry"}


def _fake(request: pytest.FixtureRequest) -> Cipher:
    from tests.support.in_memory import FakeCipher

    return FakeCipher()


def _kms(request: pytest.FixtureRequest) -> Cipher:
    from agent_memory.adapters.kms import KmsCipher

    session, local = request.getfixturevalue("local_aws")
    return KmsCipher(local.key_alias, botocore_session=session._session)


def _local(request: pytest.FixtureRequest) -> Cipher:
    from agent_memory.adapters.local_cipher import LocalCipher

    return LocalCipher(request.getfixturevalue("tmp_path") / "content.key")


CIPHERS: dict[str, Callable[[pytest.FixtureRequest], Cipher]] = {
    "fake": _fake,
    "kms": _kms,
    "local": _local,
}


@pytest.fixture(params=list(CIPHERS))
def cipher(request: pytest.FixtureRequest) -> Cipher:
    return CIPHERS[request.param](request)


@pytest.mark.parametrize(
    "text",
    [
        "The trip budget is 1500 EUR.",
        "",
        "Grüße aus Zürich, naïve café",
        "東京で会いましょう",
        "مرحبا بالعالم",
        "👩‍👩‍👧 family, 🇫🇷 flag, e\u0301 combining",
        'line\nbreak\ttab "quotes" \\ backslash \u0000 nul',
        "\U0010fffd the last plane",
        "x" * 100_000,
    ],
    ids=lambda text: f"{len(text)}-chars" if len(text) > 40 else repr(text),
)
def test_what_is_sealed_opens_as_it_was(cipher: Cipher, text: str) -> None:
    blob = cipher.seal(text, scope=SCOPE, row="MEM#budget")
    assert isinstance(blob, bytes)
    assert cipher.open(blob, scope=dict(SCOPE), row="MEM#budget") == text


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=300))
def test_any_unicode_text_round_trips(cipher: Cipher, text: str) -> None:
    """Any string without lone surrogates (which no UTF-8 text can hold)."""
    blob = cipher.seal(text, scope=SCOPE, row="MEM#x")
    assert cipher.open(blob, scope=SCOPE, row="MEM#x") == text


def test_a_row_id_in_any_script_binds_its_content(cipher: Cipher) -> None:
    blob = cipher.seal("plan", scope=SCOPE, row="MEM#café-東京")
    assert cipher.open(blob, scope=SCOPE, row="MEM#café-東京") == "plan"
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope=SCOPE, row="MEM#cafe-東京")


def test_a_ciphertext_copied_to_another_row_fails(cipher: Cipher) -> None:
    blob = cipher.seal("secret plan", scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope=SCOPE, row="MEM#other")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope=SCOPE, row="MEM#plan ")


@pytest.mark.parametrize("part", ["org", "pool", "field"])
def test_a_ciphertext_copied_to_another_scope_fails(cipher: Cipher, part: str) -> None:
    blob = cipher.seal("secret plan", scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope={**SCOPE, part: "other"}, row="MEM#plan")


def test_a_scope_with_one_more_part_fails(cipher: Cipher) -> None:
    blob = cipher.seal("secret plan", scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope={**SCOPE, "user": "u-1"}, row="MEM#plan")


def test_each_seal_opens_with_its_own_row_only(cipher: Cipher) -> None:
    blobs = {row: cipher.seal(f"fact {row}", scope=SCOPE, row=row) for row in ("A", "B")}
    assert cipher.open(blobs["A"], scope=SCOPE, row="A") == "fact A"
    assert cipher.open(blobs["B"], scope=SCOPE, row="B") == "fact B"
    with pytest.raises(IntegrityError):
        cipher.open(blobs["A"], scope=SCOPE, row="B")
