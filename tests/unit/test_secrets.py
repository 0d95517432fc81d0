"""Memory never keeps passwords, keys, tokens or links that give access (seed 000)."""

from __future__ import annotations

import pytest

from agent_memory.domain.secrets import (
    ACCESS_LINK,
    API_TOKEN,
    CLOUD_KEY,
    PASSWORD,
    PRIVATE_KEY,
    RANDOM_STRING,
    looks_secret,
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # passwords
        ("My password is hunter2", PASSWORD),
        ("the wifi password is CorrectHorse", PASSWORD),
        ("The password for the staging db is s3cr3t!", PASSWORD),
        ("pwd: abc123", PASSWORD),
        ("Password = 'letmein'", PASSWORD),
        ("Passwort: Sommer2024", PASSWORD),
        ("my PIN is 4921", PASSWORD),
        # cloud keys and tokens
        ("key id AKIAIOSFODNN7EXAMPLE", CLOUD_KEY),
        ("temporary creds ASIAY34FZKBOKMUTVV7A", CLOUD_KEY),
        ("use sk-proj-abcdefghijklmnopqrstuvwx1234 for the API", API_TOKEN),
        ("sk-ant-api03-abcdefghijklmnopqrstu", API_TOKEN),
        ("stripe sk_live_51Habcdefghijkl", API_TOKEN),
        ("ghp_1234567890abcdefghijABCDEFGHIJ123456", API_TOKEN),
        ("github_pat_11ABCDEFG0123456789_abcdefghij", API_TOKEN),
        ("slack xoxb-123456789012-abcdefghijkl", API_TOKEN),
        ("maps key AIzaSyD-abcdefghijklmnopqrstuvwxyz12345", API_TOKEN),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            API_TOKEN,
        ),
        ("Authorization: Bearer abcdefghijklmnop.qrstuv", API_TOKEN),
        ("my API key is 9f8e7d6c5b4a", API_TOKEN),
        ("api_key=ZXhhbXBsZQ", API_TOKEN),
        ("token: abc-def-ghi", API_TOKEN),
        ("the client secret is Zk8yQ2xhYmNk", API_TOKEN),
        # private keys
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...", PRIVATE_KEY),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", PRIVATE_KEY),
        ("-----BEGIN PRIVATE KEY-----", PRIVATE_KEY),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", PRIVATE_KEY),
        # links that give access
        (
            "https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Signature=8f2a3b",
            ACCESS_LINK,
        ),
        ("see https://files.example.com/a.zip?sig=abcdef123&se=2030", ACCESS_LINK),
        ("https://app.example.com/login?token=abc123def", ACCESS_LINK),
        ("https://example.com/callback#access_token=ya29.abcd&expires_in=3600", ACCESS_LINK),
        ("https://maps.example.com/api?key=AbCd1234", ACCESS_LINK),
        ("https://admin:s3cret@db.internal.example.com:5432/app", ACCESS_LINK),
        ("join us: https://example.com/invite/Xk29aPq7", ACCESS_LINK),
        ("https://app.example.com/reset-password/8c1f9e2a-77d1-4a0b", ACCESS_LINK),
        ("https://app.example.com/magic-link?t=a1b2c3d4e5", ACCESS_LINK),
        ("https://discord.gg/aBcDeF12", ACCESS_LINK),
        ("https://chat.whatsapp.com/KpLz8Q3rT0m", ACCESS_LINK),
        # long random strings
        ("the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", API_TOKEN),
        ("aws: wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY9x2", RANDOM_STRING),
        ("value jk0ojk648mqrnumjtnl7jic20addj648", RANDOM_STRING),
    ],
)
def test_secrets_are_recognized_with_their_reason(text: str, reason: str) -> None:
    assert looks_secret(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "my budget is 1500 EUR",
        "The trip budget is 1500 EUR.",
        "Ana likes short answers with a list of changes.",
        "Run the tests before you report that work is done.",
        "The team uses Effect for all new services.",
        "I forgot my password yesterday and had to reset it.",
        "The password is required for the admin console.",
        "The password is stored in the team vault.",
        "Passwords must be at least 12 characters long.",
        "Rotate the API key every 90 days.",
        "We need an API key for the weather service.",
        "The token is expired.",
        "the access token was rotated",
        "the key is to ship small changes",
        "Docs are at https://docs.python.org/3/library/urllib.parse.html#url-parsing",
        "See https://github.com/org/repo/pull/123?tab=files",
        "https://www.google.com/search?q=invite+only+events",
        "Book at https://example.com/hotels/berlin?checkin=2025-05-01&nights=3",
        "https://example.com/blog/how-to-reset-your-router",
        "the fix is commit f44e0674e8306645d02f353ef58a9bc698b04acd",
        "order 123e4567-e89b-12d3-a456-426614174000 shipped",
        "customer-onboarding-checklist-2024-v2-final is the file name",
        "release-2024-plan-for-the-marketing-team-q3",
        "Call me at +49 30 1234567 after 5 pm.",
        "The meeting room PIN board is by the door.",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert looks_secret(text) is None
