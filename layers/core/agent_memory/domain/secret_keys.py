"""Credentials by their form: keys and tokens by their format (private keys, cloud keys,
vendors' tokens, bearer tokens), named in words ("my API key is ..."), or a long random
string that looks like a credential; and links that give access.

Links that give access: URLs of any scheme with a password (`postgres://user:pass@host`), with
a credential in the query or fragment (pre-signed S3, SAS, OAuth, API keys), invitation,
magic-link and reset links with a code, invite hosts, and `user:password@host` without a
scheme.

Vendors' token formats also come from a maintained detector: Yelp's `detect-secrets` plugins,
used as a library. `library_finding(text)` answers which kind of secret one of the plugins
found, or None. Only each plugin's `analyze_string` is called: it matches the plugin's
patterns and nothing else, so no verification request is ever sent (a user's secret never
leaves the service) and no global settings or baseline are read.

The package imports `requests` and its scanning machinery (about 110 ms), so it is imported
at the first check, where learning runs, never on the API's cold path.

Plugins left out, and why:
- `KeywordDetector` and the high-entropy plugins look for quoted assignments in source code;
  prose is checked by domain/secrets.py's own rules (several languages, no quotes needed).
- `ArtifactoryDetector`: its `AP[0-9A-F]...` pattern matches capitalised words ("APACHECONF").
- `IPPublicDetector`: an IP address is not a secret.
- GitHub, OpenAI, PyPI and Stripe: `FORMAT_RULES` match every token these plugins match.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import parse_qsl, urlsplit

from agent_memory.domain.secret_words import (
    ACCESS_LINK,
    API_TOKEN,
    BARE_VALUE,
    CLOUD_KEY,
    COMMON_USERS,
    FOR,
    IS,
    NOW,
    PRIVATE_KEY,
    RANDOM_STRING,
    VALUE,
    Rule,
    credential,
    key_like,
    lazy,
    wordset,
)

# --- Links that give access -----------------------------------------------------------------

# Any scheme: https, ftp, postgres, mysql, mongodb+srv, redis, amqp, ...
URL = lazy(r"\b[a-z][a-z0-9+.-]{1,30}://[^\s<>\"'`)\]]+", re.IGNORECASE)
# Query or fragment parameters that carry a credential (pre-signed S3, SAS, OAuth, API keys).
_ACCESS_PARAMS = wordset(
    """token access_token id_token refresh_token auth auth_token authtoken key api_key apikey
    api-key signature sig x-amz-signature x-amz-credential x-amz-security-token
    x-goog-signature x-goog-credential googleaccessid key-pair-id password pass pwd passwd
    secret client_secret session sessionid sid jwt otp ticket invite invite_code magic
    magic_link login_token reset_token code_challenge st"""
)
# Path words of invitation, sign-in and password-reset links.
_ACCESS_PATH = lazy(
    r"(?:^|/)(?:invite|invites|invitation|invitations|join|joinchat|magic|magic[-_]?link"
    r"|magiclink|login[-_]?link|signin[-_]?link|passwordless|reset|reset[-_]?password"
    r"|password[-_]?reset|recover|recovery|activate|activation|verify|confirm|onboard)(?:/|$)",
    re.IGNORECASE,
)
# Hosts whose links are invitations by themselves.
_INVITE_HOSTS = ("discord.gg", "chat.whatsapp.com", "join.slack.com", "t.me")

# "root:hunter2@db.example.com", without a scheme.
_USER_PASS_HOST = lazy(
    r"(?<![\w/])(?P<user>[\w.+-]{1,64}):(?P<value>[^\s@/:]{3,})@[A-Za-z0-9-]+"
    r"(?:\.[A-Za-z0-9-]+)+"
)
# "mailto:ana@example.com", "Email:ana@example.com": an address, not user:password@host.
_ADDRESS_LABELS = wordset("mailto sip sips xmpp im email e-mail mail contact to from cc bcc")


def access_link(text: str) -> str | None:
    """ACCESS_LINK when `text` holds a link (or `user:password@host`) that gives access."""
    if "://" in text and any(_is_access_link(url) for url in URL().findall(text)):
        return ACCESS_LINK
    return ACCESS_LINK if "@" in text and _user_pass_host(text) else None


def _user_pass_host(text: str) -> bool:
    for match in _USER_PASS_HOST().finditer(text):
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
    if _ACCESS_PATH().search(path):
        # An invite/reset path with a code after it, or a code in the query string.
        tail = [segment for segment in path.split("/") if segment]
        codes = [*tail[-1:], *(value for _name, value in params)]
        return any(_looks_like_code(code) for code in codes)
    return False


def _looks_like_code(value: str) -> bool:
    """A one-off code: long enough and not a plain word."""
    if len(value) < 6 or _ACCESS_PATH().search("/" + value + "/"):
        return False
    return any(ch.isdigit() for ch in value) or (len(value) >= 16 and not value.isalpha())


# --- Keys and tokens ------------------------------------------------------------------------

_PRIVATE_KEY = lazy(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_AWS_KEY_ID = lazy(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")
_GOOGLE_KEY = lazy(r"\bAIza[0-9A-Za-z_-]{35}\b")
# Well-known token formats: OpenAI/Anthropic, Stripe, GitHub, GitLab, Slack, npm, PyPI, JWT.
_TOKEN_FORMATS = lazy(
    r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bxox[abposre]-[A-Za-z0-9-]{10,}"
    r"|\bnpm_[A-Za-z0-9]{30,}"
    r"|\bpypi-[A-Za-z0-9_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
)
_BEARER = lazy(r"\bbearer\s+[A-Za-z0-9._~+/-]{16,}", re.IGNORECASE)


_NAMED_SECRET_WORD = (
    r"(?:api[\s_-]?keys?|access[\s_-]?keys?(?:[\s_-]?id)?|secret(?:[\s_-]?(?:access[\s_-]?)?key)?"
    r"|client[\s_-]?secret|private[\s_-]?key|auth(?:entication)?[\s_-]?token|access[\s_-]?token"
    r"|refresh[\s_-]?token|bearer[\s_-]?token|session[\s_-]?token|tokens?|credentials?"
    r"|apikey|api[\s_-]?schlüssel|geheimer\s+schlüssel|clé\s+(?:d['\u2019]\s*)?api|clé\s+secrète"
    r"|clave\s+(?:de\s+)?api|jeton|signing[\s_-]?key|webhook[\s_-]?secret)"
)
# Not after a colon: "arn:aws:secretsmanager:...:secret:name" names a secret, it is not one.
_NAMED_SECRET = lazy(rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE)
_NAMED_SECRET_BARE = lazy(rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{BARE_VALUE}", re.IGNORECASE)
# "my OpenAI key is 9f8e7d6c": any key, when its value has digits and letters (never "the
# key is under the mat", "the key to success is ...").
_ANY_KEY = lazy(rf"(?<!:)\bkeys?\b{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE)

_CANDIDATE = lazy(r"[A-Za-z0-9+=_-]{32,}")

NAMED_STEMS = wordset("key secret token cred schlüssel clé clave jeton")


# A private key, a cloud key or a token by its format alone.
FORMAT_RULES = (
    Rule(PRIVATE_KEY, _PRIVATE_KEY),
    Rule(CLOUD_KEY, _AWS_KEY_ID),
    Rule(API_TOKEN, _GOOGLE_KEY),
    Rule(API_TOKEN, _TOKEN_FORMATS),
    Rule(API_TOKEN, _BEARER),
)


def _named_value(match: re.Match[str], _text: str) -> bool:
    """The value of a named key or token: quoted, or a key rather than a word."""
    return bool(match.group("quote")) or key_like(match.group("value"))


def _bare_value(match: re.Match[str], _text: str) -> bool:
    return credential(match.group("value"), loose=False, minimum=8)


def _key_value(match: re.Match[str], _text: str) -> bool:
    """The value of a key of any name: digits with letters, or long and not a word."""
    value = match.group("value").strip(".,;!?)")
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    return len(value) >= 8 and ((has_digit and has_alpha) or (len(value) >= 20 and has_digit))


# A key or token said in words ("my API key is ...").
NAMED_RULES = (
    Rule(API_TOKEN, _NAMED_SECRET, _named_value, (NAMED_STEMS,)),
    Rule(API_TOKEN, _ANY_KEY, _key_value, (NAMED_STEMS,)),
    Rule(API_TOKEN, _NAMED_SECRET_BARE, _bare_value, (NAMED_STEMS,)),
)


def random_string(text: str) -> str | None:
    for url_free in URL().split(text):
        for candidate in _CANDIDATE().findall(url_free):
            if _random(candidate):
                return RANDOM_STRING
    return None


def _random(candidate: str) -> bool:
    """Base64/base62-like, mixes letters and digits, and close to uniformly random."""
    letters = sum(ch.isalpha() for ch in candidate)
    digits = sum(ch.isdigit() for ch in candidate)
    # Random strings switch between letters and digits often; slugs and names rarely do.
    switches = sum(
        a.isdigit() != b.isdigit()
        for a, b in itertools.pairwise(candidate)
        if a.isalnum() and b.isalnum()
    )
    if letters < 4 or digits < 2 or switches < 3:
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", candidate):
        return False  # hashes and UUIDs identify things, they do not open them
    counts = Counter(candidate)
    entropy = -sum(n / len(candidate) * math.log2(n / len(candidate)) for n in counts.values())
    return entropy >= 4.0


# --- detect-secrets' plugins ----------------------------------------------------------------

Finder = Callable[[str], Iterable[str]]

# The keyword plugins (IBM, Cloudant, SoftLayer) cost 10 to 50 times the others on prose: they
# run only when the text has one of their key words (any case). Other plugins start with a
# literal and always run.
_CREDENTIAL_WORDS = ("key", "pw", "pass", "token")
_ALWAYS: tuple[str, ...] = ()
# Each plugin: the kind it finds, the words it needs, its module of `detect_secrets.plugins`
# and its class.
_PLUGINS = (
    (CLOUD_KEY, _ALWAYS, "aws", "AWSKeyDetector"),
    (CLOUD_KEY, _ALWAYS, "azure_storage_key", "AzureStorageKeyDetector"),
    (CLOUD_KEY, _CREDENTIAL_WORDS, "ibm_cloud_iam", "IbmCloudIamDetector"),
    (CLOUD_KEY, ("secret",), "ibm_cos_hmac", "IbmCosHmacDetector"),
    (CLOUD_KEY, (*_CREDENTIAL_WORDS, "softlayer"), "softlayer", "SoftlayerDetector"),
    (CLOUD_KEY, (*_CREDENTIAL_WORDS, "cloudant"), "cloudant", "CloudantDetector"),
    (PRIVATE_KEY, _ALWAYS, "private_key", "PrivateKeyDetector"),
    (ACCESS_LINK, _ALWAYS, "basic_auth", "BasicAuthDetector"),
    (API_TOKEN, _ALWAYS, "discord", "DiscordBotTokenDetector"),
    (API_TOKEN, _ALWAYS, "gitlab_token", "GitLabTokenDetector"),
    (API_TOKEN, _ALWAYS, "jwt", "JwtTokenDetector"),
    (API_TOKEN, _ALWAYS, "mailchimp", "MailchimpDetector"),
    (API_TOKEN, _ALWAYS, "npm", "NpmDetector"),
    (API_TOKEN, _ALWAYS, "sendgrid", "SendGridDetector"),
    (API_TOKEN, _ALWAYS, "slack", "SlackDetector"),
    (API_TOKEN, _ALWAYS, "square_oauth", "SquareOAuthDetector"),
    (API_TOKEN, _ALWAYS, "telegram_token", "TelegramBotTokenDetector"),
    (API_TOKEN, _ALWAYS, "twilio", "TwilioKeyDetector"),
)


@functools.cache
def _finders() -> Sequence[tuple[str, tuple[str, ...], Finder]]:
    # Imported here: detect-secrets pulls in `requests`, which the API never needs.
    finders = []
    for kind, words, module, name in _PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
        finders.append((kind, words, plugin.analyze_string))
    return tuple(finders)


def library_finding(text: str) -> str | None:
    """The kind of secret a detect-secrets plugin finds in `text`, or None."""
    lowered = text.lower()
    for kind, words, find in _finders():
        if words and not any(word in lowered for word in words):
            continue
        if any(True for _ in find(text)):
            return kind
    return None
