"""The API's bearer token: where it comes from and how it is checked.

The token is read from a file (preferred: it never shows in `ps` or in the environment of child processes)
or from REASSIGND_API_TOKEN. It is compared in constant time so the comparison leaks nothing about how many
leading characters a guess got right, and it is never logged: only whether a request carried one.
"""

from __future__ import annotations

import hmac
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from reassignd.model import InvalidInputError, Problem

TOKEN_ENV = "REASSIGND_API_TOKEN"
TOKEN_FILE_ENV = "REASSIGND_API_TOKEN_FILE"
MIN_TOKEN_LENGTH = 16


def load_token(
    token_file: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    min_length: int = 0,
) -> str | None:
    """The token from `token_file`, else $REASSIGND_API_TOKEN_FILE, else $REASSIGND_API_TOKEN, else None.

    The daemon passes min_length=MIN_TOKEN_LENGTH so a guessable token is refused at start-up; clients
    accept whatever the operator was given. Surrounding whitespace (a trailing newline) is not part of it.
    """
    env = os.environ if env is None else env
    path = token_file or env.get(TOKEN_FILE_ENV) or None
    if path is not None:
        token = _read_token_file(Path(path))
        where, fld = str(path), "(token file)"
    else:
        raw = env.get(TOKEN_ENV)
        if raw is None:
            return None
        token = raw.strip()
        where, fld = "environment", TOKEN_ENV
    if not token:
        raise InvalidInputError("API token", [Problem(where, fld, "is empty")])
    if any(ch.isspace() for ch in token):
        raise InvalidInputError("API token", [Problem(where, fld, "must not contain whitespace")])
    if len(token) < min_length:
        raise InvalidInputError(
            "API token", [Problem(where, fld, f"is {len(token)} characters; use at least {min_length}")]
        )
    return token


def _read_token_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidInputError("API token", [Problem(str(path), "(token file)", reason)]) from None


def token_file_is_private(path: str | os.PathLike[str]) -> bool:
    """False when group or others may read the file: worth a warning at start-up, not a refusal."""
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return True
    return not mode & (stat.S_IRWXG | stat.S_IRWXO)


def bearer_token(authorization: str | None) -> str | None:
    """The credentials of an `Authorization: Bearer <token>` header; None for anything else."""
    if not authorization:
        return None
    scheme, _, credentials = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    credentials = credentials.strip()
    return credentials or None


def token_matches(expected: str | None, presented: str | None) -> bool:
    """Constant-time comparison; no expected token means nothing matches (mutations stay closed)."""
    if expected is None or presented is None:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), presented.encode("utf-8"))
