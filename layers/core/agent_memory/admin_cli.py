"""`agent-memory-admin`: the operator's commands for moving a deployment (docs/operations.md,
"Move from one machine to AWS"). They print keys, counts and ids, never content.

    agent-memory-admin [--data-dir DIR] recipient
    agent-memory-admin [--data-dir DIR] export --recipient amrk1_... > archive
    agent-memory-admin [--data-dir DIR] import archive

With `--data-dir` (or `MEMORY_DATA_DIR`), the deployment of one machine (`make run`): its
SQLite file and key file. Without, the AWS deployment the environment names (`TABLE_NAME`,
`KMS_KEY_ID`, the AWS region and credentials), as the functions read them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_memory.move import Refused, export_archive, import_archive, make_recipient


def _deployment(data_dir: str | None) -> tuple[Any, Any]:
    """(table, cipher) of the local or AWS deployment."""
    if data_dir:
        from agent_memory.adapters.local_cipher import LocalCipher
        from agent_memory.adapters.sqlite_store import SqliteStore
        from agent_memory.bootstrap import KEY_FILE, STORE_FILE

        root = Path(data_dir)
        return SqliteStore(root / STORE_FILE), LocalCipher(root / KEY_FILE)
    import boto3

    from agent_memory.adapters.dynamodb import DynamoStore
    from agent_memory.adapters.kms import KmsCipher
    from agent_memory.config import load_settings

    settings = load_settings()
    session = boto3.session.Session(region_name=settings.region)
    store = DynamoStore(session.client("dynamodb"), settings.table_name)
    return store, KmsCipher(settings.kms_key_id, botocore_session=session._session)


def _lines(path: str) -> Iterator[bytes]:
    with open(path, "rb") as archive:
        yield from archive


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-memory-admin", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("MEMORY_DATA_DIR") or None)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("recipient", help="make a one-time key pair here; print its public half")
    exporting = commands.add_parser("export", help="write every row, sealed for a recipient")
    exporting.add_argument("--recipient", required=True, help="the target's public key")
    importing = commands.add_parser("import", help="write an archive's rows here")
    importing.add_argument("archive")
    args = parser.parse_args(argv)
    table, cipher = _deployment(args.data_dir)
    try:
        if args.command == "recipient":
            print(make_recipient(table, cipher, int(time.time() * 1000)))
        elif args.command == "export":
            counted = export_archive(table, cipher, args.recipient, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            print(
                f"exported {counted.rows} rows ({counted.sealed} sealed values) of "
                f"{len(counted.organizations)} organization(s)",
                file=sys.stderr,
            )
        else:
            counted = import_archive(_lines(args.archive), _lines(args.archive), table, cipher)
            print(
                f"imported {counted.rows} rows ({counted.sealed} sealed values) of "
                f"organization(s) {', '.join(counted.organizations)}"
            )
    except Refused as refused:
        print(f"refused: {refused}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
