"""Grants with levels on a Bot and links into other organizations (seed 002; API.md "Bots")."""

from __future__ import annotations

import pytest

from agent_memory.domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from agent_memory.domain.grants import (
    NEEDS_WRITE,
    NOT_THROUGH_LINK,
    PURGE_THROUGH_LINK,
    GrantLevels,
    ObjectAction,
    Reach,
    decide,
    parse_levels,
)
from agent_memory.domain.identity import SERVICE_ADMIN, Principal

HOME = "o_home"
GUEST = "o_guest"
ALL_ACTIONS: tuple[ObjectAction, ...] = ("read", "write", "purge", "configure", "link")


def member(user: str, org: str = HOME) -> Principal:
    return Principal(user_id=user, org_id=org, role="member")


def admin(user: str, org: str = HOME) -> Principal:
    return Principal(user_id=user, org_id=org, role="admin")


BOT = GrantLevels.of(HOME, "u_owner", {"u_reader": "read", "u_writer": "write"}).linked(
    GUEST, {"g_reader": "read", "g_writer": "write"}, what="bot"
)


def allowed(principal: Principal, action: ObjectAction) -> bool:
    try:
        decide(principal, BOT, action, what="bot")
    except (NotFound, Forbidden):
        return False
    return True


def test_the_owner_and_writers_may_do_everything_at_home() -> None:
    for who in (member("u_owner"), member("u_writer"), admin("u_admin"), SERVICE_ADMIN):
        for action in ALL_ACTIONS:
            assert decide(who, BOT, action, what="bot") == Reach(HOME, "write", linked=False)


def test_read_lets_a_user_use_the_bot_but_not_change_it() -> None:
    assert decide(member("u_reader"), BOT, "read", what="bot") == Reach(HOME, "read", False)
    for action in ("write", "purge", "configure", "link"):
        with pytest.raises(Forbidden) as raised:
            decide(member("u_reader"), BOT, action, what="bot")
        assert raised.value.message == NEEDS_WRITE.format(what="bot")


def test_without_a_grant_the_bot_does_not_exist() -> None:
    for who in (member("u_stranger"), member("u_reader", "o_other"), admin("a", "o_other")):
        for action in ALL_ACTIONS:
            with pytest.raises(NotFound):
                decide(who, BOT, action, what="bot")


def test_a_linked_bot_reads_and_learns_in_the_linked_organization() -> None:
    assert decide(member("g_reader", GUEST), BOT, "read", what="bot") == Reach(GUEST, "read", True)
    assert decide(member("g_writer", GUEST), BOT, "write", what="bot") == Reach(
        GUEST, "write", True
    )
    with pytest.raises(Forbidden):
        decide(member("g_reader", GUEST), BOT, "write", what="bot")


def test_purge_settings_and_links_do_not_pass_through_a_link() -> None:
    for action in ("purge", "configure", "link"):
        with pytest.raises(Forbidden) as raised:
            decide(member("g_writer", GUEST), BOT, action, what="bot")
        home_only = PURGE_THROUGH_LINK if action == "purge" else NOT_THROUGH_LINK
        assert raised.value.message == home_only.format(what="bot")


def test_a_link_gives_only_the_linked_users_their_grants() -> None:
    # An admin of the linked organization holds only what the link grants.
    assert not allowed(admin("g_admin", GUEST), "read")
    assert not allowed(member("g_stranger", GUEST), "read")
    # A home grant does not follow a user id into another organization.
    assert not allowed(member("u_owner", GUEST), "read")


def test_the_owner_keeps_write_whatever_the_levels_say() -> None:
    bot = GrantLevels.of(HOME, "u_owner", {"u_owner": "read"})
    assert decide(member("u_owner"), bot, "configure", what="bot").level == "write"


def test_grants_do_not_change_when_the_callers_dict_does() -> None:
    levels: dict[str, str] = {"u_1": "read"}
    bot = GrantLevels.of(HOME, None, parse_levels(levels, ["grants"]))
    levels["u_1"] = "write"
    assert decide(member("u_1"), bot, "read", what="bot").level == "read"


def test_changing_a_link_changes_only_the_people_it_names() -> None:
    relinked = BOT.linked(GUEST, {"g_reader": "write"}, what="bot")
    assert decide(member("g_reader", GUEST), relinked, "write", what="bot").linked
    # Not named: kept. Named with None: removed.
    assert decide(member("g_writer", GUEST), relinked, "write", what="bot").linked
    removed = relinked.linked(GUEST, {"g_writer": None}, what="bot")
    with pytest.raises(NotFound):
        decide(member("g_writer", GUEST), removed, "read", what="bot")


def test_a_bot_is_not_linked_into_its_own_organization() -> None:
    with pytest.raises(Conflict) as raised:
        BOT.linked(HOME, {"u_1": "read"}, what="bot")
    assert raised.value.path == ["organizationId"]


def test_a_grant_is_read_or_write() -> None:
    assert parse_levels({"u_1": "read", "u_2": "write"}, ["grants"]) == {
        "u_1": "read",
        "u_2": "write",
    }
    with pytest.raises(ValidationFailed) as raised:
        parse_levels({"u_1": "read", "u_2": "owner"}, ["grants"])
    assert raised.value.path == ["grants", "u_2"]
