"""A small synchronous client for the daemon's HTTP API (docs/api.md), used by the CLI.

Synchronous on purpose: a command makes one or a few calls and exits, so an event loop would add nothing.
Two failure kinds stay distinct because the CLI reports them differently: `ApiError` is the daemon saying
no (it carries the stable error code and every problem), `ApiUnreachable` is not reaching a daemon at all.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_API = "http://127.0.0.1:8080"
# The client's own variables. REASSIGND_* configures the daemon (REASSIGND_API_TOKEN_FILE is its
# api.token.file, and it warns about any REASSIGND_* it does not know), so a client setting there leaked
# into a daemon started from the same shell. The old names are still read, with a warning.
API_ENV = "REASSIGNDCTL_API"
TOKEN_FILE_ENV = "REASSIGNDCTL_TOKEN_FILE"
TOKEN_ENV = "REASSIGNDCTL_TOKEN"
DEPRECATED_ENV: Mapping[str, str] = {
    API_ENV: "REASSIGND_API",
    TOKEN_FILE_ENV: "REASSIGND_API_TOKEN_FILE",
    TOKEN_ENV: "REASSIGND_API_TOKEN",
}


def client_env(
    name: str, environ: Mapping[str, str], warn: Callable[[str], None] | None = None
) -> str | None:
    """The client setting `name` (API_ENV, TOKEN_FILE_ENV or TOKEN_ENV) from `environ`: its own variable,
    else the deprecated one it replaced (`warn` is told so), else None."""
    value = environ.get(name)
    if value:
        return value
    old = DEPRECATED_ENV[name]
    value = environ.get(old)
    if value and warn is not None:
        warn(f"${old} is deprecated: set ${name} (REASSIGND_* variables configure the daemon)")
    return value or None


@dataclass
class ApiError(Exception):
    """The daemon answered with an error body `{"error": {...}}`."""

    status: int
    code: str
    message: str
    problems: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ApiUnreachable(Exception):
    """No usable answer: connection refused, timeout, DNS failure, or something that is not the daemon."""


USER_HEADER = "X-Reassignd-User"


def _who() -> str:
    """user@host, as the journal records who made a change (the daemon keeps it as claimed)."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"[:64]


class ApiClient:
    def __init__(
        self, base_url: str | None = None, *, token: str | None = None, timeout: float = 10.0
    ) -> None:
        base = base_url or client_env(API_ENV, os.environ) or DEFAULT_API
        parsed = urllib.parse.urlsplit(base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"API URL must be http(s)://HOST:PORT, got {base!r}")
        self.base_url = base.rstrip("/")
        self._token = token
        self.timeout = timeout

    def __repr__(self) -> str:  # never show the token
        return f"ApiClient({self.base_url!r}, token={'set' if self._token else 'unset'})"

    # --- plans -----------------------------------------------------------------------------------------
    def submit_plan(
        self,
        plan: Mapping[str, Any],
        *,
        dry_run: bool = False,
        allow_rf_change: bool = False,
        name: str | None = None,
        allow_decommissioned: bool = False,
    ) -> Any:
        query = {"dry_run": _flag(dry_run), "allow_rf_change": _flag(allow_rf_change)}
        if name is not None:
            query["name"] = name
        if allow_decommissioned:
            query["allow_decommissioned"] = "true"
        return self.request("POST", "/v1/plans", body=plan, query=query)

    def plans(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/v1/plans")["plans"])

    def status(self, plan_id: str | None = None) -> Any:
        return self.request("GET", _plan_path(plan_id) if plan_id else "/v1/status")

    def lifecycle(self, action: str, plan_id: str | None = None) -> Any:
        if action not in ("pause", "resume", "cancel"):
            raise ValueError(f"unknown plan action {action!r}")
        path = f"{_plan_path(plan_id)}/{action}" if plan_id else f"/v1/{action}"
        return self.request("POST", path)

    # --- tuning and cluster ----------------------------------------------------------------------------
    def limits(self) -> Any:
        return self.request("GET", "/v1/limits")

    def set_limits(self, changes: Mapping[str, Any]) -> Any:
        return self.request("PATCH", "/v1/limits", body=changes)

    def reset_limits(self, keys: list[str] | None = None) -> Any:
        return self.request("POST", "/v1/limits/reset", body={} if keys is None else {"keys": keys})

    def throttles(self) -> Any:
        return self.request("GET", "/v1/throttles")

    def set_throttles(self, changes: Mapping[str, Any]) -> Any:
        return self.request("PATCH", "/v1/throttles", body=changes)

    def reassignments(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/v1/reassignments")["reassignments"])

    def cancel_foreign(self, request: Mapping[str, Any]) -> Any:
        return self.request("POST", "/v1/reassignments/cancel", body=request)

    def recover(self, mode: str) -> Any:
        return self.request("POST", "/v1/recover", body={"mode": mode})

    def place(self, request: Mapping[str, Any]) -> Any:
        return self.request("POST", "/v1/placements", body=request)

    def journal(self, params: Mapping[str, str]) -> Any:
        """One page of GET /v1/journal (params: plan, kind (comma-separated), since, until, after, limit)."""
        return self.request("GET", "/v1/journal", query=params)

    def brokers(self) -> Any:
        return self.request("GET", "/v1/brokers")

    def decommission(self, broker: int, *, drain: bool = False, reason: str | None = None) -> Any:
        body: dict[str, Any] = {"drain": drain, **({"reason": reason} if reason is not None else {})}
        return self.request("POST", f"/v1/brokers/{int(broker)}/decommission", body=body)

    def recommission(self, broker: int) -> Any:
        return self.request("POST", f"/v1/brokers/{int(broker)}/recommission")

    def retarget(self, plan_id: str | None = None) -> Any:
        return self.request("POST", f"{_plan_path(plan_id)}/retarget" if plan_id else "/v1/retarget")

    def anomalies(self) -> Any:
        return self.request("GET", "/v1/anomalies")

    def approve_anomaly(self, anomaly_id: str) -> Any:
        return self.request("POST", f"/v1/anomalies/{urllib.parse.quote(anomaly_id, safe='')}/approve")

    def health(self) -> Any:
        return self.request("GET", "/healthz")

    # --- transport -------------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
    ) -> Any:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json", USER_HEADER: _who()}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._token:  # reads need a token too unless the daemon serves them open (api.read.open)
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return _decode(resp.read(), resp.status, url)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            exc.close()
            raise _api_error(exc.code, raw, url) from None
        except urllib.error.URLError as exc:
            raise ApiUnreachable(
                f"cannot reach the daemon at {self.base_url}: {_reason(exc.reason)}"
            ) from None
        except TimeoutError:
            raise ApiUnreachable(f"no answer from {self.base_url} within {self.timeout:g}s") from None
        except (ConnectionError, OSError) as exc:
            raise ApiUnreachable(f"connection to {self.base_url} failed: {_reason(exc)}") from None


def _decode(raw: bytes, status: int, url: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ApiUnreachable(
            f"{url} answered {status} with something that is not JSON: is it reassignd?"
        ) from None


def _api_error(status: int, raw: bytes, url: str) -> Exception:
    try:
        error = json.loads(raw.decode("utf-8"))["error"]
        return ApiError(
            status,
            str(error["code"]),
            str(error["message"]),
            list(error.get("problems") or []),
            dict(error.get("details") or {}),
        )
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        return ApiUnreachable(f"{url} answered {status} without a reassignd error body: is it reassignd?")


def _reason(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _plan_path(plan_id: str) -> str:
    return "/v1/plans/" + urllib.parse.quote(plan_id, safe="")
