"""A black-box check of any deployment of agent-memory, as a client sees it.

It makes its own organizations and people with the admin token, walks each seed's main path
over HTTP(S) (session memory with learning, agent memory, agent memories, a bot with a confide
and its learning, an agent's memory options with threads, working memory and recall), checks
that a reader who must not see an object gets 404, and deletes the organizations it made at the
end (with everything in them: `DELETE /v1/admin/organizations/{orgId}`), even when a step
fails. Standard library only, so it runs wherever Python 3.11 does:

    python3 -m e2e.suite --base-url https://<api> --admin-token <token> [--model local/rules]

`--model` is the model learning uses; the deployment must allow it (`ALLOWED_MODELS`).
The exit status is 0 when every step passed; each step prints one line, a failure says why.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Json = Any


class Failed(Exception):
    """A step's expectation that the deployment did not meet."""


@dataclass
class Answer:
    status: int
    body: Json

    def expect(self, status: int, what: str) -> Json:
        if self.status != status:
            raise Failed(f"{what}: HTTP {self.status} (wanted {status}): {self.body}")
        return self.body


@dataclass
class Http:
    base_url: str
    timeout: float = 30.0

    def __post_init__(self) -> None:
        # urllib opens file: and other schemes too; only the API's may be called.
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"the base URL must be http(s): {self.base_url!r}")

    def call(
        self, method: str, path: str, token: str, body: Json = None, act_as: str | None = None
    ) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        if act_as is not None:
            headers["Act-As"] = act_as
        request = urllib.request.Request(  # noqa: S310 (the scheme is checked above)
            f"{self.base_url.rstrip('/')}{path}", data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # noqa: S310
                return Answer(reply.status, _json(reply.read()))
        except urllib.error.HTTPError as error:
            return Answer(error.code, _json(error.read()))


def _json(raw: bytes) -> Json:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


@dataclass
class Person:
    """A person as the suite calls for them: their own token, or (`act_as`) the
    organization's service key acting for them, as a platform's backend does."""

    org: str
    id: str
    token: str
    act_as: str | None = None

    def call(self, http: Http, method: str, path: str, body: Json = None) -> Answer:
        return http.call(method, path, self.token, body, self.act_as)


@dataclass
class Made:
    """What the run created: its organizations hold all the rest, and go whole at the end."""

    orgs: list[str] = field(default_factory=list)
    people: list[Person] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)  # (organization, service key id)


