"""Content encryption on one machine: the AWS message format under a locally kept key.

The key file is created at the first start with owner-only permissions; one that group or
others may read, or of the wrong length, is refused. The key is never logged or shown.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from agent_memory.adapters import envelope

KEY_BYTES = 32  # AES-256
PROVIDER_ID = "agent-memory-local"
KEY_NAME = b"content-key"


class KeyFileRefused(Exception):
    """The key file exists but is not safe or not a key: the service must not start."""


class LocalCipher(envelope.RawKeySealing):
    """`ports.Cipher` under a wrapping key kept in `key_file` (created on first use)."""

    def __init__(
        self,
        key_file: Path,
        *,
        cache_seconds: float = 300.0,
        cache_messages: int = 100_000,
    ) -> None:
        self.key_file = Path(key_file)
        super().__init__(
            PROVIDER_ID,
            KEY_NAME,
            load_or_create_key(self.key_file),
            wrapping="AES_256_GCM_IV12_TAG16_NO_PADDING",
            kind="SYMMETRIC",
            max_age=cache_seconds,
            max_messages=cache_messages,
        )

    def __repr__(self) -> str:
        return f"LocalCipher(key_file={str(self.key_file)!r})"


def load_or_create_key(path: Path) -> bytes:
    """The wrapping key in `path`; a new random one, owner-only, when there is none yet."""
    with contextlib.suppress(FileNotFoundError):
        return _read_key(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(descriptor, 0o600)  # the umask may only narrow the mode: make it exact
        os.write(descriptor, secrets.token_bytes(KEY_BYTES))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    try:
        # A link is atomic and never replaces: of two first starts, one key wins whole.
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        os.unlink(temporary)
    _sync_directory(path.parent)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise KeyFileRefused(f"the key file {path} is a symbolic link") from None
        raise
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileRefused(f"the key file {path} is not a regular file")
        if info.st_mode & 0o077:
            raise KeyFileRefused(
                f"the key file {path} is open to group or others (mode "
                f"{stat.S_IMODE(info.st_mode):03o}): make it owner-only with chmod 600"
            )
        if info.st_size != KEY_BYTES:
            raise KeyFileRefused(
                f"the key file {path} holds {info.st_size} bytes, not a {KEY_BYTES}-byte key"
            )
        key = os.read(descriptor, KEY_BYTES)
    finally:
        os.close(descriptor)
    if len(key) != KEY_BYTES:  # pragma: no cover - the file shrank between stat and read
        raise KeyFileRefused(f"the key file {path} changed while it was read")
    return key


def _sync_directory(directory: Path) -> None:
    """Make a new directory entry survive a crash of the machine, not only of the process."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
