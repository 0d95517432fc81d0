"""Token formats from a maintained detector: Yelp's `detect-secrets` plugins, used as a library.

`library_finding(text)` answers which kind of secret one of the plugins found, or None. Only
each plugin's `analyze_string` is called: it matches the plugin's patterns and nothing else,
so no verification request is ever sent (a user's secret never leaves the service) and no
global settings or baseline are read.

The package imports `requests` and its scanning machinery (about 110 ms), so it is imported
at the first check, where learning runs, never on the API's cold path.

Plugins left out, and why:
- `KeywordDetector` and the high-entropy plugins look for quoted assignments in source code;
  prose is checked by domain/secrets.py's own rules (several languages, no quotes needed).
- `ArtifactoryDetector`: its `AP[0-9A-F]...` pattern matches capitalised words ("APACHECONF").
- `IPPublicDetector`: an IP address is not a secret.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Sequence

from agent_memory.domain.secret_words import ACCESS_LINK, API_TOKEN, CLOUD_KEY, PRIVATE_KEY

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
    (API_TOKEN, _ALWAYS, "github_token", "GitHubTokenDetector"),
    (API_TOKEN, _ALWAYS, "gitlab_token", "GitLabTokenDetector"),
    (API_TOKEN, _ALWAYS, "jwt", "JwtTokenDetector"),
    (API_TOKEN, _ALWAYS, "mailchimp", "MailchimpDetector"),
    (API_TOKEN, _ALWAYS, "npm", "NpmDetector"),
    (API_TOKEN, _ALWAYS, "openai", "OpenAIDetector"),
    (API_TOKEN, _ALWAYS, "pypi_token", "PypiTokenDetector"),
    (API_TOKEN, _ALWAYS, "sendgrid", "SendGridDetector"),
    (API_TOKEN, _ALWAYS, "slack", "SlackDetector"),
    (API_TOKEN, _ALWAYS, "square_oauth", "SquareOAuthDetector"),
    (API_TOKEN, _ALWAYS, "stripe", "StripeDetector"),
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