class Suite:
    def __init__(
        self, http: Http, admin_token: str, model: str, wait_s: float, platform: bool = False
    ) -> None:
        self.http = http
        # Every person reached through their organization's service key and `Act-As`.
        self.platform = platform
        self.admin = admin_token
        self.model = model
        self.wait_s = wait_s
        self.made = Made()
        self.tag = f"e2e-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        self.ids: dict[str, str] = {}
        self.keys: dict[str, str] = {}  # organization -> its service key

    # -- HTTP as one person ---------------------------------------------------------------

    def get(self, who: Person, path: str) -> Answer:
        return who.call(self.http, "GET", path)

    def post(self, who: Person, path: str, body: Json, status: int = 200) -> Json:
        return who.call(self.http, "POST", path, body).expect(status, f"POST {path}")

    def patch(self, who: Person, path: str, body: Json) -> Json:
        return who.call(self.http, "PATCH", path, body).expect(200, f"PATCH {path}")

    def until(self, what: str, probe: Callable[[], bool]) -> None:
        """Learning runs in the background: wait for what it should bring, at most wait_s."""
        deadline = time.monotonic() + self.wait_s
        while not probe():
            if time.monotonic() > deadline:
                raise Failed(f"{what}: not seen within {self.wait_s:.0f} s")
            time.sleep(0.5)

    # -- the steps --------------------------------------------------------------------------

    def health(self) -> None:
        answer = self.http.call("GET", "/healthz", "")
        if answer.body != {"status": "ok"}:
            raise Failed(f"GET /healthz: HTTP {answer.status}: {answer.body}")

    def tenants(self) -> None:
        """Two organizations: Ana (admin) and Ben (member) in one, Cy in the other."""
        for name in ("a", "b"):
            org = self.http.call(
                "POST", "/v1/admin/organizations", self.admin, {"name": f"{self.tag}-{name}"}
            ).expect(201, "POST /v1/admin/organizations")
            self.made.orgs.append(org["id"])
        a, b = self.made.orgs
        self.ana = self._person(a, "admin")
        self.ben = self._person(a, "member")
        self.cy = self._person(b, "admin")
        self.patch(
            self.ana,
            f"/v1/organizations/{a}/settings",
            # The helper model learns agent memory; the bot memory model, the memory bot's.
            {
                "memory": {"use": True, "generate": True},
                "helperModel": self.model,
                "botMemoryModel": self.model,
            },
        )

    def _person(self, org: str, role: str) -> Person:
        if self.platform:
            person = self._platform_person(org, role)
        else:
            user = self.http.call(
                "POST", "/v1/admin/users", self.admin, {"organizationId": org, "role": role}
            ).expect(201, "POST /v1/admin/users")
            person = Person(org, user["id"], user["token"])
        self.made.people.append(person)
        return person

    def _platform_person(self, org: str, role: str) -> Person:
        """A person without a token, made by the organization's service key."""
        key = next((k for o, k in self.made.keys if o == org), None)
        if key is None:
            body = {"name": f"{self.tag} backend"}
            made = self.http.call("POST", f"/v1/organizations/{org}/service-keys", self.admin, body)
            created = made.expect(201, "POST service-keys")
            self.made.keys.append((org, created["id"]))
            self.keys[org] = key = created["key"]
        else:
            key = self.keys[org]
        path = f"/v1/organizations/{org}/users"
        user = self.http.call("POST", path, key, {"role": role}).expect(201, f"POST {path}")
        return Person(org, user["user"]["id"], key, act_as=user["user"]["id"])

    def session_memory(self) -> None:
        """Seed 000: a turn is learned into the session's memory, served as text."""
        agent = self.post(self.ana, "/v1/agents", {"name": "Trip planner"}, 201)["agent"]["id"]
        body = {"agentId": agent, "model": self.model}
        session = self.post(self.ana, "/v1/sessions", body, 201)["session"]["id"]
        self.ids |= {"agent": agent, "session": session}
        items = [{"role": "user", "content": "Remember that my budget is 1500 EUR"}]
        turn = self.post(self.ana, f"/v1/sessions/{session}/turns", {"items": items})["turn"]
        if turn["learning"] != "started":
            raise Failed(f"the turn's learning did not start: {turn}")

        def learned() -> bool:
            memory = self.get(self.ana, f"/v1/sessions/{session}/memory").expect(200, "memory")
            return "1500" in json.dumps(memory)

        self.until("the session's memory of the budget", learned)
        text = self.get(self.ana, f"/v1/sessions/{session}/memory/text").expect(200, "text")
        if "1500" not in text["text"]:
            raise Failed(f"the memory text leaves the budget out: {text}")
        runs = self.get(self.ana, f"/v1/sessions/{session}/learning").expect(200, "learning")
        if not any(e["status"] == "succeeded" for e in runs["executions"]):
            raise Failed(f"no succeeded execution listed: {runs}")

    def agent_memory(self) -> None:
        """Seed 000: the agent learned from the session's turn (its run is listed), and a
        lasting entry remembered by hand is served in the agent's memory text."""
        agent = self.ids["agent"]

        def learned() -> bool:
            runs = self.get(self.ana, f"/v1/agents/{agent}/learning").expect(200, "learning")
            return any(e["status"] == "succeeded" for e in runs["executions"])

        self.until("a succeeded agent learning run", learned)
        memory = self.get(self.ana, f"/v1/agents/{agent}/memory").expect(200, "agent memory")
        shipping = "Orders ship by express."
        remember = {"_tag": "Remember", "key": "shipping", "content": shipping}
        command = {"expected": memory["version"], "command": remember | {"kind": "procedure"}}
        self.post(self.ana, f"/v1/agents/{agent}/memory", command)
        text = self.get(self.ana, f"/v1/agents/{agent}/memory/text").expect(200, "text")
        if shipping not in text["text"]:
            raise Failed(f"the agent's memory text leaves the entry out: {text}")
        log = self.get(self.ana, f"/v1/agents/{agent}/memory/log").expect(200, "log")
        if not any("shipping" in change["keys"] for change in log["changes"]):
            raise Failed(f"the agent's memory log misses the change: {log}")

    def agent_memories(self) -> None:
        """Seed 004: a memory saved, read back, recalled by importance and by meaning."""
        body = {"category": "preference", "content": "Always wants express shipping."}
        saved = self.post(self.ana, "/v1/agent_memories", body | {"importance": 0.9}, 201)
        self.ids["agent_memory"] = saved["id"]
        got = self.get(self.ana, f"/v1/agent_memories/{saved['id']}").expect(200, "GET memory")
        if got["content"] != body["content"]:
            raise Failed(f"the memory reads back as {got['content']!r}")
        for recall in ({"limit": 5}, {"limit": 5, "query": "how should orders ship?"}):
            found = self.post(self.ana, "/v1/agent_memories/recall", recall)
            if saved["id"] not in [m["id"] for m in found["data"]]:
                raise Failed(f"recall {recall} misses the memory: {found}")

    def bot_memory(self) -> None:
        """Seed 002: a person's turn with a confide; the memory bot learns for that person."""
        bot = self.post(self.ana, "/v1/bots", {"name": "Concierge"}, 201)["bot"]["id"]
        chat = self.post(self.ana, "/v1/chats", {"botId": bot}, 201)["chat"]["id"]
        self.ids |= {"bot": bot, "chat": chat}
        base = f"/v1/chats/{chat}/turns"
        turn = self.post(self.ana, base, {"input": "I am vegetarian."}, 201)["turn"]["id"]
        answer = self.post(self.ana, f"{base}/{turn}/confide", {"text": "I forgot it."})
        if not isinstance(answer.get("answer"), str):
            raise Failed(f"the confide answered {answer}")
        said = {"items": [{"role": "assistant", "content": "Noted, no meat."}]}
        self.post(self.ana, f"{base}/{turn}/complete", said)

        def learned() -> bool:
            memory = self.get(self.ana, f"/v1/bots/{bot}/memory").expect(200, "bot memory")
            return any("vegetarian" in e["content"] for e in memory["entries"])

        self.until("the bot memory of the diet", learned)

    def threads(self) -> None:
        """Seed 003: memory options published and active; a thread's context holds the last
        messages and the working-memory tool, and another thread recalls by meaning."""
        agent = self.ids["agent"]
        # With the observer off, a thread is indexed for recall in batches of `lastMessages`
        # (ADR 0074): two messages make one batch.
        options = {"lastMessages": 2, "workingMemory": True, "semanticRecall": True}
        self.patch(self.ana, f"/v1/agents/{agent}/draft", {"memory": {"options": options}})
        version = self.post(self.ana, f"/v1/agents/{agent}/publish", {}, 201)["version"]
        self.post(self.ana, f"/v1/agents/{agent}/versions/{version['number']}/activate", {})
        first = self._thread(agent)
        said = [
            {"role": "user", "content": "I live in Lisbon, near the river."},
            {"role": "assistant", "content": "Lisbon is lovely."},
        ]
        self.post(self.ana, f"/v1/threads/{first}/messages", {"messages": said})
        self.ids["thread"] = first
        put = self.ana.call(
            self.http, "PUT", f"/v1/threads/{first}/working-memory", {"content": "- Lisbon"}
        )
        put.expect(200, "PUT working-memory")
        second = self._thread(agent)
        ask = {"message": {"role": "user", "content": "Which city do I live in?"}}
        context: dict[str, Any] = {}

        def recalled() -> bool:
            context.update(self.post(self.ana, f"/v1/threads/{second}/context", ask))
            return "Lisbon" in json.dumps(context["recalled"])

        self.until("the other thread's message recalled by meaning", recalled)
        if not any(t["name"] == "updateWorkingMemory" for t in context["tools"]):
            raise Failed(f"the context has no working-memory tool: {context['tools']}")
        if "Lisbon" not in json.dumps(context["workingMemory"]):
            raise Failed(f"the context's working memory is {context['workingMemory']!r}")
        self.get(self.ana, f"/v1/threads/{first}/observations").expect(200, "observations")

    def _thread(self, agent: str) -> str:
        thread = self.post(self.ana, "/v1/threads", {"agentId": agent}, 201)["thread"]
        return str(thread["id"])

    def access(self) -> None:
        """Another person of the organization, and a person of another, see nothing of Ana's."""
        private = (
            f"/v1/sessions/{self.ids['session']}",
            f"/v1/sessions/{self.ids['session']}/memory",
            f"/v1/threads/{self.ids['thread']}/messages",
            f"/v1/chats/{self.ids['chat']}/items",
        )
        # Agent memories belong to the organization (ADR 0037): only the other one is refused.
        of_org = (
            f"/v1/agents/{self.ids['agent']}",
            f"/v1/bots/{self.ids['bot']}/memory",
            f"/v1/agent_memories/{self.ids['agent_memory']}",
        )
        for who, paths in ((self.ben, private), (self.cy, private + of_org)):
            for path in paths:
                seen = self.get(who, path)
                if seen.status != 404:
                    raise Failed(f"GET {path} as {who.id} of {who.org}: HTTP {seen.status}")

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> bool:
        steps = (
            self.health,
            self.tenants,
            self.session_memory,
            self.agent_memory,
            self.agent_memories,
            self.bot_memory,
            self.threads,
            self.access,
        )
        passed = True
        for step in steps:
            started = time.monotonic()
            try:
                step()
            except Exception as error:  # every failure is reported, then the clean-up runs
                say(f"FAIL {step.__name__}: {type(error).__name__}: {error}")
                passed = False
                break
            say(f"ok   {step.__name__} ({time.monotonic() - started:.1f} s)")
        return self.clean_up() and passed

    def clean_up(self) -> bool:
        """Delete every organization the run made, with everything in it (people and their
        tokens, service keys, agents, sessions, threads, memories, bots, chats), then check
        that none is listed any more and that no person's credentials still work."""
        problems: list[str] = []
        for org in self.made.orgs:
            path = f"/v1/admin/organizations/{org}"
            gone = self.http.call("DELETE", path, self.admin)
            # 404: nothing of it is left (a run cut short that was cleaned up by hand).
            if gone.status not in (200, 404):
                problems.append(f"DELETE {path}: HTTP {gone.status}: {gone.body}")
        try:
            listed = self.organizations()
        except Failed as error:
            problems.append(str(error))
        else:
            problems += [f"organization {o} is still listed" for o in self.made.orgs if o in listed]
        for person in self.made.people:
            if person.call(self.http, "GET", "/v1/me").status != 401:
                problems.append(f"{person.id}'s credentials still work")
        for problem in problems:
            say(f"FAIL clean_up: {problem}")
        if not problems:
            say(f"ok   clean_up ({len(self.made.orgs)} organizations deleted)")
        return not problems

    def organizations(self) -> set[str]:
        """Every organization the deployment lists (the admin token's paged list)."""
        found: set[str] = set()
        after = ""
        while True:
            path = "/v1/admin/organizations?limit=100" + (f"&after={after}" if after else "")
            page = self.http.call("GET", path, self.admin).expect(200, "GET organizations")
            found |= {o["id"] for o in page["organizations"]}
            if not page["next"]:
                return found
            after = page["next"]


def say(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.suite", description=__doc__)
    parser.add_argument("--base-url", required=True, help="the API's URL")
    parser.add_argument("--admin-token", required=True, help="the deployment's admin token")
    parser.add_argument("--model", default="local/rules", help="a model the deployment allows")
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for learning")
    parser.add_argument(
        "--platform",
        action="store_true",
        help="reach every person through a service key and Act-As, as a platform's backend does",
    )
    args = parser.parse_args(argv)
    suite = Suite(Http(args.base_url), args.admin_token, args.model, args.wait, args.platform)
    say(f"agent-memory e2e against {args.base_url} as {suite.tag}")
    return 0 if suite.run() else 1


if __name__ == "__main__":
    sys.exit(main())
