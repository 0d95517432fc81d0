"""Moving a deployment (`agent-memory-admin recipient | export | import`, docs/adr/0085):
a populated one-machine deployment moves into fresh ones (another key file; the embedded
AWS with KMS), and every person's export, which is their read routes' answers, is the same
byte for byte there; the archive holds no content in the clear; a tampered archive, an
occupied target and an import cut short are handled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.sqlite_rows import decode_record
from agent_memory.domain.tasks.learning_changes import FactChange
from infra.move import cli as admin_cli
from tests.conftest import ADMIN_TOKEN, Api, User
from tests.support.bot_memory import MemoryBot
from tests.support.bots import make_bot, make_channel, make_chat
from tests.support.move_recall import NOTES, SAID, recalled, remembers_by_meaning, source_vectors
from tests.support.plaintext import all_text
from tests.support.requests import agent, get, post, session

SECRETS = (
    "My cat is called Miso",
    "Plan the trip to Lisbon",
    "Ana likes green tea",
    "Ben's pin",
    "breaks for tea at four",
    "Ana is vegetarian",
    "I like rooibos tea",
    "I sleep badly",
    "My sister lives in Porto",
    "I adopted a cat named Miso",
    "spicy ramen",
    "plays the cello",
    "desk is by the window",
)


@dataclass
class Source:
    path: Path
    people: list[User]
    exports: dict[str, bytes]
    org_id: str
    session_id: str
    # A chat turn left open with a confide: its learning waits for the turn to complete.
    waiting: tuple[str, str, str]
    # Ana's thread with semantic recall on, and what recall by meaning answers her.
    recalling: str
    recalled: dict[str, list[str]]


@contextmanager
def local(path: Path) -> Iterator[tuple[Api, Any, Any]]:
    """`make run`'s wiring in `path` (SQLite, the key file, the learning workflow run in
    process), served in process: (api, services, the learning runner)."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import build_services, local_adapters, step_services
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token
    from infra.local.runner import learning_workflow

    settings = load_settings(
        {"DEFAULT_MODEL": "local/rules", "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN)}
    )
    _name, definition, tasks = learning_workflow()
    adapters = local_adapters(settings, path, workflow=definition, tasks=tasks)
    services = build_services(settings, adapters)
    step_services.use(services)
    runner: Any = adapters.orchestrator
    runner.run()
    try:
        with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
            yield Api(client), services, runner
    finally:
        runner.close()
        step_services.reset()
        store: Any = adapters.store  # the SQLite store's own: its connections
        store.close()


def exports(api: Api, people: list[User]) -> dict[str, bytes]:
    """Each person's export without its first line's time: their reads, byte for byte."""
    found = {}
    for person in people:
        answer = api.client.get("/v1/me/export", headers=person.headers)
        assert answer.status_code == 200, answer.text
        first, rest = answer.content.split(b"\n", 1)
        header = json.loads(first)
        header.pop("exportedAt")
        found[person.id] = json.dumps(header).encode() + b"\n" + rest
    return found


def populate(api: Api, services: Any) -> tuple[str, list[User], str, tuple[str, str, str]]:
    org = api.org()
    ana, ben = api.user(org), api.user(org)
    agent_id = agent(api, ana, members=(ben.id,))
    post(api, ana, f"/v1/agents/{agent_id}/publish", {})
    command = {"_tag": "Remember", "key": "tone", "kind": "preference", "content": "Be brief."}
    post(api, ana, f"/v1/agents/{agent_id}/memory", {"expected": 0, "command": command})
    sid = session(api, ana, agent_id, model="local/rules")
    items = [{"role": "user", "content": "My cat is called Miso."}]
    post(api, ana, f"/v1/sessions/{sid}/turns", {"items": items})
    thread_id = post(api, ana, "/v1/threads", {"agentId": agent_id})["thread"]["id"]
    messages = [{"role": "user", "content": "Plan the trip to Lisbon."}]
    post(api, ana, f"/v1/threads/{thread_id}/messages", {"messages": messages})
    bot = make_bot(api, ana, {ben.id: "read"})
    chat = make_chat(api, ana, bot["id"])
    started = post(api, ana, f"/v1/chats/{chat['id']}/turns", {"input": "I like green tea."})
    items_of = api.client.get(f"/v1/chats/{chat['id']}/items", headers=ana.headers).json()
    said = [i["id"] for i in items_of["items"] if i["turnId"] == started["turn"]["id"]]
    change = FactChange(op="fact", content="Ana likes green tea.", topics=[], sources=said)
    MemoryBot(services.bot_memory).learn(chat["id"], change)
    # A group chat's fact is for the channel's members: a second audience.
    channel = make_channel(api, ana, ben)
    group = make_chat(api, ana, bot["id"], channelId=channel["id"])
    turn = post(api, ben, f"/v1/chats/{group['id']}/turns", {"input": "Tea break at four."})
    items_of = api.client.get(f"/v1/chats/{group['id']}/items", headers=ben.headers).json()
    said = [i["id"] for i in items_of["items"] if i["turnId"] == turn["turn"]["id"]]
    change = FactChange(
        op="fact", content="The team breaks for tea at four.", topics=[], sources=said
    )
    MemoryBot(services.bot_memory).learn(group["id"], change)
    about = {
        "category": "fact",
        "content": "Ana is vegetarian.",
        "entity": {"type": "actor", "id": ana.id},
    }
    post(api, ben, "/v1/agent_memories", about)
    for person, text in ((ana, "Ana's pin."), (ben, "Ben's pin.")):
        body = {"command": {"_tag": "Remember", "content": text}}
        post(api, person, f"/v1/bots/{bot['id']}/memory", body)
    waiting = leave_waiting(api, org, ana, bot["id"])
    return org, [ana, ben], sid, waiting


def leave_waiting(api: Api, org: str, ana: User, bot_id: str) -> tuple[str, str, str]:
    """A confide in a turn left open: its learning run waits for the turn. (bot, chat, turn)"""
    settings = {"botMemoryModel": "local/rules"}
    changed = api.client.patch(
        f"/v1/organizations/{org}/settings", json=settings, headers=api.admin
    )
    assert changed.status_code == 200, changed.text
    chat = make_chat(api, ana, bot_id)
    turn = post(api, ana, f"/v1/chats/{chat['id']}/turns", {"input": "I like rooibos tea."})
    turn_id = turn["turn"]["id"]
    confide = {"text": "Remember that I sleep badly."}
    post(api, ana, f"/v1/chats/{chat['id']}/turns/{turn_id}/confide", confide)
    return bot_id, chat["id"], turn_id


def waits_then_learns(api: Api, runner: Any, ana: User, waiting: tuple[str, str, str]) -> None:
    """The moved run still waits for its turn; the turn completes here and it learns."""
    bot_id, chat_id, turn_id = waiting

    def run() -> dict[str, Any]:
        runs = get(api, ana, f"/v1/bots/{bot_id}/learning")["executions"]
        (found,) = [r for r in runs if r["turnId"] == turn_id]
        return dict(found)

    assert run()["status"] == "waiting"
    post(api, ana, f"/v1/chats/{chat_id}/turns/{turn_id}/complete", {})
    assert runner.idle(60), "the released learning did not finish"
    assert run()["status"] == "succeeded"
    entries = get(api, ana, f"/v1/bots/{bot_id}/memory")["entries"]
    assert [e for e in entries if {"chat": chat_id, "item": "i-01"} in e["sources"]]


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes, bytes]:
    code = admin_cli.main(list(argv))
    out, err = capsysbinary.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Source:
    path = tmp_path_factory.mktemp("source")
    with local(path) as (api, services, runner):
        org, people, sid, waiting = populate(api, services)
        recalling = remembers_by_meaning(api, *people)
        assert runner.idle(60), "the session's learning did not finish"
        before = exports(api, people)
        found = recalled(api, people[0], recalling)
        memories = get(api, people[0], "/v1/agent_memories?limit=10")["data"]
        thread = get(api, people[0], f"/v1/threads/{recalling}/messages")["messages"]
    shown = b"".join(before.values()).decode()
    assert all(secret in shown for secret in SECRETS)
    # By meaning: the cat or the answer to it (a vector embeds a message after the one it
    # answers), not in the context's last 2; the cello before the more important desk.
    cat = [m["id"] for m in thread if m["content"] == SAID[1]]
    answered = [thread[i + 1]["id"] for i, m in enumerate(thread) if m["id"] in cat]
    assert found["messages"]
    assert set(found["messages"]) <= {*cat, *answered}
    cello = [m["id"] for m in memories if m["content"] == NOTES[0][0]]
    assert found["memories"][:1] == cello
    return Source(path, people, before, org, sid, waiting, recalling, found)


