"""`local/rules`: plain user statements become changes, in the protocol every model speaks."""

from __future__ import annotations

import pytest

from agent_memory.adapters.rules_model import RulesModel
from agent_memory.domain.evidence import EvidenceItem, KnownEntry
from agent_memory.domain.proposals import (
    LASTING_KINDS,
    MEMORY_KINDS,
    ProposedChange,
    ProposedForget,
    ProposedRemember,
    parse_changes,
)
from agent_memory.domain.secrets import key_secret, looks_secret
from agent_memory.domain.tasks.memory_changes import MEMORY_CHANGES, LearningRequest
from agent_memory.ports import ModelReply, Usage
from tests.support.secret_corpus import SECRETS


def _ask(
    *items: EvidenceItem,
    memory: tuple[KnownEntry, ...] = (),
    kinds: tuple[str, ...] = MEMORY_KINDS,
    pool: str = "session",
    person: str | None = None,
) -> tuple[ModelReply, tuple[ProposedChange, ...]]:
    reply = RulesModel().propose(
        MEMORY_CHANGES.request(LearningRequest(pool, items, memory, kinds, person))
    )
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


def test_a_statement_with_braces_is_kept_as_said() -> None:
    _, changes = _ask(_user("i-1", "I like {curly} braces."), person="Ana")
    assert changes == (
        ProposedRemember("curly-braces", "Ana likes {curly} braces.", "preference", ("i-1",)),
    )
    _, changes = _ask(_user("i-1", "I like {who} placeholders."), person="Ana")
    assert [c.content for c in changes] == ["Ana likes {who} placeholders."]


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
    assert all(looks_secret(c.content) is None for c in changes if isinstance(c, ProposedRemember))


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


# --- what people plainly say about themselves ---------------------------------------------

ABOUT_ONESELF = [
    ("I am allergic to peanuts", "allergy", "fact", "Ana is allergic to peanuts."),
    ("I'm allergic to penicillin.", "allergy", "fact", "Ana is allergic to penicillin."),
    ("I have an allergy to bees", "allergy", "fact", "Ana is allergic to bees."),
    ("I live in Berlin", "home-city", "fact", "Ana lives in Berlin."),
    ("I'm living in a small flat", "home", "fact", "Ana lives in a small flat."),
    ("I moved to Lisbon last year", "home-city", "fact", "Ana moved to Lisbon last year."),
    ("Call me Annie", "preferred-name", "fact", "Ana wants to be called Annie."),
    ("My name is Ana Lopez", "name", "fact", "Ana's name is Ana Lopez."),
    ("Hi, I'm Ana", "name", "fact", "Ana's name is Ana."),
    ("I work at Acme", "employer", "fact", "Ana works at Acme."),
    ("I work as a nurse", "occupation", "fact", "Ana works as a nurse."),
    ("I'm a software engineer.", "occupation", "fact", "Ana is a software engineer."),
    ("I work from home", "work-location", "fact", "Ana works from home."),
    ("I am 34 years old", "age", "fact", "Ana is 34 years old."),
    ("I'm from Portugal", "origin", "fact", "Ana is from Portugal."),
    ("I am vegetarian", "diet", "fact", "Ana is vegetarian."),
    ("I don't eat meat", "diet", "fact", "Ana does not eat meat."),
    ("I'm married", "relationship-status", "fact", "Ana is married."),
    ("I am German", "nationality", "fact", "Ana is German."),
    ("I speak Portuguese and English", "languages", "fact", "Ana speaks Portuguese and English."),
    ("My favourite colour is blue", "favourite-colour", "fact", "Ana's favourite colour is blue."),
    ("I like sushi", "sushi", "preference", "Ana likes sushi."),
    ("I love hiking", "hiking", "preference", "Ana loves hiking."),
    ("I am a big fan of jazz", "jazz", "preference", "Ana is a fan of jazz."),
    ("I hate cilantro", "no-cilantro", "preference", "Ana does not like cilantro."),
    # German
    ("Ich wohne in Berlin.", "home-city", "fact", "Ana lives in Berlin."),
    ("Ich bin allergisch gegen Nüsse.", "allergy", "fact", "Ana is allergic to Nüsse."),
    ("Ich heiße Anna.", "name", "fact", "Ana's name is Anna."),
    ("Nenn mich Anni.", "preferred-name", "fact", "Ana wants to be called Anni."),
    ("Ich arbeite bei Siemens.", "employer", "fact", "Ana works at Siemens."),
    ("Ich arbeite als Lehrerin.", "occupation", "fact", "Ana works as Lehrerin."),
    ("Ich bin Vegetarierin.", "diet", "fact", "Ana is vegetarian."),
    ("Ich esse kein Fleisch.", "diet", "fact", "Ana does not eat Fleisch."),
    ("Ich bin verheiratet.", "relationship-status", "fact", "Ana is married."),
    ("Ich mag Kaffee.", "kaffee", "preference", "Ana likes Kaffee."),
    ("Ich mag keine Tomaten.", "no-tomaten", "preference", "Ana does not like Tomaten."),
    ("Meine Lieblingsfarbe ist Blau.", "lieblingsfarbe", "fact", "Ana's Lieblingsfarbe is Blau."),
    # French
    ("J'habite à Lyon.", "home-city", "fact", "Ana lives in Lyon."),
    ("Je m'appelle Marie.", "name", "fact", "Ana's name is Marie."),
    ("Appelle-moi Mimi.", "preferred-name", "fact", "Ana wants to be called Mimi."),
    ("Je travaille chez Renault.", "employer", "fact", "Ana works at Renault."),
    ("Je suis allergique aux arachides.", "allergy", "fact", "Ana is allergic to arachides."),
    ("Je suis végétarienne.", "diet", "fact", "Ana is vegetarian."),
    ("Je ne mange pas de porc.", "diet", "fact", "Ana does not eat porc."),
    ("J'aime le chocolat.", "chocolat", "preference", "Ana likes le chocolat."),
    ("Je déteste la pluie.", "no-pluie", "preference", "Ana does not like la pluie."),
    # Spanish
    ("Vivo en Madrid.", "home-city", "fact", "Ana lives in Madrid."),
    ("Me llamo Lucía.", "name", "fact", "Ana's name is Lucía."),
    ("Llámame Lu.", "preferred-name", "fact", "Ana wants to be called Lu."),
    ("Trabajo como profesora.", "occupation", "fact", "Ana works as profesora."),
    ("Soy alérgica a la penicilina.", "allergy", "fact", "Ana is allergic to la penicilina."),
    ("Soy vegana.", "diet", "fact", "Ana is vegan."),
    ("No como carne.", "diet", "fact", "Ana does not eat carne."),
    ("Tengo 29 años.", "age", "fact", "Ana is 29 years old."),
    ("Me gusta el café.", "cafe", "preference", "Ana likes el café."),
    ("Odio el frío.", "no-frio", "preference", "Ana does not like el frío."),
]


