"""Content encryption on the embedded KMS: bound to its row, cached data keys."""

from __future__ import annotations

import pytest

from agent_memory.adapters.kms import KmsCipher
from agent_memory.domain.errors import IntegrityError, Unavailable

SCOPE = {"org": "acme", "pool": "s-1", "field": "entry"}


@pytest.fixture
def cipher(local_aws) -> KmsCipher:
    session, local = local_aws
    return KmsCipher(local.key_alias, botocore_session=session._session)


def _count_kms_calls(session) -> list[str]:
    calls: list[str] = []
    session._session.register("before-call.kms.*", lambda model, **_: calls.append(model.name))
    return calls


def test_seal_and_open(cipher: KmsCipher) -> None:
    blob = cipher.seal("The trip budget is 1500 EUR.", scope=SCOPE, row="MEM#budget")
    assert b"1500" not in blob
    assert cipher.open(blob, scope=SCOPE, row="MEM#budget") == "The trip budget is 1500 EUR."


def test_uses_the_committing_suite_without_signatures(cipher: KmsCipher) -> None:
    import aws_encryption_sdk

    blob = cipher.seal("x", scope=SCOPE, row="r")
    _, cmm, _ = cipher._materials()
    client = aws_encryption_sdk.EncryptionSDKClient()
    _, header = client.decrypt(source=blob, materials_manager=cmm)
    assert header.algorithm.name == "AES_256_GCM_HKDF_SHA512_COMMIT_KEY"
    assert header.encryption_context == SCOPE  # coarse: no row id, no signing key


def test_a_ciphertext_copied_to_another_row_fails(cipher: KmsCipher) -> None:
    blob = cipher.seal("secret plan", scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope=SCOPE, row="MEM#other")


def test_a_ciphertext_copied_to_another_organization_or_pool_fails(cipher: KmsCipher) -> None:
    blob = cipher.seal("secret plan", scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope={**SCOPE, "org": "globex"}, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(blob, scope={**SCOPE, "pool": "s-2"}, row="MEM#plan")


def test_a_tampered_ciphertext_fails(cipher: KmsCipher) -> None:
    blob = bytearray(cipher.seal("secret plan", scope=SCOPE, row="MEM#plan"))
    blob[-40] ^= 0x01
    with pytest.raises(IntegrityError):
        cipher.open(bytes(blob), scope=SCOPE, row="MEM#plan")


def test_warm_cache_makes_no_kms_calls(local_aws) -> None:
    session, local = local_aws
    cipher = KmsCipher(local.key_alias, botocore_session=session._session)
    calls = _count_kms_calls(session)
    blobs = [cipher.seal(f"fact {i}", scope=SCOPE, row=f"MEM#{i}") for i in range(20)]
    sealing = list(calls)
    assert sealing.count("GenerateDataKey") == 1
    calls.clear()
    for i, blob in enumerate(blobs):
        assert cipher.open(blob, scope=SCOPE, row=f"MEM#{i}") == f"fact {i}"
    assert calls.count("Decrypt") <= 1

    # A cold process (new cipher, empty cache) pays one Decrypt per data key, not per entry.
    cold = KmsCipher(local.key_arn, botocore_session=session._session)
    calls.clear()
    for i, blob in enumerate(blobs):
        cold.open(blob, scope=SCOPE, row=f"MEM#{i}")
    assert calls == ["Decrypt"]


def test_a_kms_outage_is_unavailable(local_aws) -> None:
    from botocore.exceptions import ClientError

    session, local = local_aws
    cipher = KmsCipher(local.key_arn, botocore_session=session._session)

    def throttle(**_kwargs):
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "GenerateDataKey"
        )

    session._session.register("before-call.kms.GenerateDataKey", throttle)
    with pytest.raises(Unavailable):
        cipher.seal("x", scope=SCOPE, row="r")


def test_a_kms_outage_on_decrypt_is_unavailable_not_integrity(local_aws) -> None:
    from types import SimpleNamespace

    session, local = local_aws
    writer = KmsCipher(local.key_arn, botocore_session=session._session)
    blob = writer.seal("x", scope=SCOPE, row="r")
    reader = KmsCipher(local.key_arn, botocore_session=session._session)  # cold cache

    down = [True]

    def outage(**_kwargs):
        # Short-circuit the call with KMS's 500 answer, as the service would send it.
        if not down[0]:
            return None
        answer = SimpleNamespace(status_code=500, headers={}, content=b"")
        return answer, {"Error": {"Code": "KMSInternalException", "Message": "boom"}}

    # Clients copy the session's hooks when created: register before the first call.
    session._session.register("before-call.kms.Decrypt", outage)
    with pytest.raises(Unavailable):
        reader.open(blob, scope=SCOPE, row="r")
    down[0] = False
    assert reader.open(blob, scope=SCOPE, row="r") == "x"
