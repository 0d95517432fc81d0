"""`make run`'s start: the data directory, the admin token and the one-server lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.local.serve import RefusedToStart, admin_token, data_directory, lock


def test_the_data_directory_is_created_owner_only(tmp_path: Path) -> None:
    made = data_directory(str(tmp_path / "a" / "data"))
    assert made == (tmp_path / "a" / "data").resolve()
    assert made.stat().st_mode & 0o777 == 0o700
    assert data_directory(str(made)) == made  # found again


def test_the_generated_token_is_kept_owner_only_and_shown_once(tmp_path: Path) -> None:
    first = admin_token(tmp_path, None)
    assert first.created
    assert len(first.value) >= 32
    assert first.value in first.describe()
    assert (tmp_path / "admin-token").stat().st_mode & 0o777 == 0o600

    again = admin_token(tmp_path, None)
    assert (again.value, again.created) == (first.value, False)
    assert first.value not in again.describe()
    assert str(tmp_path / "admin-token") in again.describe()


def test_a_configured_token_wins_and_is_never_written(tmp_path: Path) -> None:
    configured = "x" * 32
    token = admin_token(tmp_path, configured)
    assert (token.value, token.path) == (configured, None)
    assert configured not in token.describe()
    assert not (tmp_path / "admin-token").exists()


def test_a_short_configured_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RefusedToStart, match="MEMORY_ADMIN_TOKEN has 12 characters"):
        admin_token(tmp_path, "short-secret")


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    admin_token(tmp_path, None)
    (tmp_path / "admin-token").chmod(0o644)
    with pytest.raises(RefusedToStart, match="chmod 600"):
        admin_token(tmp_path, None)


def test_one_server_at_a_time_per_data_directory(tmp_path: Path) -> None:
    held = lock(tmp_path)
    try:
        with pytest.raises(RefusedToStart, match="another agent-memory server"):
            lock(tmp_path)
    finally:
        held.close()
    lock(tmp_path).close()  # free again once the first let go
