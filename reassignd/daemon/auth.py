"""The API's bearer tokens: the two roles, where a client's token comes from, how a token is checked.

Roles: the operator token (`api.token`) may do everything; the read token (`api.read.token`) may only read.
The daemon reads both from its configuration (`*.file` keys preferred: a file never shows in `ps` or in the
environment of child processes, and the loader refuses one that group or others can access); both have at
least MIN_TOKEN_LENGTH characters or the daemon does not start. A presented token is compared in constant
time with each, so the comparison leaks nothing about how many leading characters a guess got right, and
no token is ever logged: only whether a request carried one.
"""

from __future__ import annotations

import hmac
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from reassignd.config.keys import MIN_TOKEN_LENGTH
from reassignd.model import InvalidInputError, Problem

TOKEN_ENV = "REASSIGND_API_TOKEN"
TOKEN_FILE_ENV = "REASSIGND_API_TOKEN_FILE"
OPERATOR: Final = "operator"
READER: Final = "reader"
__all__ = ["MIN_TOKEN_LENGTH", "OPERATOR", "READER", "ApiAccess", "bearer_token", "load_token"]


@dataclass
class ApiAccess:
    """Who may do what; mutable so SIGHUP can rotate the tokens of a running API."""

    operator: str | None
    reader: str | None = None
    reads_open: bool = False

    def role_of(self, presented: str) -> str | None:
        """OPERATOR, READER or None. Both comparisons always run (constant time, whichever matches)."""
        is_operator = token_matches(self.operator, presented)
        is_reader = token_matches(self.reader, presented)
        if is_operator:
            return OPERATOR
        return READER if is_reader else None


def load_token(
    token_file: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    min_length: int = 0,
    file_var: str = TOKEN_FILE_ENV,
    token_var: str = TOKEN_ENV,
) -> str | None:
    """The token from `token_file`, else $`file_var`, else $`token_var`, else None.

    For clients (the CLI, which names its own variables): they accept whatever the operator was given. The
    daemon reads its tokens through its configuration, which enforces MIN_TOKEN_LENGTH and private files.
    Surrounding whitespace (a trailing newline) is not part of the token.
    """
    env = os.environ if env is None else env
    path = token_file or env.get(file_var) or None
    if path is not None:
        token = _read_token_file(Path(path))
        where, fld = str(path), "(token file)"
    else:
        raw = env.get(token_var)
        if raw is None:
            return None
        token = raw.strip()
        where, fld = "environment", token_var
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
    """False when group or others may access the file (the config loader refuses such secret files)."""
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
