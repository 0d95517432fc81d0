"""The memory text's rules (seed 000, "In a Turn")."""

from __future__ import annotations

from agent_memory.api.contracts.memory_text import MemoryText
from agent_memory.domain.entries import EntryMeta, ItemSource
from agent_memory.domain.memory_text import HEADER, choose, line, line_length, render
from agent_memory.persistence.pools import recent_sk


def entry(key: str, kind: str, at: int, status: str, rev: int, length: int) -> EntryMeta:
    return EntryMeta(
        id=f"mem_{key}",
        key=key,
        kind=kind,
        sources=(ItemSource("i-01"),),
        updated_at=at,
        status=status,  # type: ignore[arg-type]
        rev=rev,
        length=length,
    )


def meta(
    key: str, content: str, at: int, *, status: str = "active", kind: str = "fact", rev: int = 1
) -> tuple[EntryMeta, str]:
    return (entry(key, kind, at, status, rev, len(content)), content)


def text_of(entries: list[tuple[EntryMeta, str]], max_length: int = 8000) -> tuple[str, list[str]]:
    """The text from the entries in the order of the pool's recency index."""
    contents = {m.name: c for m, c in entries}
    chosen = choose(sorted((m for m, _ in entries), key=recent_sk), max_length)
    result = render([(m, contents[m.name]) for m in chosen], max_length)
    return result.text, result.keys


def test_active_facts_newest_first_with_the_header() -> None:
    entries = [
        meta("budget", "The trip budget is 1500 EUR.", 1000),
        meta("city", "The trip goes to Lisbon.", 3000),
        meta("hotel", "Hotel Sol is booked.", 2000, status="retracted"),
    ]
    text, keys = text_of(entries)
    assert keys == ["city", "budget"]
    assert text.startswith(HEADER)
    assert "past evidence" in HEADER
    assert "current instructions win" in HEADER
    assert text == HEADER + line("city", "fact", "The trip goes to Lisbon.") + line(
        "budget", "fact", "The trip budget is 1500 EUR."
    )
    assert "Hotel Sol" not in text


def test_stops_before_the_first_fact_that_does_not_fit() -> None:
    newest = meta("a", "x" * 50, 3000)
    big = meta("b", "y" * 500, 2000)
    small_old = meta("c", "z" * 10, 1000)
    limit = len(HEADER) + line_length("a", "fact", 50) + line_length("c", "fact", 10) + 5
    text, keys = text_of([newest, big, small_old], limit)
    # "b" does not fit; "c" would, but OpenBot stops at the first that does not fit.
    assert keys == ["a"]
    assert len(text) <= limit
    assert "yyy" not in text
    assert "zzz" not in text


def test_a_fact_is_never_cut() -> None:
    entries = [meta("a", "word " * 100, 1000)]
    text, keys = text_of(entries, len(HEADER) + 50)
    assert (text, keys) == ("", [])


def test_the_limit_is_exact() -> None:
    entry = meta("a", "x" * 20, 1000)
    exact = len(HEADER) + line_length("a", "fact", 20)
    assert text_of([entry], exact)[1] == ["a"]
    assert len(text_of([entry], exact)[0]) == exact
    assert text_of([entry], exact - 1)[1] == []


def test_ties_are_ordered_by_the_revision_that_wrote_them() -> None:
    entries = [
        meta("old", "1", 1000, rev=2),
        meta("new", "2", 1000, rev=3),
        meta("newer", "3", 1000, rev=3),
    ]
    assert text_of(entries)[1] == ["new", "newer", "old"]


def test_line_breaks_do_not_break_the_list_or_the_length() -> None:
    content = "first line\nsecond line"
    (m, c) = meta("a", content, 1)
    assert line_length("a", "fact", len(content)) == len(line("a", "fact", content))
    text, _ = text_of([(m, c)])
    assert text.count("\n") == 2  # the header's and the fact's own


def test_a_length_that_lies_cannot_exceed_the_limit() -> None:
    lying = entry("a", "fact", 1, "active", 1, 3)
    limit = len(HEADER) + line_length("a", "fact", 3)
    result = render([(lying, "much longer than three")], limit)
    assert result.text == ""
    assert result.length <= limit


def test_the_answer_shape() -> None:
    result = render([meta("a", "A.", 1)], 8000)
    assert MemoryText.of(result).model_dump() == {
        "text": result.text,
        "keys": ["a"],
        "length": len(result.text),
        "maxLength": 8000,
    }
