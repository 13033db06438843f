"""The daemon's HTTP API: a thin JSON skin over ControllerService.

Everything an operator can do goes through the service protocol, so this module only translates: routes to
calls, ServiceError codes to HTTP statuses, and every failure (unknown route, bad JSON, oversize body,
missing token, a bug) to the one error shape `{"error": {"code", "message", "problems"?, "details"?}}`.
Calls that are not GET need the bearer token and are refused before the service is touched. The token
never reaches a log line: the access log is our own and records no headers. docs/api.md and
reassignd/daemon/openapi.json describe the routes; tests keep the document and the router in sync.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import structlog
from aiohttp import abc, web

from reassignd.daemon import auth
from reassignd.daemon.service import JSON, ControllerService, ServiceError
from reassignd.model import InvalidInputError, Problem, ReassignmentPlan

MetricsHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Proposals(Protocol):
    """The daemon's plan proposals (reassignd/daemon/proposals.py)."""

    async def propose(self, body: Mapping[str, Any]) -> JSON: ...


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024  # a 100,000-partition plan is ~8 MB of JSON
REQUEST_ID_HEADER = "X-Request-Id"
OPENAPI_PATH = Path(__file__).resolve().parent / "openapi.json"  # package data: ships in the wheel

# Service codes (service.py) and the API's own, with their statuses.
STATUS_BY_CODE: Mapping[str, int] = {
    "invalid_request": 400,
    "invalid_json": 400,
    "unauthorized": 401,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "payload_too_large": 413,
    "not_leader": 421,
    "invalid_plan": 422,
    "internal": 500,
    "unavailable": 503,
}
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_REFUSAL_CODE = web.ResponseKey("refusal_code", str)
_INCOMING_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_log = structlog.get_logger("reassignd.api")


def create_app(
    service: ControllerService,
    *,
    token: str | None,
    metrics_handler: MetricsHandler,
    openapi: Mapping[str, Any],
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    on_refused: Callable[[str], None] | None = None,
    proposals: Proposals | None = None,
) -> web.Application:
    """The API application. token=None keeps every mutating route closed (401), never open.

    on_refused(code) is called for every refused command (a non-GET call answered with an error), e.g. to
    count `reassignd_rejected_commands_total{channel="api"}`.
    """
    if token is None:
        _log.warning("api_token_missing", detail="no API token configured: mutating calls are refused")
    handlers = _Handlers(service, metrics_handler, dict(openapi))
    handlers.proposals = proposals
    app = web.Application(
        middlewares=[_envelope(token, max_body_bytes, on_refused)], client_max_size=max_body_bytes
    )
    r = app.router
    r.add_post("/v1/plans", handlers.submit)
    r.add_get("/v1/plans", handlers.plans)
    r.add_get("/v1/plans/{plan_id}", handlers.plan)
    r.add_get("/v1/status", handlers.status)
    for action in ("pause", "resume", "cancel"):
        r.add_post(f"/v1/plans/{{plan_id}}/{action}", handlers.lifecycle(action))
        r.add_post(f"/v1/{action}", handlers.lifecycle(action))
    r.add_get("/v1/limits", handlers.limits)
    r.add_patch("/v1/limits", handlers.set_limits)
    r.add_get("/v1/throttles", handlers.throttles)
    r.add_patch("/v1/throttles", handlers.set_throttles)
    r.add_get("/v1/reassignments", handlers.reassignments)
    r.add_post("/v1/placements", handlers.place)
    r.add_post("/v1/proposals", handlers.propose)
    r.add_get("/healthz", handlers.healthz)
    r.add_get("/readyz", handlers.readyz)
    r.add_get("/metrics", handlers.metrics)
    r.add_get("/openapi.json", handlers.openapi)
    return app


# ---------------------------------------------------------------------------------------------------------
# Handlers


