"""The secret corpus: what learning refuses to keep, and what it keeps, in the words people use.

Read it as the spec of domain/secrets.py. Each positive names the kind of secret the
rejection reason will name ("looks like a password, which memory never keeps"); each
negative is an ordinary fact that memory must still be able to learn. The phrasings come in
English, German, French and Spanish (and a few Italian and Portuguese).
"""

from __future__ import annotations

import pytest

from agent_memory.domain.secrets import (
    ACCESS_LINK,
    API_TOKEN,
    CARD,
    CLOUD_KEY,
    LOGIN,
    ONE_TIME_CODE,
    PASSWORD,
    PIN,
    PRIVATE_KEY,
    key_secret,
    looks_secret,
)

SECRETS = [
    # -- passwords, in any order and any language -------------------------------------------
    ("hunter2 is my password", PASSWORD),
    ("my pw is Tr0ub4dor&3", PASSWORD),
    ("My password is hunter2", PASSWORD),
    ("The password for the staging db is s3cr3t!", PASSWORD),
    ("the wifi password is now BlueSky42", PASSWORD),
    ("I changed my password to Blue42! yesterday", PASSWORD),
    ("password hunter22", PASSWORD),
    ('"open sesame" is the password', PASSWORD),
    ("Password = 'letmein'", PASSWORD),
    ("the passphrase is correct horse battery staple", PASSWORD),
    ("Mein Passwort ist Sommer2024", PASSWORD),
    ("Das WLAN-Passwort lautet Xy!12ab", PASSWORD),
    ("Sommer2024 ist mein Passwort", PASSWORD),
    ("Das Kennwort für den Router ist Geheim99", PASSWORD),
    ("mon mot de passe est soleil123", PASSWORD),
    ("Le mot de passe du wifi est Bonjour2024", PASSWORD),
    ("soleil123 est mon mot de passe", PASSWORD),
    ("mi contraseña es gato2020", PASSWORD),
    ("La contraseña del correo es Perro#99", PASSWORD),
    ("gato2020 es mi contraseña", PASSWORD),
    ("la password è ciao123", PASSWORD),
    ("a senha é abc123", PASSWORD),
    # -- logins with their password ---------------------------------------------------------
    ("admin login is root / hunter2", LOGIN),
    ("login: admin/admin", LOGIN),
    ("user root pass hunter2", LOGIN),
    ("username: ana@example.com password: Blue42!", LOGIN),
    ("Die Zugangsdaten sind admin / Geheim99", LOGIN),
    ("mes identifiants sont marie / Soleil2024", LOGIN),
    # -- connection strings and URLs with credentials ---------------------------------------
    ("postgres://user:pass@host", ACCESS_LINK),
    ("https://user:token@host", ACCESS_LINK),
    ("mongodb+srv://app:S3cr3t@cluster0.example.net/db", ACCESS_LINK),
    ("redis://:hunter2@cache.internal:6379/0", ACCESS_LINK),
    ("ssh root:hunter2@db.example.com", ACCESS_LINK),
    ("jdbc:mysql://db.example.com/app?user=root&password=Secr3t", ACCESS_LINK),
    ("Server=db1;User Id=sa;Password=Secr3t;", PASSWORD),
    ("https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXX", API_TOKEN),
    # -- API keys and tokens ----------------------------------------------------------------
    ("key id AKIAIOSFODNN7EXAMPLE", CLOUD_KEY),
    ('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', CLOUD_KEY),
    ("ghp_1234567890abcdefghijABCDEFGHIJ123456", API_TOKEN),
    ("slack xoxb-123456789012-abcdefghijkl", API_TOKEN),
    ("stripe sk_live_51Habcdefghijklmnopqrstuvwx", API_TOKEN),
    ("use sk-proj-abcdefghijklmnopqrstuvwx1234 for the API", API_TOKEN),
    ("SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", API_TOKEN),
    ("bot 123456789:ABCdefGhIJKlmNoPQRsTUVwxyZ1234567-8", API_TOKEN),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        API_TOKEN,
    ),
    ("Authorization: Bearer abcdefghijklmnop.qrstuv", API_TOKEN),
    ("the API key is 9f8e7d6c5b4a", API_TOKEN),
    ("der API-Schlüssel ist Zk8yQ2xhYmNk", API_TOKEN),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", PRIVATE_KEY),
    # -- one-time and recovery codes --------------------------------------------------------
    ("my recovery codes are 8f3k-29dj, 2k4l-99sd", ONE_TIME_CODE),
    ("the 2FA code is 482910", ONE_TIME_CODE),
    ("OTP: 123456", ONE_TIME_CODE),
    ("backup code: 4829 1038", ONE_TIME_CODE),
    ("recovery key: ABCD-EFGH-IJKL-MNOP", ONE_TIME_CODE),
    ("Bestätigungscode 123456", ONE_TIME_CODE),
    ("code de vérification : 123456", ONE_TIME_CODE),
    ("código de verificación 739201", ONE_TIME_CODE),
    ("CVV 123", ONE_TIME_CODE),
    # -- PINs and door codes ----------------------------------------------------------------
    ("my PIN is 4921", PIN),
    ("PIN 4921", PIN),
    ("the PIN for my card is 4921", PIN),
    ("the door code is 4711", PIN),
    ("The code for the front door is 4711#", PIN),
    ("Türcode 4711", PIN),
    ("le code de la porte est 4321B", PIN),
    ("el código de la puerta es 1234", PIN),
    # -- payment cards (Luhn), with spaces or dashes ----------------------------------------
    ("4111 1111 1111 1111", CARD),
    ("my card is 5500-0000-0000-0004", CARD),
    ("Amex 378282246310005", CARD),
    ("meine Kreditkarte: 4012 8888 8888 1881", CARD),
]

