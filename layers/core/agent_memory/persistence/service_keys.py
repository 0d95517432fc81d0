"""An organization's service keys in the table.

- `SKEY#<sha256>/META`: the key's organization, id and `lastUsedAt` (one GetItem a request).
- `ORG#<orgId>/SKEY#<keyId>`: the organization's list: name, public prefix, digest, creation.

Only the key's SHA-256 is stored; the key itself is shown once, at its creation.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.domain.errors import NotFound, WriteConflict
from agent_memory.domain.identity import IssuedToken
from agent_memory.persistence import keys
from agent_memory.persistence.organizations import ORG_IS_ALIVE
from agent_memory.persistence.rows import StoreRows, write_groups
from agent_memory.ports import Absent, Check, Delete, KeyRange, Present, Put, Record, Update

KEY_NOT_FOUND = "service key not found"
# `lastUsedAt` is written again once it is this old: a busy key costs one write a minute.
TOUCH_AFTER_MS = 60_000


def key_pk(digest: str) -> str:
    return f"{keys.SERVICE_KEY_PREFIX}{digest}"


def listed_sk(key_id: str) -> str:
    """The key's row in its organization's list (`ORG#<orgId>`)."""
    return f"{keys.SERVICE_KEY_PREFIX}{key_id}"


@dataclass(frozen=True)
class FoundKey:
    digest: str
    org_id: str
    id: str
    last_used_at: int | None


@dataclass(frozen=True)
class ListedKey:
    id: str
    name: str
    prefix: str
    created_at: int
    last_used_at: int | None


class ServiceKeyRepository(StoreRows):
    def create(self, org_id: str, key_id: str, name: str, key: IssuedToken, now_ms: int) -> None:
        found: Record = {"pk": key_pk(key.digest), "sk": keys.HEAD, "type": "service-key"}
        listed: Record = {"pk": keys.org(org_id), "sk": listed_sk(key_id), "type": "listed-key"}
        try:
            self._store.write(
                [
                    Check(keys.org(org_id), keys.HEAD, ORG_IS_ALIVE),
                    Put(found | {"orgId": org_id, "keyId": key_id}, Absent()),
                    Put(
                        listed
                        | {"name": name, "prefix": key.prefix, "digest": key.digest}
                        | {"createdAt": now_ms},
                        Absent(),
                    ),
                ]
            )
        except WriteConflict as error:
            raise NotFound("organization not found", ["orgId"]) from error

    def find(self, digest: str) -> FoundKey | None:
        row = self._store.get(key_pk(digest), keys.HEAD)
        if row is None:
            return None
        used = row.get("lastUsedAt")
        return FoundKey(digest, str(row["orgId"]), str(row["keyId"]), _ms(used))

    def touch(self, key: FoundKey, now_ms: int) -> None:
        """Record the use, at most once a minute; a key revoked meanwhile stays gone."""
        if key.last_used_at is not None and now_ms - key.last_used_at < TOUCH_AFTER_MS:
            return
        try:
            self._store.write(
                [
                    Update(
                        key_pk(key.digest),
                        keys.HEAD,
                        set={"lastUsedAt": now_ms},
                        condition=Present(),
                    )
                ]
            )
        except WriteConflict:
            return

    def listed(self, org_id: str) -> list[ListedKey]:
        """The organization's keys, oldest first, with their last use."""
        rows = self._store.query(keys.org(org_id), KeyRange(prefix=keys.SERVICE_KEY_PREFIX)).records
        used = {
            str(row["pk"]).removeprefix(key_pk("")): row.get("lastUsedAt")
            for row in self._store.get_many([(key_pk(str(r["digest"])), keys.HEAD) for r in rows])
        }
        found = [
            ListedKey(
                str(row["sk"]).removeprefix(keys.SERVICE_KEY_PREFIX),
                str(row["name"]),
                str(row["prefix"]),
                int(row["createdAt"]),
                _ms(used.get(str(row["digest"]))),
            )
            for row in rows
        ]
        return sorted(found, key=lambda k: (k.created_at, k.id))

    def revoke(self, org_id: str, key_id: str) -> None:
        listed = self._store.get(keys.org(org_id), listed_sk(key_id))
        if listed is None:
            raise NotFound(KEY_NOT_FOUND, ["keyId"])
        try:
            self._store.write(
                [
                    Delete(keys.org(org_id), listed_sk(key_id), Present(name="key")),
                    Delete(key_pk(str(listed["digest"])), keys.HEAD),
                ]
            )
        except WriteConflict as error:  # revoked meanwhile
            raise NotFound(KEY_NOT_FOUND, ["keyId"]) from error

    def revoke_all(self, org_id: str) -> int:
        """Every key of the organization (its deletion): how many went."""
        listed = list(self._rows(keys.org(org_id), KeyRange(prefix=keys.SERVICE_KEY_PREFIX)))
        write_groups(
            self._store,
            (
                [Delete(key_pk(str(row["digest"])), keys.HEAD), Delete(keys.org(org_id), row["sk"])]
                for row in listed
            ),
        )
        return len(listed)


def _ms(value: object) -> int | None:
    return None if value is None else int(str(value))