class _Handlers:
    def __init__(self, service: ControllerService, metrics: MetricsHandler, openapi: JSON) -> None:
        self.service = service
        self.metrics_handler = metrics
        self.document = openapi

    async def submit(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        if not isinstance(body, dict):
            got = type(body).__name__ if body is not None else "null"
            raise _invalid_plan(
                InvalidInputError(
                    "reassignment plan", [Problem("plan", "(document)", f"must be a JSON object, got {got}")]
                )
            )
        dry_run = _option(request, body, "dry_run")
        allow_rf_change = _option(request, body, "allow_rf_change")
        try:
            plan = await _off_loop(len(body.get("partitions") or ()), ReassignmentPlan.from_dict, body)
        except InvalidInputError as exc:
            raise _invalid_plan(exc) from None
        result = await self.service.submit_plan(plan, dry_run=dry_run, allow_rf_change=allow_rf_change)
        if dry_run:
            return _json(result, 200)
        headers = {"Location": f"/v1/plans/{result['plan_id']}"} if result.get("plan_id") else None
        return _json(result, 201, headers=headers)

    async def plans(self, _: web.Request) -> web.Response:
        return _json({"plans": self.service.list_plans()})

    async def plan(self, request: web.Request) -> web.Response:
        return _json(self.service.plan_status(request.match_info["plan_id"]))

    async def status(self, _: web.Request) -> web.Response:
        return _json(self.service.plan_status(None))

    def lifecycle(self, action: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            method = getattr(self.service, action)
            return _json(await method(request.match_info.get("plan_id")))

        return handle

    async def limits(self, _: web.Request) -> web.Response:
        return _json(self.service.limits())

    async def set_limits(self, request: web.Request) -> web.Response:
        return _json(await self.service.set_limits(await _json_object(request)))

    async def throttles(self, _: web.Request) -> web.Response:
        return _json(self.service.throttles())

    async def set_throttles(self, request: web.Request) -> web.Response:
        return _json(await self.service.set_throttles(await _json_object(request)))

    async def reassignments(self, _: web.Request) -> web.Response:
        return _json({"reassignments": await self.service.cluster_reassignments()})

    async def place(self, request: web.Request) -> web.Response:
        return _json(await self.service.place(await _json_object(request)))

    proposals: Proposals | None = None

    async def propose(self, request: web.Request) -> web.Response:
        body = await _json_object(request)
        if self.proposals is None:
            raise ServiceError("unavailable", "proposals are not enabled on this daemon (proposals.enable)")
        return _json(await self.proposals.propose(body))

    async def healthz(self, _: web.Request) -> web.Response:
        return _json(self.service.health())

    async def readyz(self, _: web.Request) -> web.Response:
        report = dict(self.service.readiness())
        if report.get("ready"):
            return _json(report)
        reason = str(report.get("reason") or "not ready")
        return _json({**report, "error": {"code": "unavailable", "message": reason}}, 503)

    async def metrics(self, request: web.Request) -> web.StreamResponse:
        return await self.metrics_handler(request)

    async def openapi(self, _: web.Request) -> web.Response:
        return _json(self.document)


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers, dumps=_dumps)


def _dumps(value: Any) -> str:
    """Strict JSON: a NaN or infinite figure (an ETA at rate 0) becomes null instead of invalid JSON."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except ValueError:
        _log.warning("api_non_finite_number", detail="a NaN or infinity in a response was sent as null")
        return json.dumps(_finite(value), separators=(",", ":"), allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


async def _json_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        raise ServiceError("invalid_json", "the request body is empty: a JSON document is expected")
    try:
        return await _off_loop(len(raw) // 100, json.loads, raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ServiceError("invalid_json", f"the request body is not UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise ServiceError(
            "invalid_json",
            f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            details={"line": exc.lineno, "column": exc.colno},
        ) from None


_OFF_LOOP_ABOVE = 2_000


async def _off_loop(size: int, function: Callable[..., Any], *args: Any) -> Any:
    """Big plans (100,000 partitions: ~8 MB) parse in a thread, so health probes are not kept waiting."""
    if size <= _OFF_LOOP_ABOVE:
        return function(*args)
    return await asyncio.to_thread(function, *args)


async def _json_object(request: web.Request) -> dict[str, Any]:
    body = await _json_body(request)
    if not isinstance(body, dict):
        got = type(body).__name__ if body is not None else "null"
        raise ServiceError(
            "invalid_request",
            "the request body must be a JSON object",
            (Problem("request", "(body)", f"must be a JSON object, got {got}"),),
        )
    return body


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def _option(request: web.Request, body: dict[str, Any], name: str) -> bool:
    """A boolean option from the query (`?dry_run=true`) or the plan document's top level; both must agree."""
    values: list[bool] = []
    if name in request.query:
        raw = request.query[name].strip().lower()
        if raw not in _TRUE | _FALSE:
            raise _bad_option(name, f"query parameter must be true or false, got {request.query[name]!r}")
        values.append(raw in _TRUE)
    if name in body:
        value = body.pop(name)
        if not isinstance(value, bool):
            raise _bad_option(name, f"body field must be true or false, got {value!r}")
        values.append(value)
    if len(set(values)) > 1:
        raise _bad_option(name, "the query parameter and the body field disagree")
    return bool(values and values[0])


def _bad_option(name: str, message: str) -> ServiceError:
    return ServiceError("invalid_request", f"bad option {name}", (Problem("request", name, message),))


def _invalid_plan(exc: InvalidInputError) -> ServiceError:
    return ServiceError(
        "invalid_plan", f"invalid {exc.what}: {len(exc.problems)} problem(s)", problems=exc.problems
    )


# ---------------------------------------------------------------------------------------------------------
# Middleware: request id, authentication, one error shape


def _envelope(token: str | None, max_body_bytes: int, on_refused: Callable[[str], None] | None) -> Any:
    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _INCOMING_ID.match(incoming) else uuid.uuid4().hex
        with structlog.contextvars.bound_contextvars(request_id=request_id):
            response = await _guarded(request, handler, token, max_body_bytes)
            if on_refused is not None and response.status >= 400 and request.method not in _SAFE_METHODS:
                try:
                    on_refused(str(response.get(_REFUSAL_CODE, "error")))
                except Exception:
                    _log.exception("api_on_refused_failed")
        response.headers[REQUEST_ID_HEADER] = request_id
        return response

    return middleware


async def _guarded(
    request: web.Request,
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    token: str | None,
    max_body_bytes: int,
) -> web.StreamResponse:
    routed = request.match_info.http_exception is None
    try:
        if routed and request.method not in _SAFE_METHODS:
            _authenticate(request, token)
        return await handler(request)
    except ServiceError as exc:
        return _service_error(exc, request)
    except InvalidInputError as exc:
        error = ServiceError("invalid_request", f"invalid {exc.what}", problems=exc.problems)
        return _service_error(error, request)
    except web.HTTPException as exc:
        return _http_error(exc, request, max_body_bytes)
    except Exception:
        _log.exception("api_internal_error", method=request.method, path=request.path)
        error = ServiceError("internal", "internal error; the daemon log has the details (see request id)")
        return _service_error(error, request)


def _authenticate(request: web.Request, token: str | None) -> None:
    if token is None:
        raise ServiceError("unauthorized", "this daemon has no API token configured: mutations are disabled")
    presented = auth.bearer_token(request.headers.get("Authorization"))
    if presented is None:
        raise ServiceError("unauthorized", "missing bearer token (Authorization: Bearer <token>)")
    if not auth.token_matches(token, presented):
        raise ServiceError("unauthorized", "wrong bearer token")


def _service_error(exc: ServiceError, request: web.Request) -> web.Response:
    status = STATUS_BY_CODE.get(exc.code, 500)
    level = "warning" if status >= 500 else "info"
    getattr(_log, level)(
        "api_refused", method=request.method, path=request.path, status=status, code=exc.code
    )
    headers = {"WWW-Authenticate": 'Bearer realm="reassignd"'} if status == 401 else None
    response = _json(exc.to_json(), status, headers=headers)
    response[_REFUSAL_CODE] = exc.code
    return response


def _http_error(exc: web.HTTPException, request: web.Request, max_body_bytes: int) -> web.Response:
    headers: dict[str, str] = {}
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = sorted(exc.allowed_methods)
        headers["Allow"] = ", ".join(allowed)
        error = ServiceError(
            "method_not_allowed",
            f"{request.method} is not allowed on {request.path}",
            details={"allowed": allowed},
        )
    elif isinstance(exc, web.HTTPNotFound):
        error = ServiceError("not_found", f"no route for {request.method} {request.path}")
    elif isinstance(exc, web.HTTPRequestEntityTooLarge):
        error = ServiceError(
            "payload_too_large",
            f"the request body exceeds {max_body_bytes} bytes",
            details={"max_bytes": max_body_bytes},
        )
    else:
        code = exc.reason.lower().replace(" ", "_") if exc.reason else "http_error"
        return _json(ServiceError(code, exc.reason or str(exc.status)).to_json(), exc.status)
    response = _service_error(error, request)
    response.headers.update(headers)
    return response


# ---------------------------------------------------------------------------------------------------------
# Serving


class AccessLog(abc.AbstractAccessLogger):
    """One structured line per request: method, path, status, duration, request id. No headers, no query."""

    def log(self, request: Any, response: Any, time: float) -> None:
        _log.info(
            "http_request",
            method=request.method,
            path=request.path,
            status=response.status,
            duration_ms=round(time * 1000, 2),
            request_id=response.headers.get(REQUEST_ID_HEADER),
            remote=request.remote,
        )

    @property
    def enabled(self) -> bool:
        return True


async def start_api(
    app: web.Application, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, shutdown_timeout: float = 5.0
) -> web.AppRunner:
    """Bind and serve; await `runner.cleanup()` to stop. `runner.addresses` lists the bound sockets."""
    runner = web.AppRunner(app, access_log_class=AccessLog, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError:
        await runner.cleanup()
        raise
    _log.info("api_listening", host=host, port=port, addresses=[str(a) for a in runner.addresses])
    return runner


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `[::1]:PORT` or `:PORT` (loopback) -> (host, port), with an error naming the value."""
    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InvalidInputError(
            "listen address", [Problem("api", "listen", f"must be HOST:PORT (port 0-65535), got {value!r}")]
        )
    return host, int(port_text)


def load_openapi(path: str | Path | None = None) -> JSON:
    """The checked-in OpenAPI document (reassignd/daemon/openapi.json) that /openapi.json serves."""
    document: JSON = json.loads(Path(path or OPENAPI_PATH).read_text(encoding="utf-8"))
    return document


def prometheus_metrics_handler(registry: Any = None) -> MetricsHandler:
    """A /metrics handler exposing a prometheus_client registry (the default one when None)."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

    chosen = registry if registry is not None else REGISTRY

    async def handle(_: web.Request) -> web.StreamResponse:
        response = web.Response(body=generate_latest(chosen))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    return handle
