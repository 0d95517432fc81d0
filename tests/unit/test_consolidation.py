"""The consolidation rules applied to what a model proposes (seed 000, "After a Turn")."""

from __future__ import annotations

from dataclasses import replace

from agent_memory.domain import consolidation as rules_module
from agent_memory.domain.consolidation import Known, PoolRules, consolidate
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.model_gate import SECRET
from agent_memory.domain.proposals import (
    LASTING_KINDS,
    MEMORY_KINDS,
    ProposedForget,
    ProposedRemember,
)
from agent_memory.domain.secret_words import CARD, LOGIN, ONE_TIME_CODE, PASSWORD, PIN

# What the run read: two things said, and an App's result (outside data).
ITEMS = (
    EvidenceItem("i-03", "user", "Our budget is 1500 EUR."),
    EvidenceItem("i-04", "assistant", "Noted."),
    EvidenceItem("i-05", "tool", "Rain in Lisbon.", app="weather"),
)
RULES = PoolRules.of(MEMORY_KINDS, ITEMS)


def remember(
    key: str, content: str = "The trip budget is 1500 EUR.", *sources: str, kind: str = "fact"
) -> ProposedRemember:
    return ProposedRemember(key, content, kind, sources or ("i-03",))


def forget(key: str, *sources: str) -> ProposedForget:
    return ProposedForget(key, sources or ("i-04",))


def reasons(decision: rules_module.Decision) -> dict[str, str]:
    return {r.change.key: r.reason for r in decision.rejected}


def test_a_sourced_fact_is_accepted() -> None:
    decision = consolidate([remember("budget")], {}, RULES)
    assert [c.key for c in decision.accepted] == ["budget"]
    assert decision.applied_records() == [{"key": "budget", "op": "remember"}]
    assert decision.rejected == ()


def test_each_change_names_at_least_one_unprocessed_item() -> None:
    decision = consolidate(
        [
            ProposedRemember("none", "A fact.", "fact", ()),
            remember("old", "A fact.", "i-01"),
            remember("mixed", "A fact.", "i-03", "i-02"),
        ],
        {},
        RULES,
    )
    assert decision.accepted == ()
    assert reasons(decision) == {
        "none": rules_module.NO_SOURCE,
        "old": rules_module.NOT_READ.format(source="i-01"),
        "mixed": rules_module.NOT_READ.format(source="i-02"),
    }


def test_app_results_alone_never_support_a_change() -> None:
    decision = consolidate(
        [
            remember("hotel", "The hotel is booked.", "i-05"),
            remember("room", "Room 12.", "i-05", "i-04"),
        ],
        {},
        RULES,
    )
    assert reasons(decision) == {"hotel": rules_module.OUTSIDE_ONLY}
    assert [c.key for c in decision.accepted] == ["room"]


def test_two_changes_for_one_key_are_all_rejected() -> None:
    decision = consolidate(
        [remember("budget"), forget("budget"), remember("city", "Lisbon.")],
        {"budget": Known("active")},
        RULES,
    )
    assert [c.key for c in decision.accepted] == ["city"]
    assert [(r.change.key, r.reason) for r in decision.rejected] == [
        ("budget", rules_module.DUPLICATE_KEY),
        ("budget", rules_module.DUPLICATE_KEY),
    ]


def test_a_retracted_fact_stays_retracted() -> None:
    decision = consolidate([remember("budget")], {"budget": Known("retracted")}, RULES)
    assert reasons(decision) == {"budget": rules_module.STAYS_RETRACTED}


def test_forget_needs_an_active_entry() -> None:
    decision = consolidate(
        [forget("nothing"), forget("gone"), forget("budget")],
        {"gone": Known("retracted"), "budget": Known("active")},
        RULES,
    )
    assert [c.key for c in decision.accepted] == ["budget"]
    assert decision.applied_records() == [{"key": "budget", "op": "forget"}]
    assert reasons(decision) == {
        "nothing": rules_module.UNKNOWN_KEY,
        "gone": rules_module.ALREADY_RETRACTED,
    }


def test_secrets_are_never_kept_and_not_recorded() -> None:
    decision = consolidate(
        [
            remember("wifi", "The wifi password is hunter22x."),
            remember("deploy", "Deploy with token ghp_abcdefghijklmnopqrstuvwxyz0123."),
            remember("invite", "Join via https://example.com/invite/AbC123xyz9."),
        ],
        {},
        RULES,
    )
    assert decision.accepted == ()
    assert all(r.reason.startswith("looks like") for r in decision.rejected)
    # The execution keeps the change without its content.
    for record in decision.rejected_records():
        assert "content" not in record["change"]
        assert set(record["change"]) == {"op", "key", "kind", "sources"}


