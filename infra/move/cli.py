"""`agent-memory-admin`: the operator's commands for moving a deployment (docs/operations.md,
"Move from one machine to AWS"). They print keys, counts and ids, never content.

    agent-memory-admin [--data-dir DIR] recipient
    agent-memory-admin [--data-dir DIR] export --recipient amrk1_... > archive
    agent-memory-admin [--data-dir DIR] import archive [--without-recall]

With `--data-dir` (or `MEMORY_DATA_DIR`), the deployment of one machine (`make run`): its
SQLite file, key file and vector log. Without, the AWS deployment the environment names
(`TABLE_NAME`, `KMS_KEY_ID`, `VECTOR_BUCKET`, `VECTOR_INDEX`, `EMBEDDING_MODEL`, the AWS
region and credentials), as the functions read them. `import` also embeds again, with the
target's embedding model, what semantic recall finds by meaning (recall.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_memory.ports.vectors import EmbeddingFailure
from agent_memory.wiring import Wiring
from infra.move.archive import Refused, export_archive, import_archive, make_recipient
from infra.move.recall import RecallRebuilt


def _deployment(data_dir: str | None) -> Wiring:
    """The services of the local or AWS deployment (its table, cipher and recall)."""
    from agent_memory.bootstrap import aws_adapters, local_adapters
    from agent_memory.config import load_settings

    settings = load_settings()
    if data_dir:
        return Wiring(settings, local_adapters(settings, Path(data_dir)))
    return Wiring(settings, aws_adapters(settings))


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
    importing.add_argument(
        "--without-recall",
        action="store_true",
        help="embed nothing: the target keeps no vectors (an AWS deployment without VECTOR_BUCKET)",
    )
    args = parser.parse_args(argv)
    deployment = _deployment(args.data_dir)
    table: Any = deployment.store  # a table of rows: SQLite's or DynamoDB's
    cipher: Any = deployment.cipher
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
            embeds = not args.without_recall
            _import(deployment, args.archive, local=bool(args.data_dir), embeds=embeds)
    except Refused as refused:
        print(f"refused: {refused}", file=sys.stderr)
        return 2
    except EmbeddingFailure as failure:
        print(f"stopped: the embedding model could not answer ({failure})", file=sys.stderr)
        print("every row written is kept: run the same import again", file=sys.stderr)
        return 1
    return 0


def _import(deployment: Wiring, archive: str, *, local: bool, embeds: bool) -> None:
    """Write the archive's rows, and semantic recall's vectors where the deployment keeps
    them: a one-machine deployment's vector log, or the S3 Vectors index `VECTOR_BUCKET`
    names. An AWS import without that index is refused unless told to embed nothing (a
    forgotten variable would leave recall by meaning empty on the target, and a finished
    import does not run again)."""
    from agent_memory.persistence.memory_objects import MemoryObjectRepository

    rebuilt = None
    if embeds:
        if not (local or deployment.settings.vector_bucket):
            raise Refused(
                "VECTOR_BUCKET is not set: set VECTOR_BUCKET, VECTOR_INDEX and EMBEDDING_MODEL "
                "as the deployment's functions have them (docs/operations.md), or pass "
                "--without-recall for a deployment that keeps no vectors"
            )
        memories = MemoryObjectRepository(deployment.store, deployment.cipher)
        rebuilt = RecallRebuilt(deployment.thread_repo, memories, deployment.recall)
    cipher: Any = deployment.cipher
    counted = import_archive(
        _lines(archive),
        _lines(archive),
        deployment.store,
        cipher,
        rebuilt.of_archive if rebuilt is not None else None,
    )
    recall = (
        f"{rebuilt.memories} agent memories and {rebuilt.messages} messages embedded"
        if rebuilt is not None
        else "nothing embedded (--without-recall)"
    )
    print(
        f"imported {counted.rows} rows ({counted.sealed} sealed values) of "
        f"organization(s) {', '.join(counted.organizations)}; semantic recall: {recall}"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
