"""What only the local cipher does: its key file (created owner-only, kept across restarts,
refused when unsafe), the same message format as on AWS, cached data keys, and a key that
never shows. The Cipher contract itself is tests/contracts/test_cipher_contract.py."""

from __future__ import annotations

import base64
import logging
import os
import stat
import threading
from pathlib import Path

import pytest

from agent_memory.adapters.local_cipher import KEY_BYTES, KeyFileRefused, LocalCipher
from agent_memory.domain.errors import IntegrityError

SCOPE = {"org": "acme", "pool": "s-1", "field": "entry"}


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "content.key"


def test_the_first_start_creates_an_owner_only_key_that_later_starts_reuse(
    key_file: Path,
) -> None:
    previous = os.umask(0)  # even a permissive umask gives an owner-only file
    try:
        first = LocalCipher(key_file)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.stat().st_size == KEY_BYTES
    blob = first.seal("The trip budget is 1500 EUR.", scope=SCOPE, row="MEM#budget")
    assert b"1500" not in blob

    restarted = LocalCipher(key_file)
    assert restarted.open(blob, scope=SCOPE, row="MEM#budget") == "The trip budget is 1500 EUR."
    assert [p.name for p in key_file.parent.iterdir()] == ["content.key"]  # no temporary left


def test_content_sealed_under_another_key_file_does_not_open(tmp_path: Path) -> None:
    blob = LocalCipher(tmp_path / "a.key").seal("secret plan", scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        LocalCipher(tmp_path / "b.key").open(blob, scope=SCOPE, row="MEM#plan")


def test_a_tampered_ciphertext_fails(key_file: Path) -> None:
    cipher = LocalCipher(key_file)
    blob = bytearray(cipher.seal("secret plan", scope=SCOPE, row="MEM#plan"))
    blob[-40] ^= 0x01
    with pytest.raises(IntegrityError):
        cipher.open(bytes(blob), scope=SCOPE, row="MEM#plan")
    with pytest.raises(IntegrityError):
        cipher.open(b"not a message", scope=SCOPE, row="MEM#plan")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o700 | 0o007])
def test_a_key_file_group_or_others_may_open_is_refused(key_file: Path, mode: int) -> None:
    LocalCipher(key_file)
    key_file.chmod(mode)
    with pytest.raises(KeyFileRefused, match="chmod 600"):
        LocalCipher(key_file)


@pytest.mark.parametrize("size", [0, 16, KEY_BYTES - 1, KEY_BYTES + 1, 2 * KEY_BYTES])
def test_a_key_file_of_the_wrong_length_is_refused(key_file: Path, size: int) -> None:
    key_file.parent.mkdir(parents=True)
    key_file.write_bytes(b"k" * size)
    key_file.chmod(0o600)
    with pytest.raises(KeyFileRefused, match=f"holds {size} bytes, not a 32-byte key"):
        LocalCipher(key_file)
    assert key_file.read_bytes() == b"k" * size  # never replaced: the data it sealed stays


def test_a_key_file_that_is_a_link_or_a_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.key"
    LocalCipher(real)
    link = tmp_path / "link.key"
    link.symlink_to(real)
    with pytest.raises(KeyFileRefused, match="symbolic link"):
        LocalCipher(link)
    folder = tmp_path / "folder.key"
    folder.mkdir(mode=0o700)
    with pytest.raises(KeyFileRefused, match="not a regular file"):
        LocalCipher(folder)


def test_first_starts_at_once_agree_on_one_key(key_file: Path) -> None:
    start = threading.Barrier(8)
    ciphers: list[LocalCipher] = []

    def begin() -> None:
        start.wait()
        ciphers.append(LocalCipher(key_file))

    threads = [threading.Thread(target=begin) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    blobs = [c.seal(f"fact {i}", scope=SCOPE, row="R") for i, c in enumerate(ciphers)]
    assert [ciphers[0].open(b, scope=SCOPE, row="R") for b in blobs] == [
        f"fact {i}" for i in range(8)
    ]
    assert [p.name for p in key_file.parent.iterdir()] == ["content.key"]


def test_the_message_is_the_aws_format_with_the_committing_suite_and_no_signature(
    key_file: Path,
) -> None:
    import aws_encryption_sdk

    cipher = LocalCipher(key_file)
    blob = cipher.seal("x", scope=SCOPE, row="r")
    client = aws_encryption_sdk.EncryptionSDKClient()
    _, header = client.decrypt(source=blob, materials_manager=cipher._cmm)
    assert header.algorithm.name == "AES_256_GCM_HKDF_SHA512_COMMIT_KEY"
    assert header.encryption_context == SCOPE  # coarse: no row id, no signing key
    [data_key] = header.encrypted_data_keys
    assert data_key.key_provider.provider_id == "agent-memory-local"


def test_sealing_many_entries_wraps_one_data_key(
    key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aws_encryption_sdk.key_providers.raw import RawMasterKey

    calls: list[str] = []
    for method in ("_generate_data_key", "_decrypt_data_key"):
        original = getattr(RawMasterKey, method)

        def counted(self, *args, _original=original, _name=method, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(RawMasterKey, method, counted)
    cipher = LocalCipher(key_file)
    blobs = [cipher.seal(f"fact {i}", scope=SCOPE, row=f"MEM#{i}") for i in range(50)]
    assert calls == ["_generate_data_key"]
    # A restarted process (empty cache) unwraps the data key once, not once per entry.
    calls.clear()
    restarted = LocalCipher(key_file)
    for i, blob in enumerate(blobs):
        assert restarted.open(blob, scope=SCOPE, row=f"MEM#{i}") == f"fact {i}"
    assert calls == ["_decrypt_data_key"]


def test_the_key_never_shows_in_logs_or_reprs(
    key_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        cipher = LocalCipher(key_file)
        cipher.open(cipher.seal("x", scope=SCOPE, row="r"), scope=SCOPE, row="r")
        with pytest.raises(IntegrityError):
            LocalCipher(key_file.with_name("other.key")).open(
                cipher.seal("x", scope=SCOPE, row="r"), scope=SCOPE, row="r"
            )
    key = key_file.read_bytes()
    shown = caplog.text + repr(cipher) + str(vars(cipher))
    for form in (key.hex(), base64.b64encode(key).decode(), repr(key)[2:-1]):
        assert form not in shown
