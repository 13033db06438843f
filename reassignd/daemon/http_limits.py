"""Connection limits of the API server: how many clients at once, and how long a slow one may take.

aiohttp closes an idle kept-alive connection (`keepalive_timeout`) but has no limit on connections and
starts that timer only per connection, so 300 clients sending one header byte every 5 s would hold 300
sockets for as long as the idle timeout allows. Each connection here goes through `ConnectionGuard`:

- beyond `max_connections` open connections a new one is answered `503 unavailable` and closed at once;
- a connection must deliver its first request line and headers within `header_timeout` or it is closed
  (later requests on a kept-alive connection have the idle timeout, aiohttp's own timer);
- the request body must arrive within `body_timeout` (the API answers `408 request_timeout`), and a
  Content-Length above `max_body_bytes` is answered `413` before any of the body is read (api.py).

The guard wraps aiohttp's protocol object rather than patching it: asyncio talks to `_GuardedConnection`,
which forwards every call to aiohttp's RequestHandler once the connection is admitted.

A request aiohttp's parser refuses (a request line or a header over 8,190 bytes, a line that is not HTTP)
never reaches the application or its middlewares: aiohttp answers it from its RequestHandler's
`handle_error`, in plain text echoing the line. `_JsonErrors` is that handler answering in the API's error
shape instead (`400 invalid_request`, a request id, the connection closed), naming the rule broken and
echoing nothing of the request.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from aiohttp.http_exceptions import BadStatusLine, HttpProcessingError, LineTooLong
from aiohttp.web_request import BaseRequest

from reassignd import config_keys
from reassignd.logs import get_logger

DEFAULT_MAX_BODY_BYTES: Final = 64 * 1024 * 1024  # a 100,000-partition plan is ~8 MB of JSON
_log = get_logger("reassignd.api")


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The `api.*` limits of docs/configuration.md."""

    max_connections: int = 256
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    idle_timeout: float = 30.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    @classmethod
    def from_config(cls, config: Any) -> ServerLimits:
        return cls(
            max_connections=int(config[config_keys.API_MAX_CONNECTIONS]),
            header_timeout=float(config[config_keys.API_HEADER_TIMEOUT_SECONDS]),
            body_timeout=float(config[config_keys.API_BODY_TIMEOUT_SECONDS]),
            idle_timeout=float(config[config_keys.API_IDLE_TIMEOUT_SECONDS]),
            max_body_bytes=int(config[config_keys.API_MAX_BODY_BYTES]),
        )


def _busy_response() -> bytes:
    body = json.dumps(
        {"error": {"code": "unavailable", "message": "too many open connections; retry shortly"}}
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


_BUSY: Final = _busy_response()


class ConnectionGuard:
    """Admits at most `limits.max_connections` connections and closes those whose first request is late."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.open = 0
        self.refused = 0
        self.timed_out = 0
        self._waiting: dict[web.RequestHandler, _GuardedConnection] = {}

    def factory(self, make_handler: Callable[[], web.RequestHandler]) -> Callable[[], asyncio.Protocol]:
        return lambda: _GuardedConnection(self, make_handler())

    def request_started(self, handler: object) -> None:
        """The API calls this when a request reaches it: its headers arrived in time."""
        connection = self._waiting.pop(handler, None)  # type: ignore[call-overload]
        if connection is not None:
            connection.cancel_deadline()


class _GuardedConnection(asyncio.Protocol):
    def __init__(self, guard: ConnectionGuard, handler: web.RequestHandler) -> None:
        self.guard = guard
        self.handler = handler
        self.admitted = False
        self.transport: asyncio.Transport | None = None
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        guard = self.guard
        if guard.open >= guard.limits.max_connections:
            guard.refused += 1
            if guard.refused == 1 or guard.refused % 100 == 0:
                _log.warning("api_connection_refused", open=guard.open, refused_total=guard.refused)
            transport.write(_BUSY)
            transport.close()
            return
        self.admitted = True
        guard.open += 1
        guard._waiting[self.handler] = self
        loop = asyncio.get_running_loop()
        self.deadline = loop.call_later(guard.limits.header_timeout, self._headers_late)
        self.handler.connection_made(transport)

    def _headers_late(self) -> None:
        self.deadline = None
        if self.guard._waiting.pop(self.handler, None) is None:
            return
        self.guard.timed_out += 1
        if self.transport is not None:
            self.transport.close()

    def cancel_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def data_received(self, data: bytes) -> None:
        if self.admitted:
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        if self.admitted:
            self.handler.eof_received()
        return None

    def pause_writing(self) -> None:
        if self.admitted:
            self.handler.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.admitted:
            return
        self.admitted = False
        self.cancel_deadline()
        self.guard._waiting.pop(self.handler, None)
        self.guard.open -= 1
        self.handler.connection_lost(exc)


class _JsonErrors(web.RequestHandler):
    """aiohttp's RequestHandler, but a request its parser refuses is answered in the API's error shape."""

    __slots__ = ()

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # as aiohttp's: a response is under way, the connection is lost
            raise ConnectionError("a response was sent already: no room for the error")
        code, text = _refusal(status, exc)
        request_id = uuid.uuid4().hex
        level = "info" if status < 500 else "error"
        getattr(_log, level)(
            "api_bad_http_request", status=status, error=type(exc).__name__, request_id=request_id
        )
        body = json.dumps({"error": {"code": code, "message": text}})
        response = web.Response(
            status=status, text=body, content_type="application/json", headers={"X-Request-Id": request_id}
        )
        response.force_close()
        return response


def _refusal(status: int, exc: BaseException | None) -> tuple[str, str]:
    """The API's code and a message for what aiohttp refused, with nothing of the request in it."""
    if status >= 500:
        return "internal", "internal error; the daemon log has the details (see request id)"
    if isinstance(exc, LineTooLong):
        limit = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else None
        size = f"longer than {limit} bytes" if limit else "too long"
        return "invalid_request", f"the request line or a header line is {size} (the server's limit)"
    if isinstance(exc, BadStatusLine):
        return "invalid_request", "not a valid HTTP request: the request line cannot be parsed"
    kind = type(exc).__name__ if isinstance(exc, HttpProcessingError) else "malformed"
    return "invalid_request", f"not a valid HTTP request ({kind})"


class GuardedRunner(web.AppRunner):
    """An AppRunner whose sites accept connections through `guard`."""

    def __init__(self, app: web.Application, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.guard = guard

    @property
    def server(self) -> Any:
        inner = super().server
        return None if inner is None else _GuardedFactory(inner, self.guard)


class _GuardedFactory:
    """What TCPSite hands to `loop.create_server`: aiohttp's Server, with each connection guarded."""

    def __init__(self, inner: web.Server, guard: ConnectionGuard) -> None:
        self._inner = inner
        self._make = guard.factory(lambda: _json_errors(inner()))

    def __call__(self) -> asyncio.Protocol:
        return self._make()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _json_errors(handler: web.RequestHandler) -> web.RequestHandler:
    """The handler aiohttp's Server made (its own arguments, its own fallbacks), answering errors in the API's
    shape: `_JsonErrors` adds no state, only the one method, so the object just changes class."""
    handler.__class__ = _JsonErrors
    return handler
