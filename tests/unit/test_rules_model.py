"""`local/rules`: plain user statements become changes, in the protocol every model speaks."""

from __future__ import annotations

import pytest

from agent_memory.adapters.rules_model import RulesModel
from agent_memory.domain.proposals import (
    LASTING_KINDS,
    MEMORY_KINDS,
    ProposedChange,
    ProposedForget,
    ProposedRemember,
    parse_changes,
)
from agent_memory.domain.secrets import key_secret, looks_secret
from agent_memory.ports import EvidenceItem, KnownEntry, LearningRequest, ModelReply, Usage
from tests.support.secret_corpus import SECRETS


def _ask(
    *items: EvidenceItem,
    memory: tuple[KnownEntry, ...] = (),
    kinds: tuple[str, ...] = MEMORY_KINDS,
    pool: str = "session",
    person: str | None = None,
) -> tuple[ModelReply, tuple[ProposedChange, ...]]:
    request = LearningRequest(pool, "instructions", items, memory, kinds, person)
    reply = RulesModel().propose(request)
    return reply, parse_changes(reply.text)


def _user(item_id: str, text: str) -> EvidenceItem:
    return EvidenceItem(item_id, "user", text)


def test_remember_that_my_budget_becomes_a_budget_fact_sourced_to_the_item() -> None:
    reply, changes = _ask(_user("i-02", "Remember that my budget is 1500 EUR"))
    assert changes == (
        ProposedRemember("budget", "The user's budget is 1500 EUR.", "fact", ("i-02",)),
    )
    assert reply.model == "local/rules"
    assert reply.usage == Usage(0, 0)


def test_each_statement_form_gives_its_kind() -> None:
    _, changes = _ask(
        _user(
            "i-1",
            "I prefer short answers with a list of changes. "
            "Always run the tests before you report that work is done! "
            "Let's use Effect for all new services.",
        ),
        _user("i-2", "We decided to fly on Tuesday. Never push to main on Fridays."),
        _user("i-3", "My hotel is the Adler. I don't like early flights."),
    )
    found = {change.key: change for change in changes}
    assert {
        key: (c.kind, c.sources) for key, c in found.items() if isinstance(c, ProposedRemember)
    } == {
        "short-answers-list-changes": ("preference", ("i-1",)),
        "run-tests-report-work": ("procedure", ("i-1",)),
        "use-effect-new-services": ("decision", ("i-1",)),
        "fly-tuesday": ("decision", ("i-2",)),
        "never-push-main-fridays": ("procedure", ("i-2",)),
        "hotel": ("fact", ("i-3",)),
        "no-early-flights": ("preference", ("i-3",)),
    }
    remember = found["short-answers-list-changes"]
    assert isinstance(remember, ProposedRemember)
    assert remember.content == "The user prefers short answers with a list of changes."


def test_agent_pools_get_only_lasting_kinds_and_say_who() -> None:
    _, changes = _ask(
        _user("i-1", "Remember that my budget is 1500 EUR. I like short answers."),
        kinds=LASTING_KINDS,
        pool="agent",
        person="Ana",
    )
    assert changes == (
        ProposedRemember("short-answers", "Ana likes short answers.", "preference", ("i-1",)),
    )


def test_tool_app_and_assistant_items_are_ignored() -> None:
    _, changes = _ask(
        EvidenceItem("i-1", "tool", "Remember that my budget is 9999 EUR"),
        EvidenceItem("i-2", "user", "Remember that my budget is 9999 EUR", app="crm"),
        EvidenceItem("i-3", "assistant", "I prefer long answers. My name is Bot."),
        EvidenceItem("i-4", "notice", "Always deploy on Fridays."),
    )
    assert changes == ()


def test_existing_keys_are_reused_for_the_same_fact() -> None:
    memory = (KnownEntry("trip-budget", "The trip budget is 1500 EUR.", "fact", "active"),)
    _, changes = _ask(_user("i-5", "My budget is 2000 EUR now."), memory=memory)
    assert [(c.key, c.sources) for c in changes] == [("trip-budget", ("i-5",))]


def test_one_change_per_key_the_latest_statement_wins() -> None:
    _, changes = _ask(
        _user("i-1", "My budget is 1500 EUR."),
        _user("i-2", "Actually no. My budget is 1800 EUR."),
    )
    assert changes == (
        ProposedRemember("budget", "The user's budget is 1800 EUR.", "fact", ("i-2",)),
    )


def test_forget_names_the_matching_active_entry() -> None:
    memory = (
        KnownEntry("budget", "The trip budget is 1500 EUR.", "fact", "active"),
        KnownEntry("old-hotel", "Hotel Adler.", "fact", "active"),
    )
    _, changes = _ask(
        _user("i-7", "Please forget about my budget."),
        _user("i-8", "Forget that the old hotel was booked"),
        _user("i-9", "Forget about the weather."),
        memory=memory,
    )
    assert changes == (ProposedForget("budget", ("i-7",)), ProposedForget("old-hotel", ("i-8",)))


def test_retracted_keys_are_not_brought_back() -> None:
    memory = (KnownEntry("budget", "The trip budget is 1500 EUR.", "fact", "retracted"),)
    _, changes = _ask(_user("i-1", "My budget is 1500 EUR. Forget my budget."), memory=memory)
    assert changes == ()


def test_secrets_are_never_proposed() -> None:
    _, changes = _ask(
        _user(
            "i-1",
            "Remember that my password is hunter22. My API key is sk-abcdefghijklmnop1234. "
            "Remember https://example.com/invite/Xk29aPq7. My budget is 1500 EUR.",
        )
    )
    assert [c.key for c in changes] == ["budget"]
    assert all(looks_secret(c.to_dict().get("content", "")) is None for c in changes)


@pytest.mark.parametrize(("text", "_kind"), SECRETS)
def test_a_statement_that_holds_a_secret_is_not_extracted(text: str, _kind: str) -> None:
    _, changes = _ask(
        _user("i-1", f"Remember that {text}"), _user("i-2", f"My {text}"), _user("i-3", text)
    )
    assert changes == ()


def test_admin_login_with_its_password_gives_no_key_at_all() -> None:
    _, changes = _ask(
        _user("i-1", "Remember that the admin login is root / hunter2."),
        _user("i-2", "Remember: admin login root hunter2"),
        _user("i-3", "My admin login is root and my password is hunter2"),
    )
    assert changes == ()


def test_plain_remember_becomes_a_readable_fact_keyed_by_its_subject() -> None:
    _, changes = _ask(_user("i-1", "ok, remember: the hotel is near the station"))
    assert changes == (
        ProposedRemember("hotel", "The hotel is near the station.", "fact", ("i-1",)),
    )


def test_keys_come_from_the_subject_never_from_the_value() -> None:
    _, changes = _ask(
        _user("i-1", "Remember that the admin login is ana.lopez."),
        _user("i-2", "Remember that our wifi network is CafeGuest."),
        _user("i-3", "My locker is number 57."),
        _user("i-4", "Remember that the flight leaves at 07:45 from gate B22."),
    )
    keys = [c.key for c in changes]
    assert keys == ["admin-login", "wifi-network", "locker", "flight"]
    for change in changes:
        assert isinstance(change, ProposedRemember)
        assert key_secret(change.key) is None
    values = ("ana", "lopez", "cafeguest", "57", "07", "45", "b22")
    assert not [k for k in keys for value in values if value in k.split("-")]


def test_small_talk_proposes_nothing() -> None:
    _, changes = _ask(_user("i-1", "Hello! Can you find me a flight to Lisbon?"))
    assert changes == ()
