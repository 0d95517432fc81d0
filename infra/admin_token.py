"""The admin token at deploy: make a strong one, hash one, and check what `make deploy` sends.

Only the token's SHA-256 is deployed (template.yaml's `AdminTokenSha256`, 64 lowercase hex
characters). Stdlib only, so that it runs before any venv exists; `check` looks the stack up
with boto3 when the hash is not given (it runs in .venv-sam, which has boto3).

    python3 infra/admin_token.py new                # "<token> <sha256>": a 43-character token
    python3 infra/admin_token.py hash < token.txt   # the SHA-256 of a token read from stdin
    python3 infra/admin_token.py check --env prod --overrides "$PARAMETER_OVERRIDES"

`hash` refuses a token under 32 characters. `check` refuses a malformed `AdminTokenSha256`,
the hash of a token known to be weak (empty, the local run's well-known one), and a deploy
that names no hash when the stack does not have one yet (its first deploy). Docs:
docs/operations.md#the-admin-token.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import secrets
import shlex
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMCONFIG = ROOT / "samconfig.toml"
PARAMETER = "AdminTokenSha256"
MIN_LENGTH = 32
_DIGEST = re.compile(r"[0-9a-f]{64}")
# Hashes no deployment may use: the empty token and the local run's documented token.
WEAK = {
    hashlib.sha256(b"").hexdigest(): "the empty token",
    hashlib.sha256(b"local-admin-token").hexdigest(): "the local run's well-known token",
}


class Refused(Exception):
    """What `make deploy` must not go on with, said in one sentence."""


def new_token() -> str:
    """A token of 256 random bits (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


def digest(token: str) -> str:
    """The SHA-256 hex digest the service compares bearer tokens with (domain/identity.py)."""
    if len(token) < MIN_LENGTH:
        raise Refused(
            f"the admin token has {len(token)} characters; at least {MIN_LENGTH} are required "
            "(make admin-token makes one)"
        )
    if token != token.strip():
        raise Refused("the admin token starts or ends with whitespace")
    return hashlib.sha256(token.encode()).hexdigest()


def overrides(text: str) -> dict[str, str]:
    """`Key=Value Key2="Value 2"` (sam's --parameter-overrides) as a mapping."""
    found: dict[str, str] = {}
    for word in shlex.split(text or ""):
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise Refused(f"PARAMETER_OVERRIDES: {word!r} is not Key=Value")
        found[key] = value
    return found


def check_digest(value: str) -> None:
    """A deployable `AdminTokenSha256`: 64 lowercase hex characters, not a known weak token."""
    if not _DIGEST.fullmatch(value):
        raise Refused(
            f"{PARAMETER} must be the SHA-256 hex digest of the token (64 lowercase hex "
            f"characters), not {len(value)} characters: make admin-token-hash"
        )
    if value in WEAK:
        raise Refused(f"{PARAMETER} is the hash of {WEAK[value]}")


def stack_of(env: str, samconfig: Path = SAMCONFIG) -> tuple[str, str]:
    """(stack name, region) of a samconfig.toml profile."""
    with samconfig.open("rb") as f:
        config = tomllib.load(f)
    if env not in config:
        raise Refused(f"samconfig.toml has no profile {env!r}")
    merged: dict[str, object] = {}
    for section in ("global", "deploy"):
        merged |= config[env].get(section, {}).get("parameters", {})
    return str(merged["stack_name"]), str(merged.get("region", "us-east-1"))


StackLookup = Callable[[str, str], set[str] | None]


def deployed_parameters(stack: str, region: str) -> set[str] | None:
    """The parameter names of a deployed stack; None when there is no such stack."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.client("cloudformation", region_name=region)
    try:
        [described] = client.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        if "does not exist" in str(error):
            return None
        raise Refused(f"cannot read stack {stack}: {error}") from error
    except BotoCoreError as error:
        raise Refused(f"cannot read stack {stack}: {error}") from error
    if described.get("StackStatus") == "REVIEW_IN_PROGRESS":
        return None  # created by a change set that never ran: nothing is deployed
    return {p["ParameterKey"] for p in described.get("Parameters", [])}


def check(
    env: str,
    text: str,
    *,
    samconfig: Path = SAMCONFIG,
    lookup: StackLookup = deployed_parameters,
) -> str:
    """What the deploy does with the admin token hash; raises Refused when it must not go on."""
    given = overrides(text)
    if PARAMETER in given:
        check_digest(given[PARAMETER])
        return f"{PARAMETER}: a new hash is deployed"
    stack, region = stack_of(env, samconfig)
    deployed = lookup(stack, region)
    if deployed is None or PARAMETER not in deployed:
        raise Refused(
            f"stack {stack} ({region}) has no {PARAMETER} yet: its first deploy must name one, "
            f'make deploy ENV={env} PARAMETER_OVERRIDES="{PARAMETER}=$HASH ..." '
            "(docs/operations.md#the-admin-token)"
        )
    return f"{PARAMETER}: stack {stack} keeps its deployed hash"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("new", help="print a new token and its SHA-256, space-separated")
    commands.add_parser("hash", help="print the SHA-256 of the token read from stdin")
    checking = commands.add_parser("check", help="check the hash a deploy would send")
    checking.add_argument("--env", default="default", help="samconfig.toml profile")
    checking.add_argument("--overrides", default="", help="PARAMETER_OVERRIDES")
    args = parser.parse_args(argv)
    try:
        if args.command == "new":
            token = new_token()
            print(token, digest(token))
        elif args.command == "hash":
            print(digest(sys.stdin.read().rstrip("\r\n")))
        else:
            print(check(args.env, args.overrides), file=sys.stderr)
    except Refused as refused:
        print(f"refused: {refused}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