def test_a_secret_looking_key_is_redacted_in_the_record() -> None:
    key = "ghp_abcdefghijklmnopqrstuvwxyz0123"
    decision = consolidate([remember(key, "A fact.")], {}, RULES)
    assert decision.rejected_records()[0]["change"]["key"] == rules_module.REDACTED


def test_a_key_that_holds_a_secret_is_refused_for_both_ops_and_never_recorded() -> None:
    # A key is plaintext metadata: the entry's row, the execution's `applied`, agent
    # memory's log. Whatever the content, such a key is not written anywhere.
    decision = consolidate(
        [
            remember("admin-login-root-hunter2", "The admin login is documented."),
            forget("wifi-password-hunter22"),
            remember("budget"),
        ],
        {"wifi-password-hunter22": Known("active")},
        RULES,
    )
    assert decision.applied_records() == [{"key": "budget", "op": "remember"}]
    records = decision.rejected_records()
    assert [r["reason"] for r in records] == [
        SECRET.format(what=LOGIN),
        SECRET.format(what=PASSWORD),
    ]
    assert [r["change"]["key"] for r in records] == [rules_module.REDACTED] * 2
    assert "hunter2" not in repr(records)


def test_the_secret_reason_names_the_kind_never_the_secret_and_comes_first() -> None:
    decision = consolidate(
        [
            # No readable source and a kind this pool does not keep: the secret still wins.
            remember("door", "The door code is 4711.", "i-99", kind="rumour"),
            remember("card", "Pay with 4111 1111 1111 1111."),
            remember("otp", "The 2FA code is 482910."),
        ],
        {},
        RULES,
    )
    assert reasons(decision) == {
        "door": SECRET.format(what=PIN),
        "card": SECRET.format(what=CARD),
        "otp": SECRET.format(what=ONE_TIME_CODE),
    }
    for reason in reasons(decision).values():
        assert not any(ch.isdigit() for ch in reason)


def test_the_same_secret_rule_serves_agent_memory() -> None:
    said = EvidenceItem("i-1", "user", "Always run the tests first.")
    rules = PoolRules.of(LASTING_KINDS, (said, EvidenceItem("i-2", "tool", "{}", app="ci")))
    decision = consolidate(
        [
            remember("tests-first", "Always run the tests first.", "i-1", kind="procedure"),
            remember("deploy", "Deploy with password Hunter2-xyz!", "i-1", kind="procedure"),
            remember("root-pw-hunter2x", "Use ssh for deploys.", "i-1", kind="procedure"),
        ],
        {},
        rules,
    )
    assert [c.key for c in decision.accepted] == ["tests-first"]
    assert {r.reason for r in decision.rejected} == {SECRET.format(what=PASSWORD)}


def test_an_edit_made_while_the_model_worked_is_kept() -> None:
    decision = consolidate(
        [remember("budget", "The budget is 900 EUR."), forget("city")],
        {
            "budget": Known("active", edited_meanwhile=True),
            "city": Known("active", edited_meanwhile=True),
        },
        RULES,
    )
    assert decision.accepted == ()
    assert set(reasons(decision).values()) == {rules_module.EDITED_MEANWHILE}


def test_a_pool_keeps_only_its_kinds() -> None:
    lasting = PoolRules.of(("procedure", "preference", "decision"), ITEMS)
    decision = consolidate(
        [
            remember("budget", kind="fact"),
            remember("tests-first", "Run the tests.", kind="procedure"),
        ],
        {},
        lasting,
    )
    assert [c.key for c in decision.accepted] == ["tests-first"]
    assert reasons(decision) == {"budget": rules_module.KIND_NOT_KEPT.format(kind="fact")}


def test_too_many_changes_are_rejected_not_half_applied() -> None:
    small = replace(RULES, max_changes=2)
    decision = consolidate([remember(f"k{n}", f"Fact {n}.") for n in range(4)], {}, small)
    assert [c.key for c in decision.accepted] == ["k0", "k1"]
    assert reasons(decision) == {"k2": rules_module.TOO_MANY, "k3": rules_module.TOO_MANY}


def test_replacing_an_active_fact_is_accepted() -> None:
    decision = consolidate(
        [remember("budget", "The budget is 1800 EUR.")], {"budget": Known("active")}, RULES
    )
    assert [c.key for c in decision.accepted] == ["budget"]


def test_a_change_with_text_that_cannot_be_stored_is_rejected_with_its_reason() -> None:
    from agent_memory.domain.text import UNENCODABLE

    bad = ProposedRemember("budget", "bad \ud800 text", "fact", ("i-03",))
    good = ProposedRemember("city", "The trip goes to Lisbon.", "fact", ("i-03",))
    decision = consolidate([bad, good], {}, RULES)
    assert [c.key for c in decision.accepted] == ["city"]
    assert [(r.change.key, r.reason) for r in decision.rejected] == [("budget", UNENCODABLE)]
