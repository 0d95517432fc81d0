"""Moving a whole deployment without anyone reading it (docs/adr/0085).

- `recipient` (on the target): a one-time RSA key pair; the private half is kept in the
  target's own table, sealed under the target's key (KMS on AWS, the key file locally); the
  public half is printed.
- `export` (on the source): every row of the table, one JSON line each, in key order. Each
  sealed value is opened under the source's key and sealed again, payload and encryption
  context unchanged, for the recipient's public key: the archive holds no content in the
  clear, and the operator who carries it cannot open it. The last line counts the rows,
  names the organizations and carries the SHA-256 of every line before it.
- `import` (on the target): checks the whole archive first (format, recipient, digest),
  refuses it when the target already holds one of its organizations, then writes the rows
  with each sealed value opened by the private half and sealed under the target's key.
  A marker row names the archive while it is imported: run again after a stop, the same
  archive is written again over what is there (same keys, nothing duplicated); once done,
  the marker says so and the recipient's key pair is deleted.

Token rows move as they are (hashes), so people keep their tokens; the admin token is the
deployment's configuration, never a row, and does not move.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

from agent_memory.adapters.envelope import Sealing
from agent_memory.adapters.sqlite_rows import decode_record, encode_record
from agent_memory.persistence.keys import (
    HEAD,
    MOVE_IMPORT_PK,
    MOVE_PREFIX,
    MOVE_RECIPIENT_PK,
    ORG_PREFIX,
    org,
)
from agent_memory.ports import Cipher, Delete, Put, Store
from infra.move.recipient import RecipientCipher, is_sealed, key_id, new_key_pair

if TYPE_CHECKING:
    from infra.move.recall import RecallRebuilt

FORMAT = "agent-memory-deployment"
VERSION = 1
# Rows a transaction writes, and the encoded size past which a batch is written early
# (DynamoDB takes 100 actions and 4 MB a transaction).
WRITE_ROWS = 25
WRITE_BYTES = 2_000_000
_RECIPIENT_SCOPE = {"pool": "move", "field": "recipient"}


class Refused(Exception):
    """The archive or the target is not fit for an import; nothing was written."""


class Table(Store, Protocol):
    def rows(self) -> Iterator[dict[str, Any]]: ...


@dataclass
class Counted:
    rows: int = 0
    sealed: int = 0
    organizations: list[str] = field(default_factory=list)


def make_recipient(store: Store, cipher: Cipher, now_ms: int) -> str:
    """A new key pair on the target; answers its public half."""
    private_pem, public = new_key_pair()
    kid = key_id(public)
    sealed = cipher.seal(private_pem.decode(), scope=_RECIPIENT_SCOPE, row=_bound_to(kid))
    pair = {"pk": MOVE_RECIPIENT_PK, "sk": kid, "public": public, "private": sealed, "at": now_ms}
    store.write([Put(pair)])
    return public


def _bound_to(kid: str) -> str:
    """The row a recipient's sealed private half is bound to."""
    return f"{MOVE_RECIPIENT_PK}/{kid}"


def export_archive(table: Table, cipher: Sealing, public: str, out: IO[bytes]) -> Counted:
    """Every row of the source into `out`, sealed values re-sealed for `public`."""
    recipient = RecipientCipher(public)
    digest = hashlib.sha256()
    counted = Counted()
    resealed = Resealer(cipher, recipient, counted)

    def emit(value: Mapping[str, Any]) -> None:
        line = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        digest.update(line)
        out.write(line)

    exported_at = int(time.time() * 1000)
    emit({"format": FORMAT, "version": VERSION, "recipient": recipient.key_id, "at": exported_at})
    for row in table.rows():
        if str(row["pk"]).startswith(MOVE_PREFIX):
            continue  # the source's own key pairs and imports stay with it
        if row["pk"].startswith(ORG_PREFIX) and row["sk"] == HEAD:
            counted.organizations.append(row["pk"].removeprefix(ORG_PREFIX))
        emit({"row": json.loads(encode_record(resealed(row)))})
        counted.rows += 1
    end = {
        "rows": counted.rows,
        "organizations": counted.organizations,
        "digest": digest.hexdigest(),
    }
    out.write(json.dumps({"end": end}, separators=(",", ":")).encode() + b"\n")
    return counted


class Resealer:
    """Opens sealed values under one key and seals them again under another. An entry's
    copies hold its base row's sealed value byte for byte, a few rows later in the same
    partition: the last values re-sealed are kept, so a copy costs no cryptography and
    stays, on the other side, the same bytes as its base row."""

    # Values remembered (about 2 KB each): an entry's copies in its pool's partition follow
    # within this many sealed values unless the pool is larger.
    KEPT = 1024

    def __init__(self, source: Sealing, target: Sealing, counted: Counted) -> None:
        self._source = source
        self._target = target
        self._counted = counted
        self._one = functools.lru_cache(maxsize=self.KEPT)(self._reseal)

    def __call__(self, value: Any) -> Any:
        """`value` with every sealed value in it re-sealed."""
        if is_sealed(value):
            self._counted.sealed += 1
            return self._one(bytes(value))
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value

    def _reseal(self, blob: bytes) -> bytes:
        return self._target.wrap(*self._source.unwrap(blob))


