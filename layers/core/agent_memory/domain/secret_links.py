"""Links that give access (`ACCESS_LINK`): URLs of any
scheme with a password (`postgres://user:pass@host`), with a credential in the query or
fragment (pre-signed S3, SAS, OAuth, API keys), invitation, magic-link and reset links with a
code, invite hosts, and `user:password@host` without a scheme.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from agent_memory.domain.secret_words import (
    ACCESS_LINK,
    COMMON_USERS,
    LazyPattern,
    credential,
    wordset,
)

# Any scheme: https, ftp, postgres, mysql, mongodb+srv, redis, amqp, ...
URL = LazyPattern(r"\b[a-z][a-z0-9+.-]{1,30}://[^\s<>\"'`)\]]+", re.IGNORECASE)
# Query or fragment parameters that carry a credential (pre-signed S3, SAS, OAuth, API keys).
_ACCESS_PARAMS = wordset(
    """token access_token id_token refresh_token auth auth_token authtoken key api_key apikey
    api-key signature sig x-amz-signature x-amz-credential x-amz-security-token
    x-goog-signature x-goog-credential googleaccessid key-pair-id password pass pwd passwd
    secret client_secret session sessionid sid jwt otp ticket invite invite_code magic
    magic_link login_token reset_token code_challenge st"""
)
# Path words of invitation, sign-in and password-reset links.
_ACCESS_PATH = LazyPattern(
    r"(?:^|/)(?:invite|invites|invitation|invitations|join|joinchat|magic|magic[-_]?link"
    r"|magiclink|login[-_]?link|signin[-_]?link|passwordless|reset|reset[-_]?password"
    r"|password[-_]?reset|recover|recovery|activate|activation|verify|confirm|onboard)(?:/|$)",
    re.IGNORECASE,
)
# Hosts whose links are invitations by themselves.
_INVITE_HOSTS = ("discord.gg", "chat.whatsapp.com", "join.slack.com", "t.me")

# "root:hunter2@db.example.com", without a scheme.
_USER_PASS_HOST = LazyPattern(
    r"(?<![\w/])(?P<user>[\w.+-]{1,64}):(?P<value>[^\s@/:]{3,})@[A-Za-z0-9-]+"
    r"(?:\.[A-Za-z0-9-]+)+"
)
# "mailto:ana@example.com", "Email:ana@example.com": an address, not user:password@host.
_ADDRESS_LABELS = wordset("mailto sip sips xmpp im email e-mail mail contact to from cc bcc")


def access_link(text: str) -> str | None:
    """ACCESS_LINK when `text` holds a link (or `user:password@host`) that gives access."""
    if "://" in text and any(_is_access_link(url) for url in URL.findall(text)):
        return ACCESS_LINK
    return ACCESS_LINK if "@" in text and _user_pass_host(text) else None


def _user_pass_host(text: str) -> bool:
    for match in _USER_PASS_HOST.finditer(text):
        user = match.group("user").lower()
        if user not in _ADDRESS_LABELS and (
            credential(match.group("value"), loose=False) or user in COMMON_USERS
        ):
            return True
    return False


def _is_access_link(url: str) -> bool:
    try:
        parts = urlsplit(url.rstrip(".,;!?"))
        password = parts.password
        host = (parts.hostname or "").lower()
    except ValueError:
        return False
    if password:
        return True
    params = [*parse_qsl(parts.query, keep_blank_values=False)]
    params += parse_qsl(parts.fragment, keep_blank_values=False)
    if any(name.lower() in _ACCESS_PARAMS and len(value) >= 4 for name, value in params):
        return True
    path = parts.path.rstrip("/")
    if host in _INVITE_HOSTS or host.endswith(".discord.gg"):
        return len(path.strip("/")) >= 4
    if _ACCESS_PATH.search(path):
        # An invite/reset path with a code after it, or a code in the query string.
        tail = [segment for segment in path.split("/") if segment]
        codes = [*tail[-1:], *(value for _name, value in params)]
        return any(_looks_like_code(code) for code in codes)
    return False


def _looks_like_code(value: str) -> bool:
    """A one-off code: long enough and not a plain word."""
    if len(value) < 6 or _ACCESS_PATH.search("/" + value + "/"):
        return False
    return any(ch.isdigit() for ch in value) or (len(value) >= 16 and not value.isalpha())
