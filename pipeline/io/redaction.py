"""Secrets out of what gpfit records (the manifest's options and input), by
their structure rather than by a list of option names:

- a value under a secret-like name (an option, a JSON key, a key=value
  pair): password, secret, token, credential, private/access/account/api
  key, signature, sig, SharedAccessSignature, authorization, cookie;
- inside strings: JSON objects and lists (walked, then written back),
  passwords in URLs (scheme://user:PASSWORD@host), key=value pairs of
  connection strings and URL queries (;, & or ? separated), HTTP
  authorization values (Bearer/Basic ...), and tokens recognisable by their
  shape (JWTs, AWS access key ids, Google OAuth tokens and API keys,
  GitHub and Slack tokens).

Booleans, numbers other than under a secret name, and empty values are kept.
"""
from __future__ import annotations

import json
import re

REDACTED = "<redacted>"

_SECRET_WORDS = (r"passw|passphrase|^pass$|pwd|secret|token|credential|private[_-]?key"
                 r"|access[_-]?key|account[_-]?key|api[_-]?key|auth[_-]?key|session[_-]?key"
                 r"|signature|^sig$|sharedaccess|authorization|cookie")
_SECRET_NAME = re.compile(_SECRET_WORDS, re.IGNORECASE)
# Separators of connection strings (;), URL queries (? &), lists (,) and words.
_SEPARATORS = re.compile(r"([;?&,\s\"']+)")
# An Azure SAS inside a connection string: its value holds & and = itself.
_SAS = re.compile(r"(SharedAccessSignature\s*=\s*)[^;\s\"']+", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(://[^/:@\s]*:)[^@/\s]+@")
_AUTH_VALUE = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_TOKEN_SHAPES = re.compile(
    r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+"  # a JWT
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"                            # AWS access key id
    r"|\bya29\.[A-Za-z0-9_-]{10,}"                               # Google OAuth token
    r"|\bAIza[0-9A-Za-z_-]{35}\b"                                # Google API key
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}")


def is_secret_name(name: str) -> bool:
    """Whether an option, JSON key or pair key names a secret."""
    return bool(_SECRET_NAME.search(str(name)))


def redacted(name: str, value):
    """value, as recorded under `name`, with its secrets replaced by REDACTED."""
    if isinstance(value, bool) or value is None or value == "":
        return value
    if is_secret_name(name):
        return REDACTED
    if isinstance(value, str):
        return redacted_text(value)
    if isinstance(value, dict):
        return {k: redacted(k, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(name, v) for v in value]
    return value


def redacted_text(text: str) -> str:
    """A string with its secrets replaced (see the module doc)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            pass
        else:
            return json.dumps(redacted("", parsed))
    text = _SAS.sub(rf"\1{REDACTED}", text)
    text = _URL_PASSWORD.sub(rf"\1{REDACTED}@", text)
    text = _AUTH_VALUE.sub(rf"\1 {REDACTED}", text)
    text = _pairs(text)
    return _TOKEN_SHAPES.sub(REDACTED, text)


def _pairs(text: str) -> str:
    """Redacts the values of secret-like key=value pairs (and `key: value`
    across a space), pair by pair between separators."""
    parts = _SEPARATORS.split(text)
    hide_next = False
    for i in range(0, len(parts), 2):  # odd indexes hold the separators
        part = parts[i]
        if hide_next and part:
            parts[i], hide_next = REDACTED, False
            continue
        if part.endswith(":") and is_secret_name(part[:-1]):
            hide_next = True
            continue
        parts[i] = _pair(part)
    return "".join(parts)


def _pair(part: str) -> str:
    """key=value -> key=REDACTED if key is secret-like; values that are pairs
    themselves (conn=Password=...) are looked into."""
    key, eq, value = part.partition("=")
    if not eq or not value:
        return part
    if is_secret_name(key):
        return f"{key}={REDACTED}"
    return f"{key}={_pair(value)}"