@dataclass(frozen=True)
class Checked:
    recipient: str
    digest: str
    rows: int
    organizations: list[str]


def check_archive(lines: Iterable[bytes]) -> Checked:
    """The archive's end, once every line before it matches its digest and count."""
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    rows = 0
    for raw in lines:
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise Refused("the archive has a line that is not JSON: it is damaged") from None
        if isinstance(parsed, dict) and "end" in parsed:
            end = parsed["end"]
            if header is None or end.get("digest") != digest.hexdigest() or end.get("rows") != rows:
                raise Refused("the archive does not match its digest: it was changed or cut")
            return Checked(header["recipient"], end["digest"], rows, list(end["organizations"]))
        digest.update(raw)
        if header is None:
            if parsed.get("format") != FORMAT or parsed.get("version") != VERSION:
                raise Refused(f"not an archive of this service ({FORMAT} {VERSION})")
            header = parsed
        else:
            rows += 1
    raise Refused("the archive has no end line: it was cut short")


def import_archive(
    archive: Iterable[bytes],
    again: Iterable[bytes],
    store: Store,
    cipher: Sealing,
    following: Callable[[Sequence[str]], RecallRebuilt] | None = None,
) -> Counted:
    """Check `archive`, then write the rows of `again` (the same archive, read anew);
    `following` makes, for the archive's organizations, what else the import does with the
    rows it writes (semantic recall's vectors): told of every batch once written, finished
    before the import is done."""
    checked = check_archive(archive)
    found = _admitted(store, checked)
    if found is None:
        return Counted(0, 0, checked.organizations)  # imported already
    after = following(checked.organizations) if following is not None else None
    private = cipher.open(found["private"], scope=_RECIPIENT_SCOPE, row=_bound_to(found["sk"]))
    recipient = RecipientCipher(str(found["public"]), private.encode())
    counted = Counted(organizations=checked.organizations)
    digest = _write_rows(again, store, Resealer(recipient, cipher, counted), after, counted)
    if digest != checked.digest:
        raise Refused("the archive changed while it was imported: run the import again")
    if after is not None:
        after.finish()
    store.write([Put({"pk": MOVE_IMPORT_PK, "sk": checked.digest, "done": True})])
    store.write([Delete(MOVE_RECIPIENT_PK, checked.recipient)])  # one-time: its work is done
    return counted


def _admitted(store: Store, checked: Checked) -> dict[str, Any] | None:
    """The recipient's key row for an archive to import (None: imported already); the
    marker row of its import, written before its first row. Refused when the target holds
    no key for it, or holds one of its organizations and is not resuming its import."""
    marker = store.get(MOVE_IMPORT_PK, checked.digest)
    if marker is not None and marker.get("done"):
        return None
    found = store.get(MOVE_RECIPIENT_PK, checked.recipient)
    if found is None:
        raise Refused(
            "this deployment holds no recipient key for this archive: run "
            "`agent-memory-admin recipient` here and export again for its public key"
        )
    if marker is None:
        taken = [o for o in checked.organizations if store.get(org(o), HEAD)]
        if taken:
            raise Refused(f"this deployment already holds organization(s) {', '.join(taken)}")
        store.write([Put({"pk": MOVE_IMPORT_PK, "sk": checked.digest, "done": False})])
    return dict(found)


def _write_rows(
    lines: Iterable[bytes],
    store: Store,
    resealed: Resealer,
    after: RecallRebuilt | None,
    counted: Counted,
) -> str:
    """The archive's rows written re-sealed, in batches; answers the digest of the lines
    read, which must be the archive that was checked."""
    batch: list[Put] = []
    size = 0
    digest = hashlib.sha256()
    for raw in lines:
        parsed = json.loads(raw)
        if "end" in parsed:
            continue
        digest.update(raw)
        if "row" not in parsed:
            continue  # the header
        record = decode_record(json.dumps(parsed["row"]))
        if str(record["pk"]).startswith(MOVE_PREFIX):
            continue  # never exported: a key pair or marker is this deployment's own
        batch.append(Put(resealed(record)))
        size += len(raw)
        if len(batch) >= WRITE_ROWS or size >= WRITE_BYTES:
            _write(store, batch, after, counted)
            batch, size = [], 0
    if batch:
        _write(store, batch, after, counted)
    return digest.hexdigest()


def _write(store: Store, batch: list[Put], after: RecallRebuilt | None, counted: Counted) -> None:
    store.write(batch)
    counted.rows += len(batch)
    if after is not None:
        after.written([put.record for put in batch])
