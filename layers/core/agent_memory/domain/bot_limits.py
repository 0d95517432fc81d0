"""Bounds the bot routes declare on their bodies and queries (names, channel members, the bot
memory filter, the memory bot's settings). Here, not with the rules that enforce them
(domain/bots.py, domain/bot_memory.py, domain/memory_bot.py), so a route's module reads them
without loading those rules."""

from __future__ import annotations

# A bot's or a channel's name in characters; a channel's members (domain/bots.py checks them).
MAX_NAME_LENGTH = 200
MAX_MEMBERS = 500
# Tags one bot memory read filters by (`?tags=a,b`) at most: a count the OpenAPI array can
# state (`maxItems`), where the query's length in characters could not be stated for its items.
MAX_FILTER_TAGS = 10
# The memory bot's settings: its instructions' characters, its learning concurrency.
MAX_INSTRUCTIONS = 4000
MAX_CONCURRENCY = 1000