def archive_for(
    source: Source, capsysbinary: pytest.CaptureFixture[bytes], path: Path, *target: str
) -> Path:
    """A recipient made on the target (`target`: its `--data-dir`, or none for AWS), and the
    source's archive for it in `path`; nothing either command says holds content."""
    code, public, _ = run(capsysbinary, *target, "recipient")
    assert code == 0
    assert public.startswith(b"amrk1_")
    argv = ("--data-dir", str(source.path), "export", "--recipient", public.decode().strip())
    code, archive, said = run(capsysbinary, *argv)
    assert code == 0, said
    assert said.startswith(b"exported ")
    scanned = all_text([decode_record(json.dumps(r["row"])) for r in _rows(archive)])
    leaked = [s for s in SECRETS if s.encode() in archive + said + public or s in scanned]
    assert leaked == []
    # Nor the source's vectors (derived from content): the target makes its own.
    assert not [v for v in source_vectors(source.path) if v.encode() in archive]
    path.write_bytes(archive)
    return path


def _rows(archive: bytes) -> list[dict[str, Any]]:
    return [r for r in (json.loads(line) for line in archive.splitlines()) if "row" in r]


def imported(capsysbinary: pytest.CaptureFixture[bytes], archive: Path, *target: str) -> int:
    code, out, err = run(capsysbinary, *target, "import", str(archive))
    assert not [s for s in SECRETS if s.encode() in out + err]
    return code


