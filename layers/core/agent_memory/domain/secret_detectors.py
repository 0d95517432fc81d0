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
from collections.abc import Callable, Iterable, Sequence

# What each plugin finds is named by one of domain/secrets.py's reasons.
from agent_memory.domain.secret_keys import API_TOKEN, CLOUD_KEY, PRIVATE_KEY
from agent_memory.domain.secret_links import ACCESS_LINK

Finder = Callable[[str], Iterable[str]]

# The keyword plugins (IBM, Cloudant, SoftLayer) cost 10 to 50 times the others on prose: they
# run only when the text has one of their key words (any case). Other plugins start with a
# literal and always run.
_CREDENTIAL_WORDS = ("key", "pw", "pass", "token")
_ALWAYS: tuple[str, ...] = ()


@functools.cache
def _finders() -> Sequence[tuple[str, tuple[str, ...], Finder]]:
    # Imported here: detect-secrets pulls in `requests`, which the API never needs.
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    kinds = [
        (CLOUD_KEY, _ALWAYS, AWSKeyDetector()),
        (CLOUD_KEY, _ALWAYS, AzureStorageKeyDetector()),
        (CLOUD_KEY, _CREDENTIAL_WORDS, IbmCloudIamDetector()),
        (CLOUD_KEY, ("secret",), IbmCosHmacDetector()),
        (CLOUD_KEY, (*_CREDENTIAL_WORDS, "softlayer"), SoftlayerDetector()),
        (CLOUD_KEY, (*_CREDENTIAL_WORDS, "cloudant"), CloudantDetector()),
        (PRIVATE_KEY, _ALWAYS, PrivateKeyDetector()),
        (ACCESS_LINK, _ALWAYS, BasicAuthDetector()),
        (API_TOKEN, _ALWAYS, DiscordBotTokenDetector()),
        (API_TOKEN, _ALWAYS, GitHubTokenDetector()),
        (API_TOKEN, _ALWAYS, GitLabTokenDetector()),
        (API_TOKEN, _ALWAYS, JwtTokenDetector()),
        (API_TOKEN, _ALWAYS, MailchimpDetector()),
        (API_TOKEN, _ALWAYS, NpmDetector()),
        (API_TOKEN, _ALWAYS, OpenAIDetector()),
        (API_TOKEN, _ALWAYS, PypiTokenDetector()),
        (API_TOKEN, _ALWAYS, SendGridDetector()),
        (API_TOKEN, _ALWAYS, SlackDetector()),
        (API_TOKEN, _ALWAYS, SquareOAuthDetector()),
        (API_TOKEN, _ALWAYS, StripeDetector()),
        (API_TOKEN, _ALWAYS, TelegramBotTokenDetector()),
        (API_TOKEN, _ALWAYS, TwilioKeyDetector()),
    ]
    return tuple((kind, words, plugin.analyze_string) for kind, words, plugin in kinds)


def library_finding(text: str) -> str | None:
    """The kind of secret a detect-secrets plugin finds in `text`, or None."""
    lowered = text.lower()
    for kind, words, find in _finders():
        if words and not any(word in lowered for word in words):
            continue
        if any(True for _ in find(text)):
            return kind
    return None