@pytest.mark.parametrize(("said", "key", "kind", "content"), ABOUT_ONESELF)
def test_what_people_say_about_themselves_is_kept_under_its_attribute(
    said: str, key: str, kind: str, content: str
) -> None:
    _, changes = _ask(_user("i-1", said), person="Ana")
    assert changes == (ProposedRemember(key, content, kind, ("i-1",)),)


@pytest.mark.parametrize(
    "said",
    [
        "I am tired",
        "I am not sure",
        "I don't know what to do",
        "I am a mother of two",
        "I'm Catholic",
        "Hello! Can you find me a flight to Lisbon?",
    ],
)
def test_passing_states_and_questions_are_not_kept(said: str) -> None:
    assert _ask(_user("i-1", said))[1] == ()


def test_a_key_names_the_attribute_never_the_value() -> None:
    facts = [(said, key) for said, key, kind, _content in ABOUT_ONESELF if kind == "fact"]
    for said, key in facts:
        _, [change] = _ask(_user("i-1", said))
        assert change.key == key
        # Values are the words after the attribute's own words ("Berlin", "peanuts").
        value_words = {w.lower().strip(".,") for w in said.split()[-1:]}
        assert not value_words & set(key.split("-")), (said, key)


@pytest.mark.parametrize(
    ("said", "keys"),
    [
        ("Ich wohne in Berlin und bin allergisch gegen Nüsse.", ["home-city", "allergy"]),
        ("J'habite à Lyon et je travaille chez Renault.", ["home-city", "employer"]),
        ("Vivo en Madrid y trabajo como profesora.", ["home-city", "occupation"]),
        ("I live in Porto and I work as a nurse.", ["home-city", "occupation"]),
    ],
)
def test_two_clauses_of_one_sentence_give_two_facts(said: str, keys: list[str]) -> None:
    _, changes = _ask(_user("i-1", said))
    assert [(c.key, c.sources) for c in changes] == [(key, ("i-1",)) for key in keys]