def learns_on(api: Api, runner: Any, ana: User, session_id: str) -> dict[str, Any]:
    """A new turn in a moved session is learned from where the source stopped: its run reads
    the new item alone, and the memory keeps what was learned before. Answers the memory."""
    url = f"/v1/sessions/{session_id}"
    before = get(api, ana, f"{url}/memory")
    assert before["processed"] == ["i-01"]
    assert before["entries"]
    items = [{"role": "user", "content": "I prefer short answers."}]
    turn = post(api, ana, f"{url}/turns", {"items": items})["turn"]
    assert turn["learning"] == "started"
    assert runner.idle(60), "the session's learning did not finish"
    runs = get(api, ana, f"{url}/learning")["executions"]
    # Newest first: the new run read i-02 alone, the moved one i-01.
    assert [r["itemIds"] for r in runs if r["status"] == "succeeded"] == [["i-02"], ["i-01"]]
    after = get(api, ana, f"{url}/memory")
    assert after["processed"] == ["i-01", "i-02"]
    assert set(after["entries"]) > set(before["entries"])
    return dict(after)


def test_a_deployment_moves_to_another_machine_as_its_people_read_it(
    source: Source, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    target = ("--data-dir", str(tmp_path / "target"))
    archive = archive_for(source, capsysbinary, tmp_path / "archive", *target)
    assert imported(capsysbinary, archive, *target) == 0
    with local(tmp_path / "target") as (api, _services, runner):
        assert exports(api, source.people) == source.exports
        assert recalled(api, source.people[0], source.recalling) == source.recalled
        learned = learns_on(api, runner, source.people[0], source.session_id)
        waits_then_learns(api, runner, source.people[0], source.waiting)
    # Once done, the same archive again changes nothing (the new turn stays); the recipient's
    # key pair is gone.
    assert imported(capsysbinary, archive, *target) == 0
    with local(tmp_path / "target") as (api, _services, _runner):
        memory = get(api, source.people[0], f"/v1/sessions/{source.session_id}/memory")
        assert memory == learned
    other = archive_for(source, capsysbinary, tmp_path / "other", *target)
    assert imported(capsysbinary, other, *target) == 2  # its organization is there now


def test_a_deployment_moves_into_the_embedded_aws_under_kms(
    source: Source, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    from dataclasses import replace

    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters, build_services
    from agent_memory.persistence.limits import ProcessCounters
    from tests.support.aws import embedded_settings

    with embedded_settings() as (session, _local, settings):
        archive = archive_for(source, capsysbinary, tmp_path / "archive")
        # This AWS keeps no vectors (no S3 Vectors index): refused unless told so, since a
        # forgotten VECTOR_BUCKET would leave recall by meaning empty there.
        code, _out, err = run(capsysbinary, "import", str(archive))
        assert code == 2
        assert b"VECTOR_BUCKET is not set" in err
        code, out, _err = run(capsysbinary, "import", str(archive), "--without-recall")
        assert code == 0
        assert out.strip().endswith(b"semantic recall: nothing embedded (--without-recall)")
        adapters = replace(aws_adapters(settings, session), counters=ProcessCounters())
        services = build_services(settings, adapters)
        with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
            assert exports(Api(client), source.people) == source.exports


def test_a_changed_or_cut_archive_is_refused_and_nothing_is_written(
    source: Source, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.bootstrap import STORE_FILE

    target = ("--data-dir", str(tmp_path / "target"))
    archive = archive_for(source, capsysbinary, tmp_path / "archive", *target)
    lines = archive.read_bytes().splitlines(keepends=True)
    changed = tmp_path / "changed"
    # Ben made an admin: a plaintext field of a row, changed by one who carries the archive.
    changed.write_bytes(b"".join(line.replace(b'"member"', b'"admin"') for line in lines))
    assert changed.read_bytes() != archive.read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(b"".join(lines[:-1]))
    for refused in (changed, cut):
        code, _out, err = run(capsysbinary, *target, "import", str(refused))
        assert code == 2
        assert err.startswith(
            (b"refused: the archive does not match", b"refused: the archive has no end")
        )
    store = SqliteStore(tmp_path / "target" / STORE_FILE)
    assert store.get(f"ORG#{source.org_id}", "META") is None
    store.close()


def test_an_import_into_an_occupied_deployment_is_refused(
    source: Source, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    target = ("--data-dir", str(tmp_path / "target"))
    archive = archive_for(source, capsysbinary, tmp_path / "archive", *target)
    with local(tmp_path / "target") as (api, _services, _runner):
        api.org(source.org_id, name="Already here")
    code, _out, err = run(capsysbinary, *target, "import", str(archive))
    assert code == 2
    assert source.org_id.encode() in err


def test_an_import_cut_short_runs_again_to_the_same_deployment(
    source: Source, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    from agent_memory.adapters.local_cipher import LocalCipher
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.bootstrap import KEY_FILE, STORE_FILE
    from infra.move.archive import import_archive

    root = tmp_path / "target"
    archive = archive_for(source, capsysbinary, tmp_path / "archive", "--data-dir", str(root))
    store = SqliteStore(root / STORE_FILE)

    class Stopped(Exception):
        pass

    class StopsAfterThree:
        writes = 0

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def write(self, actions: Any) -> None:
            self.writes += 1
            if self.writes > 3:
                raise Stopped
            store.write(actions)

    lines = archive.read_bytes().splitlines(keepends=True)
    with pytest.raises(Stopped):
        import_archive(lines, lines, StopsAfterThree(), LocalCipher(root / KEY_FILE))
    store.close()
    assert imported(capsysbinary, archive, "--data-dir", str(root)) == 0
    with local(root) as (api, services, _runner):
        assert exports(api, source.people) == source.exports
        assert recalled(api, source.people[0], source.recalling) == source.recalled
        moved = [r for r in services.store.rows() if not r["pk"].startswith("MOVE#")]
    assert len(moved) == len(_rows(archive.read_bytes()))