ORDINARY = [
    "a budget of 1500 EUR",
    "My budget is 1500 EUR",
    "the meeting is at 10:30",
    "order 12345",
    "my password manager is 1Password",
    "reset your password via the link in settings",
    "The password is required for the admin console.",
    "The password is stored in the team vault.",
    "I forgot my password yesterday and had to reset it.",
    "The password is 12 characters long",
    "Passwords must be at least 12 characters long.",
    "What is my password?",
    "The passphrase is stored in the vault.",
    "Mein Passwort ist zu kurz",
    "mon mot de passe est trop court",
    "mi contraseña es demasiado corta",
    "Rotate the API key every 90 days.",
    "the access token was rotated",
    "the token count was 1500",
    "Claude handles 200k tokens",
    "token-based auth is enough for the intranet",
    "the login is via SSO",
    "the login page is slow",
    "The meeting room PIN board is by the door.",
    "The PIN must be 4 digits",
    "the door code is on the fridge",
    "the security code review is on Monday",
    "My flight confirmation code is X7YQ2B",
    "version 2.4.1",
    "Python 3.11.7 with FastAPI 0.163.2",
    "Call me at +49 30 1234567 after 5 pm.",
    "My hotel room is 412",
    "Room 1207 at the Adlon, floor 12",
    "we arrive on 2025-05-01 and leave 05/09/2025",
    "flight LH 1234 departs at 07:45 from gate B22, seat 14C",
    "zip code 10115",
    "the error code is 500",
    "IBAN DE89 3704 0044 0532 0130 00",
    "4111 1111 1111 1112 is not a valid card",
    "mailto:ana@example.com",
    "Secret Santa 2024 is on Friday",
    "a combination of rice and 3 beans",
    "boarding pass 12A",
    "my hotel is Oxbow-2295",
    "Docs are at https://docs.python.org/3/library/urllib.parse.html#url-parsing",
    "the fix is commit f44e0674e8306645d02f353ef58a9bc698b04acd",
    "order 123e4567-e89b-12d3-a456-426614174000 shipped",
    "Das Hotel liegt am Bahnhof, Zimmer 12",
    "La reunión es a las 10:30 en la sala 4",
    "Le budget est de 1500 EUR",
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:openai-AbCdEf",
    "My order number is 4000123412341234",
    "My phone number is 0151 2345 6789.",
    "My username is ana.lopez88.",
    "The promo code is SUMMER20.",
    "The budget code for travel is 4711.",
    "The OTP is sent by SMS.",
    "Our Wi-Fi password is printed on the router.",
    "Le code PIN doit avoir 4 chiffres.",
    "Die PIN muss 4 Ziffern haben.",
    "The webinar link is https://zoom.us/j/1234567890.",
]

SECRET_KEYS = [
    "admin-login-root-hunter2",
    "wifi-password-hunter22",
    "pin-4921",
    "door-code-4711",
    "card-4111-1111-1111-1111",
    "ghp_abcdefghijklmnopqrstuvwxyz0123",
]

ORDINARY_KEYS = [
    "budget",
    "hotel",
    "tests-first",
    "no-early-flights",
    "short-answers-list-changes",
    "never-push-main-fridays",
    "password-manager",
    "wifi-password",
    "admin-login",
    "login-page-v2",
    "pin-board",
    "trip-2025-05-01",
    "room-412",
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_a_secret_is_refused_with_its_kind(text: str, kind: str) -> None:
    assert looks_secret(text) == kind


@pytest.mark.parametrize("text", ORDINARY)
def test_an_ordinary_fact_is_kept(text: str) -> None:
    assert looks_secret(text) is None


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_a_key_that_holds_a_secret_is_refused(key: str) -> None:
    assert key_secret(key) is not None


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_an_ordinary_key_is_kept(key: str) -> None:
    assert key_secret(key) is None


def test_the_corpus_covers_every_kind_and_enough_phrasings() -> None:
    assert {kind for _text, kind in SECRETS} >= {
        PASSWORD,
        LOGIN,
        ACCESS_LINK,
        API_TOKEN,
        CLOUD_KEY,
        PRIVATE_KEY,
        ONE_TIME_CODE,
        PIN,
        CARD,
    }
    assert len(SECRETS) + len(ORDINARY) >= 60