def test_several_allergies_are_one_entry_each_and_one_is_never_kept_twice() -> None:
    memory = (KnownEntry("allergy", "The user is allergic to peanuts.", "fact", "active"),)
    _, changes = _ask(
        _user("i-1", "I'm allergic to shellfish and penicillin."),
        _user("i-2", "I am allergic to peanuts."),
        memory=memory,
    )
    assert changes == (
        ProposedRemember("allergy-2", "The user is allergic to shellfish.", "fact", ("i-1",)),
        ProposedRemember("allergy-3", "The user is allergic to penicillin.", "fact", ("i-1",)),
        ProposedRemember("allergy", "The user is allergic to peanuts.", "fact", ("i-2",)),
    )


def test_a_new_value_of_a_single_attribute_updates_its_entry() -> None:
    memory = (KnownEntry("home-city", "The user lives in Munich.", "fact", "active"),)
    _, changes = _ask(_user("i-1", "I live in Berlin now."), memory=memory)
    assert changes == (
        ProposedRemember("home-city", "The user lives in Berlin.", "fact", ("i-1",)),
    )


@pytest.mark.parametrize(
    ("said", "forgotten"),
    [
        ("I no longer live in Berlin.", ["home-city"]),
        ("I don't live in Berlin anymore", ["home-city"]),
        ("Ich wohne nicht mehr in Berlin.", ["home-city"]),
        ("Je n'habite plus à Berlin.", ["home-city"]),
        ("Ya no vivo en Berlín.", ["home-city"]),
        ("I'm no longer allergic to peanuts", ["allergy-2"]),
        ("I am not allergic to peanuts anymore.", ["allergy-2"]),
        ("Ich bin nicht mehr allergisch gegen Peanuts.", ["allergy-2"]),
        ("I no longer work at Acme.", ["employer"]),
        ("Je ne travaille plus chez Acme.", ["employer"]),
        ("Don't call me Annie.", ["preferred-name"]),
        ("I'm no longer vegetarian.", ["diet"]),
        ("I no longer live in Paris.", []),  # memory does not hold it: nothing to take back
        ("I'm not allergic to cats.", []),
    ],
)
def test_a_negation_forgets_only_the_entry_that_holds_the_value(
    said: str, forgotten: list[str]
) -> None:
    memory = (
        KnownEntry("home-city", "The user lives in Berlin.", "fact", "active"),
        KnownEntry("allergy", "The user is allergic to shellfish.", "fact", "active"),
        KnownEntry("allergy-2", "The user is allergic to peanuts.", "fact", "active"),
        KnownEntry("employer", "The user works at Acme.", "fact", "active"),
        KnownEntry("preferred-name", "The user wants to be called Annie.", "fact", "active"),
        KnownEntry("diet", "The user is vegetarian.", "fact", "active"),
    )
    _, changes = _ask(_user("i-1", said), memory=memory)
    assert [(c.key, type(c)) for c in changes] == [(k, ProposedForget) for k in forgotten]


def test_a_preference_said_the_other_way_round_updates_the_same_entry() -> None:
    memory = (KnownEntry("sushi", "The user likes sushi.", "preference", "active"),)
    _, changes = _ask(_user("i-1", "I don't like sushi anymore."), memory=memory)
    assert changes == (
        ProposedRemember("sushi", "The user does not like sushi.", "preference", ("i-1",)),
    )


def test_a_retracted_attribute_is_not_brought_back() -> None:
    memory = (KnownEntry("home-city", "The user lives in Munich.", "fact", "retracted"),)
    assert _ask(_user("i-1", "I live in Berlin."), memory=memory)[1] == ()


def test_a_secret_said_over_two_sentences_or_as_a_list_is_not_read() -> None:
    seed = "left stay argue require spin pioneer rabbit square coin spray someone destroy"
    numbered = "\n".join(f"{n}. {word}" for n, word in enumerate(seed.split(), 1))
    _, changes = _ask(
        _user("i-1", "My wifi password? It's LetMeIn2024. I live in Berlin."),
        _user("i-2", f"Keep these for me:\n{numbered}"),
    )
    assert changes == (
        ProposedRemember("home-city", "The user lives in Berlin.", "fact", ("i-1",)),
    )
