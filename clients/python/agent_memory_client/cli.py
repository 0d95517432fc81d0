"""`agent-memory`: the operator's command line (API.md "Administration").

Reads `AGENT_MEMORY_URL` and `AGENT_MEMORY_TOKEN` (or `--url`, `--token`); `orgs`,
`users create` and `tokens` need the admin token; `users list/add/rename/delete` an
organization admin or its service key; `service-keys` and `settings` an organization admin or
the admin token; `purge` write on the bot, `erase` an organization admin. Prints the service's
answer as JSON; an error answer prints `error: <code>: <message>` on stderr and exits 1.

A person's token (or a service key with `--act-as`) lists what that person may see (`agents`,
`sessions`, `threads`, `bots`, `channels`, `chats`, `memories`, `tokens list`: every page) and
reads and changes memory: `memory session|agent|bot get|remember|forget`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from agent_memory_client import models as m
from agent_memory_client._base import UNSET
from agent_memory_client._sync_client import Client
from agent_memory_client.errors import AgentMemoryError

# `settings set` values that reset a setting to its default (API.md: `null` resets).
_DEFAULT = "default"


def _switch(value: str) -> bool | None:
    lowered = value.lower()
    if lowered in ("true", "on", "yes", "1"):
        return True
    if lowered in ("false", "off", "no", "0"):
        return False
    if lowered == _DEFAULT:
        return None
    raise argparse.ArgumentTypeError(f"{value!r}: true, false or default")


def _model(value: str) -> str | None:
    return None if value == _DEFAULT else value


def _models(value: str) -> list[str] | None:
    if value == _DEFAULT:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def _people_parsers(groups: Any) -> None:
    users = groups.add_parser("users", help="an organization's people").add_subparsers(
        dest="action", required=True
    )
    create_user = users.add_parser("create", help="create a user; prints its token once")
    create_user.add_argument("organization_id")
    create_user.add_argument("--id")
    create_user.add_argument("--name")
    create_user.add_argument("--role", choices=["member", "admin"], default="member")
    listed = users.add_parser("list", help="the organization's people (or its service key)")
    listed.add_argument("organization_id")
    add = users.add_parser("add", help="a person without a token, for the service key")
    add.add_argument("organization_id")
    add.add_argument("--id")
    add.add_argument("--name")
    add.add_argument("--role", choices=["member", "admin"], default="member")
    rename = users.add_parser("rename", help="change a person's name")
    rename.add_argument("organization_id")
    rename.add_argument("user_id")
    rename.add_argument("name")
    delete = users.add_parser("delete", help="erase a person, then their record and tokens")
    delete.add_argument("organization_id")
    delete.add_argument("user_id")

    keys = groups.add_parser("service-keys", help="an organization's service keys").add_subparsers(
        dest="action", required=True
    )
    create_key = keys.add_parser("create", help="a key for a backend; prints it once")
    create_key.add_argument("organization_id")
    create_key.add_argument("name")
    keys.add_parser("list").add_argument("organization_id")
    revoke_key = keys.add_parser("revoke", help="the key stops working at once")
    revoke_key.add_argument("organization_id")
    revoke_key.add_argument("key_id")


def _list_parsers(groups: Any) -> None:
    """`<collection> list` for what a person lists: every page, newest first."""
    for name, what in [
        ("agents", "your own and shared agents"),
        ("sessions", "your sessions of an agent (an admin: everyone's)"),
        ("threads", "your threads"),
        ("bots", "the bots you reach (a grant, a link)"),
        ("channels", "your channels (an admin: all)"),
        ("chats", "the chats you own or speak in"),
        ("memories", "your agent_memories (unexpired)"),
    ]:
        group = groups.add_parser(name, help=what).add_subparsers(dest="action", required=True)
        listed = group.add_parser("list", help=what)
        if name == "sessions":
            listed.add_argument("agent_id")
        if name == "threads":
            listed.add_argument("--agent", help="only this agent's")
        if name == "chats":
            listed.add_argument("--bot", help="only this bot's")
        if name == "memories":
            listed.add_argument("--category")
            listed.add_argument("--entity", help="an entity id")


def _memory_parsers(groups: Any) -> None:
    """`memory session|agent|bot get|remember|forget`: read and change one pool."""
    scopes = groups.add_parser("memory", help="read and change memory").add_subparsers(
        dest="scope", required=True
    )
    session = scopes.add_parser("session", help="a session's memory").add_subparsers(
        dest="verb", required=True
    )
    agent = scopes.add_parser("agent", help="an agent's memory").add_subparsers(
        dest="verb", required=True
    )
    bot = scopes.add_parser("bot", help="your part of a bot's memory").add_subparsers(
        dest="verb", required=True
    )
    for scope, verbs, owner in [(session, "session", "session_id"), (agent, "agent", "agent_id")]:
        scope.add_parser("get").set_defaults(action=f"{verbs} get")
        scope.choices["get"].add_argument(owner)
        remember = scope.add_parser("remember", help="set one key (retried on a conflict)")
        remember.set_defaults(action=f"{verbs} remember")
        remember.add_argument(owner)
        remember.add_argument("key")
        remember.add_argument("content")
        kinds = (
            ["fact", "decision", "preference", "procedure", "hypothesis"]
            if verbs == "session"
            else ["procedure", "preference", "decision"]
        )
        remember.add_argument("--kind", choices=kinds, default=kinds[0])
        forget = scope.add_parser("forget", help="remove one key (retried on a conflict)")
        forget.set_defaults(action=f"{verbs} forget")
        forget.add_argument(owner)
        forget.add_argument("key")
    get = bot.add_parser("get", help="the entries for you")
    get.set_defaults(action="bot get")
    get.add_argument("bot_id")
    get.add_argument("--tags", help="comma-separated: entries with all of them")
    remember = bot.add_parser("remember", help="a pinned entry only you see")
    remember.set_defaults(action="bot remember")
    remember.add_argument("bot_id")
    remember.add_argument("content")
    remember.add_argument("--tags", help="comma-separated topics")
    forget = bot.add_parser("forget", help="take back your part of an entry")
    forget.set_defaults(action="bot forget")
    forget.add_argument("bot_id")
    forget.add_argument("entry_id")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="agent-memory", description=__doc__.splitlines()[0])
    top.add_argument("--url", default=os.environ.get("AGENT_MEMORY_URL"), help="$AGENT_MEMORY_URL")
    top.add_argument(
        "--token", default=os.environ.get("AGENT_MEMORY_TOKEN"), help="$AGENT_MEMORY_TOKEN"
    )
    top.add_argument(
        "--act-as",
        default=os.environ.get("AGENT_MEMORY_ACT_AS"),
        help="with a service key: the person it acts for ($AGENT_MEMORY_ACT_AS)",
    )
    groups = top.add_subparsers(dest="group", required=True)

    orgs = groups.add_parser("orgs", help="organizations (admin token)").add_subparsers(
        dest="action", required=True
    )
    create_org = orgs.add_parser("create", help="create an organization")
    create_org.add_argument("name")
    create_org.add_argument("--id", help="its id (default: one is made)")
    orgs.add_parser("list", help="every organization: ids, names, people (no content)")
    delete_org = orgs.add_parser(
        "delete", help="delete an organization and everything in it (run again if cut short)"
    )
    delete_org.add_argument("org_id")

    _people_parsers(groups)

    tokens = groups.add_parser("tokens", help="tokens (admin token)").add_subparsers(
        dest="action", required=True
    )
    tokens.add_parser("issue", help="a new token for a user").add_argument("user_id")
    tokens.add_parser("revoke", help="revoke a token at once").add_argument("token_prefix")
    tokens.add_parser("list", help="your own tokens: prefixes, who issued them, when")
    _list_parsers(groups)
    _memory_parsers(groups)

    settings = groups.add_parser("settings", help="an organization's settings").add_subparsers(
        dest="action", required=True
    )
    settings.add_parser("get").add_argument("org_id")
    change = settings.add_parser("set", help="change some; 'default' resets one")
    change.add_argument("org_id")
    change.add_argument("--use", type=_switch, default=UNSET, help="memory.use")
    change.add_argument("--generate", type=_switch, default=UNSET, help="memory.generate")
    change.add_argument("--agent-memory", type=_switch, default=UNSET)
    change.add_argument("--bot-memory", type=_switch, default=UNSET)
    change.add_argument("--helper-model", type=_model, default=UNSET)
    change.add_argument("--bot-memory-model", type=_model, default=UNSET)
    change.add_argument(
        "--allowed-models", type=_models, default=UNSET, help="comma-separated, or default"
    )
    change.add_argument(
        "--auto-provision-users",
        type=_switch,
        default=UNSET,
        help="on: a service key acting for an unknown id creates that member",
    )

    purge = groups.add_parser("purge", help="remove a bot's memory entries carrying a tag")
    purge.add_argument("bot_id")
    purge.add_argument("tag", help="from:<user>, chat:<id>, org:<id> or channel:<id>")

    erase = groups.add_parser("erase", help="erase one person across an organization")
    erase.add_argument("org_id")
    erase.add_argument("user_id")
    return top


def _settings_patch(client: Client, args: argparse.Namespace) -> BaseModel:
    memory = {k: v for k, v in (("use", args.use), ("generate", args.generate)) if v is not UNSET}
    return client.patch_settings(
        args.org_id,
        memory=memory or UNSET,
        agent_memory=args.agent_memory,
        bot_memory=args.bot_memory,
        helper_model=args.helper_model,
        bot_memory_model=args.bot_memory_model,
        allowed_models=args.allowed_models,
        auto_provision_users=args.auto_provision_users,
    )


def _all_users(client: Client, org_id: str) -> dict[str, Any]:
    people: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        page = client.list_users(org_id, after=after)
        people += [u.model_dump(mode="json", by_alias=True) for u in page.users]
        if page.next is None:
            return {"users": people}
        after = page.next


def _all_orgs(client: Client) -> dict[str, Any]:
    found: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        page = client.list_organizations(after=after)
        found += [o.model_dump(mode="json", by_alias=True) for o in page.organizations]
        if page.next is None:
            return {"organizations": found}
        after = page.next


def _dumped(key: str, objects: Iterable[BaseModel]) -> dict[str, Any]:
    return {key: [o.model_dump(mode="json", by_alias=True) for o in objects]}


def _tags(value: str | None) -> list[str] | None:
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


def _memory(args: argparse.Namespace) -> dict[tuple[str, str | None], Callable[[Client], Any]]:
    """`memory ...`: a session's and an agent's commands read first and retry on a conflict."""

    def remember_session(c: Client) -> Any:
        command = m.RememberCommand(key=args.key, content=args.content, kind=args.kind)
        return c.update_session_memory(args.session_id, lambda _s, _m: command)

    def remember_agent(c: Client) -> Any:
        command = m.AgentRemember(key=args.key, content=args.content, kind=args.kind)
        return c.update_agent_memory(args.agent_id, lambda _m: command)

    return {
        ("memory", "session get"): lambda c: c.get_session_memory(args.session_id),
        ("memory", "session remember"): remember_session,
        ("memory", "session forget"): lambda c: c.update_session_memory(
            args.session_id, lambda _s, _m: m.ForgetCommand(key=args.key)
        ),
        ("memory", "agent get"): lambda c: c.get_agent_memory(args.agent_id),
        ("memory", "agent remember"): remember_agent,
        ("memory", "agent forget"): lambda c: c.update_agent_memory(
            args.agent_id, lambda _m: m.AgentForget(key=args.key)
        ),
        ("memory", "bot get"): lambda c: c.get_bot_memory(args.bot_id, tags=_tags(args.tags)),
        ("memory", "bot remember"): lambda c: c.remember_entry(
            args.bot_id, args.content, _tags(args.tags)
        ),
        ("memory", "bot forget"): lambda c: c.forget_entry(args.bot_id, args.entry_id),
    }


def _lists(args: argparse.Namespace) -> dict[tuple[str, str | None], Callable[[Client], Any]]:
    """`<collection> list`: every page, as one JSON object."""
    return {
        ("agents", "list"): lambda c: _dumped("agents", c.iter_agents()),
        ("sessions", "list"): lambda c: _dumped("sessions", c.iter_sessions(args.agent_id)),
        ("threads", "list"): lambda c: _dumped("threads", c.iter_threads(agent_id=args.agent)),
        ("bots", "list"): lambda c: _dumped("bots", c.iter_bots()),
        ("channels", "list"): lambda c: _dumped("channels", c.iter_channels()),
        ("chats", "list"): lambda c: _dumped("chats", c.iter_chats(bot_id=args.bot)),
        ("memories", "list"): lambda c: _dumped(
            "memories", c.iter_agent_memories(category=args.category, entity=args.entity)
        ),
        ("tokens", "list"): lambda c: _dumped("tokens", c.my_tokens()),
    }


def _command(args: argparse.Namespace) -> Callable[[Client], Any]:
    commands: dict[tuple[str, str | None], Callable[[Client], Any]] = {
        ("orgs", "create"): lambda c: c.create_organization(args.name, id=args.id),
        ("orgs", "list"): _all_orgs,
        ("orgs", "delete"): lambda c: {"deleted": c.delete_organization(args.org_id)},
        ("users", "create"): lambda c: c.create_user(
            args.organization_id, id=args.id, name=args.name, role=args.role
        ),
        ("users", "list"): lambda c: _all_users(c, args.organization_id),
        ("users", "add"): lambda c: c.add_user(
            args.organization_id, id=args.id, name=args.name, role=args.role
        ),
        ("users", "rename"): lambda c: c.rename_user(args.organization_id, args.user_id, args.name),
        ("users", "delete"): lambda c: c.delete_user(args.organization_id, args.user_id),
        ("service-keys", "create"): lambda c: c.create_service_key(args.organization_id, args.name),
        ("service-keys", "list"): lambda c: {
            "serviceKeys": [
                k.model_dump(mode="json", by_alias=True)
                for k in c.list_service_keys(args.organization_id)
            ]
        },
        ("service-keys", "revoke"): lambda c: c.revoke_service_key(
            args.organization_id, args.key_id
        ),
        ("tokens", "issue"): lambda c: c.issue_token(args.user_id),
        ("tokens", "revoke"): lambda c: c.revoke_token(args.token_prefix),
        ("settings", "get"): lambda c: c.get_settings(args.org_id),
        ("settings", "set"): lambda c: _settings_patch(c, args),
        ("purge", None): lambda c: {"removed": c.purge_bot_memory(args.bot_id, args.tag)},
        ("erase", None): lambda c: c.erase_user(args.org_id, args.user_id),
        **_lists(args),
        **_memory(args),
    }
    return commands[(args.group, getattr(args, "action", None))]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.url or not args.token:
        print(
            "error: set AGENT_MEMORY_URL and AGENT_MEMORY_TOKEN (or --url, --token)",
            file=sys.stderr,
        )
        return 2
    with Client(base_url=args.url, token=args.token, act_as=args.act_as) as client:
        try:
            answer = _command(args)(client)
        except AgentMemoryError as error:
            where = f" (at {'.'.join(str(p) for p in error.path)})" if error.path else ""
            print(f"error: {error.code}: {error.message}{where}", file=sys.stderr)
            return 1
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(mode="json", by_alias=True)
    print(json.dumps(answer if answer is not None else {"ok": True}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
