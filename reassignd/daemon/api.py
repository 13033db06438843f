"""The daemon's HTTP API: a thin JSON skin over ControllerService.

Everything an operator can do goes through the service protocol, so this module only translates: routes to
calls, ServiceError codes to HTTP statuses, and every failure (unknown route, bad JSON, oversize body,
missing token, a bug) to the one error shape `{"error": {"code", "message", "problems"?, "details"?}}`.

Two roles (auth.ApiAccess): calls that are not GET need the operator token; GET calls and /metrics need the
read token or the operator token unless reads are configured open; /healthz, /readyz and /openapi.json
are always open. A refused call never reaches the service. No token reaches a log line: the access log is
our own and records no headers. Bodies are read within a time and size limit and parsed by strictjson
(depth, number length, duplicate keys, NaN). docs/api.md and reassignd/daemon/openapi.json describe the
routes; tests keep the document, the router and the behaviour in sync (schemathesis included).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog
from aiohttp import abc, web

from reassignd import strictjson
from reassignd.daemon import auth
from reassignd.daemon.http_limits import DEFAULT_MAX_BODY_BYTES, ConnectionGuard, GuardedRunner, ServerLimits
from reassignd.daemon.journal import parse_query as parse_journal_query
from reassignd.daemon.service import JSON, ControllerService, ServiceError
from reassignd.model import INT32_MAX, InvalidInputError, PlanDraft, Problem, shown
from reassignd.store.actor import acting_as

MetricsHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Proposals(Protocol):
    """The daemon's plan proposals (reassignd/daemon/proposals.py)."""

    async def propose(self, body: Mapping[str, Any]) -> JSON: ...


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_BODY_TIMEOUT = 60.0
MAX_PLACEMENT_PARTITIONS = 100_000  # one CreateReplicaPlacement answer; Kafka clusters hold ~200,000 in all
REQUEST_ID_HEADER = "X-Request-Id"
OPENAPI_PATH = Path(__file__).resolve().parent / "openapi.json"  # package data: ships in the wheel

# Service codes (service.py) and the API's own, with their statuses.
STATUS_BY_CODE: Mapping[str, int] = {
    "invalid_request": 400,
    "invalid_json": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "conflict": 409,
    "payload_too_large": 413,
    "not_leader": 421,
    "invalid_plan": 422,
    "internal": 500,
    "unavailable": 503,
}
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Probes and the API description: never behind a token.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json"})
_REFUSAL_CODE = web.ResponseKey("refusal_code", str)
ACCESS_KEY = web.AppKey("access", auth.ApiAccess)
_GUARD_KEY = web.AppKey("guard", ConnectionGuard)
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
    read_token: str | None = None,
    reads_open: bool = False,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    proposals: Proposals | None = None,
) -> web.Application:
    """The API application. token=None keeps every mutating route closed (401), never open; reads need
    `read_token` or `token` unless `reads_open`. `app[ACCESS_KEY]` may be changed later (SIGHUP).

    on_refused(code) is called for every refused command (a non-GET call answered with an error), e.g. to
    count `reassignd_rejected_commands_total{channel="api"}`.
    """
    access = auth.ApiAccess(operator=token, reader=read_token, reads_open=reads_open)
    if token is None:
        _log.warning("api_token_missing", detail="no API token configured: mutating calls are refused")
    handlers = _Handlers(service, metrics_handler, dict(openapi))
    bounds = _BodyBounds(max_body_bytes, body_timeout)
    app = web.Application(middlewares=[_envelope(access, bounds, on_refused)], client_max_size=max_body_bytes)
    app[ACCESS_KEY] = access
    app[_BOUNDS_KEY] = bounds
    handlers.proposals = proposals
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
    r.add_post("/v1/limits/reset", handlers.reset_limits)
    r.add_get("/v1/throttles", handlers.throttles)
    r.add_patch("/v1/throttles", handlers.set_throttles)
    r.add_get("/v1/reassignments", handlers.reassignments)
    r.add_get("/v1/journal", handlers.journal)
    r.add_post("/v1/reassignments/cancel", handlers.cancel_foreign)
    r.add_post("/v1/recover", handlers.recover)
    r.add_post("/v1/placements", handlers.place)
    r.add_post("/v1/proposals", handlers.propose)
    r.add_get("/v1/brokers", handlers.brokers)
    r.add_post("/v1/brokers/{broker}/decommission", handlers.decommission)
    r.add_post("/v1/brokers/{broker}/recommission", handlers.recommission)
    r.add_post("/v1/retarget", handlers.retarget)
    r.add_post("/v1/plans/{plan_id}/retarget", handlers.retarget)
    r.add_get("/v1/anomalies", handlers.anomalies)
    r.add_post("/v1/anomalies/{anomaly_id}/approve", handlers.approve_anomaly)
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
        forced = _option(request, body, "allow_decommissioned")
        name = _plan_name(request)
        draft = await _off_loop(len(body.get("partitions") or ()), PlanDraft.parse, body)
        if draft.problems:
            await self._refuse_draft(draft, allow_rf_change)
        options: dict[str, Any] = {"name": name} if name else {}
        if forced:  # only when asked: a service that predates the option is called as before
            options["allow_decommissioned"] = True
        result = await self.service.submit_plan(
            draft, dry_run=dry_run, allow_rf_change=allow_rf_change, **options
        )
        if dry_run:
            return _json(result, 200)
        headers = {"Location": f"/v1/plans/{result['plan_id']}"} if result.get("plan_id") else None
        return _json(result, 201, headers=headers)

    async def _refuse_draft(self, draft: PlanDraft, allow_rf_change: bool) -> None:
        """A plan with problems is refused with all of them: what the document itself gets wrong and,
        when the cluster can be read, what does not fit it (unknown brokers). The service is asked as a dry
        run, so nothing can be queued; if it cannot answer (no cluster contact, a standby), the problems of
        the document alone are the answer."""
        try:
            await self.service.submit_plan(draft, dry_run=True, allow_rf_change=allow_rf_change)
        except ServiceError as exc:
            if exc.code == "invalid_plan" and exc.problems:
                raise
        raise _invalid_plan(InvalidInputError("reassignment plan", draft.problems))

    async def plans(self, _: web.Request) -> web.Response:
        return _json({"plans": self.service.list_plans()})

    async def plan(self, request: web.Request) -> web.Response:
        return _json(self.service.plan_status(request.match_info["plan_id"]))

    async def status(self, _: web.Request) -> web.Response:
        return _json(self.service.daemon_status())

    def lifecycle(self, action: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            method = getattr(self.service, action)
            return _json(await method(request.match_info.get("plan_id")))

        return handle

    async def limits(self, _: web.Request) -> web.Response:
        return _json(self.service.limits())

    async def set_limits(self, request: web.Request) -> web.Response:
        return _json(await self.service.set_limits(await _json_object(request)))

    async def reset_limits(self, request: web.Request) -> web.Response:
        """Body `{"keys": [...]}` resets those runtime changes; an empty body or no `keys`, all of them."""
        body = await _json_object(request) if request.can_read_body else {}
        keys = body.get("keys")
        given = "keys" in body  # null is refused, not taken for "all": the document does not allow it
        if given and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
            raise ServiceError(
                "invalid_request",
                "keys must be a list of setting names",
                (Problem("body", "keys", f"got {keys!r}"),),
            )
        unknown = set(body) - {"keys"}
        if unknown:
            raise ServiceError(
                "invalid_request",
                "unknown fields",
                tuple(Problem("body", k[:80], "unknown field") for k in sorted(unknown)),
            )
        return _json(await self.service.reset_limits(keys))

    async def throttles(self, _: web.Request) -> web.Response:
        return _json(self.service.throttles())

    async def set_throttles(self, request: web.Request) -> web.Response:
        return _json(await self.service.set_throttles(await _json_object(request)))

    async def journal(self, request: web.Request) -> web.Response:
        query = {name: request.query.getall(name) for name in request.query}
        return _json(await self.service.journal(parse_journal_query(query)))

    async def reassignments(self, _: web.Request) -> web.Response:
        return _json({"reassignments": await self.service.cluster_reassignments()})

    async def cancel_foreign(self, request: web.Request) -> web.Response:
        return _json(await self.service.cancel_foreign(await _json_object(request)))

    async def recover(self, request: web.Request) -> web.Response:
        return _json(await self.service.recover(await _json_object(request)))

    async def place(self, request: web.Request) -> web.Response:
        body = await _json_object(request)
        _check_placement_size(body)
        return _json(await self.service.place(body))

    proposals: Proposals | None = None

    async def propose(self, request: web.Request) -> web.Response:
        body = await _json_object(request)
        if self.proposals is None:
            raise ServiceError("unavailable", "proposals are not enabled on this daemon (proposals.enable)")
        return _json(await self.proposals.propose(body))

    async def brokers(self, _: web.Request) -> web.Response:
        return _json(await self.service.broker_roles())

    async def decommission(self, request: web.Request) -> web.Response:
        body = await _json_object(request) if request.can_read_body else {}
        return _json(await self.service.decommission(request.match_info["broker"], body))

    async def recommission(self, request: web.Request) -> web.Response:
        return _json(await self.service.recommission(request.match_info["broker"]))

    async def retarget(self, request: web.Request) -> web.Response:
        return _json(await self.service.retarget(request.match_info.get("plan_id")))

    async def anomalies(self, _: web.Request) -> web.Response:
        return _json(self.service.anomalies())

    async def approve_anomaly(self, request: web.Request) -> web.Response:
        return _json(await self.service.approve_anomaly(request.match_info["anomaly_id"]))

    async def healthz(self, _: web.Request) -> web.Response:
        return _json(self.service.health())

    async def readyz(self, _: web.Request) -> web.Response:
        report = dict(self.service.readiness())
        if report.get("ready"):
            return _json(report)
        reason = str(report.get("reason") or "not ready")
        cause = (report.get("store") or {}).get("error") or (report.get("cluster") or {}).get("error")
        message = f"{reason}: {cause}" if cause else reason
        return _json({**report, "error": {"code": "unavailable", "message": message}}, 503)

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


@dataclass(frozen=True, slots=True)
class _BodyBounds:
    max_bytes: int
    timeout: float


_BOUNDS_KEY = web.AppKey("body_bounds", _BodyBounds)
_LINE_COLUMN = re.compile(r"^line (\d+) column (\d+)$")


async def _json_body(request: web.Request) -> Any:
    bounds = request.app[_BOUNDS_KEY]
    try:
        async with asyncio.timeout(bounds.timeout):
            raw = await request.read()
    except TimeoutError:
        raise ServiceError(
            "request_timeout",
            f"the request body did not arrive within {bounds.timeout:g} s",
            details={"timeout_seconds": bounds.timeout},
        ) from None
    if not raw.strip():
        raise ServiceError("invalid_json", "the request body is empty: a JSON document is expected")
    try:
        return await _off_loop(
            len(raw) // 100, strictjson.loads, raw, "request body", max_bytes=bounds.max_bytes, where="body"
        )
    except InvalidInputError as exc:
        problem = exc.problems[0]
        position = _LINE_COLUMN.match(problem.field)
        details = {"line": int(position[1]), "column": int(position[2])} if position else {}
        raise ServiceError(
            "invalid_json",
            f"the request body is not acceptable JSON: {problem.field}: {problem.message}",
            exc.problems,
            details=details,
        ) from None


_OFF_LOOP_ABOVE = 2_000


async def _off_loop(size: int, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Big plans (100,000 partitions: ~8 MB) parse in a thread, so health probes are not kept waiting."""
    if size <= _OFF_LOOP_ABOVE:
        return function(*args, **kwargs)
    return await asyncio.to_thread(function, *args, **kwargs)


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
    """A boolean option from the query (`?dry_run=true`) or the plan document's top level: on when either
    turns it on. (A client that always sends `"dry_run": false` in the body can still ask for a dry run
    with the query; `dry_run` is the safe direction, and `allow_rf_change` has to be asked for explicitly
    in one of the two places.)"""
    enabled = False
    if name in request.query:
        raw = request.query.getall(name)
        if len(raw) != 1 or raw[0].strip().lower() not in _TRUE | _FALSE:
            raise _bad_option(name, f"query parameter must be given once, true or false, got {shown(raw)}")
        enabled = raw[0].strip().lower() in _TRUE
    if name in body:
        value = body.pop(name)
        if not isinstance(value, bool):
            raise _bad_option(name, f"body field must be true or false, got {shown(value)}")
        enabled = enabled or value
    return enabled


PLAN_NAME = re.compile(r"[\w.@+ -]{1,64}")


def _plan_name(request: web.Request) -> str | None:
    """`?name=` a plan's name for people (`drain broker 12`): letters, digits, `_.@+ -`, at most 64."""
    if "name" not in request.query:
        return None
    raw = request.query.getall("name")
    if len(raw) != 1 or not PLAN_NAME.fullmatch(raw[0]):
        raise _bad_option(
            "name", f"must be given once, 1-64 letters, digits, spaces or _.@+-, got {shown(raw)[:80]}"
        )
    return raw[0]


def _check_placement_size(body: Mapping[str, Any]) -> None:
    """A placement is computed in memory: its size is bounded here, before the placer runs."""
    count = body.get("num_partitions")
    factor = body.get("replication_factor")
    problems = []
    if isinstance(count, int) and not isinstance(count, bool) and count > MAX_PLACEMENT_PARTITIONS:
        problems.append(Problem("request", "num_partitions", f"must be at most {MAX_PLACEMENT_PARTITIONS}"))
    if isinstance(factor, int) and not isinstance(factor, bool) and factor > 2**15 - 1:
        problems.append(Problem("request", "replication_factor", "must be at most 32767 (Kafka's INT16)"))
    seed = body.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and not -(2**63) <= seed < 2**63:
        problems.append(Problem("request", "seed", "must fit in 64 bits"))
    ids = body.get("broker_ids")
    if isinstance(ids, list) and any(
        isinstance(b, int) and not isinstance(b, bool) and not 0 <= b <= INT32_MAX for b in ids
    ):
        problems.append(Problem("request", "broker_ids", f"broker ids are 0 to {INT32_MAX}"))
    placer = body.get("placer")
    if isinstance(placer, str) and not placer.strip():
        problems.append(Problem("request", "placer", "must not be empty"))
    if problems:
        raise ServiceError("invalid_request", "invalid replica placement", tuple(problems))


def _bad_option(name: str, message: str) -> ServiceError:
    return ServiceError("invalid_request", f"bad option {name}", (Problem("request", name, message),))


def _invalid_plan(exc: InvalidInputError) -> ServiceError:
    return ServiceError(
        "invalid_plan", f"invalid {exc.what}: {len(exc.problems)} problem(s)", problems=exc.problems
    )


# ---------------------------------------------------------------------------------------------------------
# Middleware: request id, authentication, one error shape


def _envelope(access: auth.ApiAccess, bounds: _BodyBounds, on_refused: Callable[[str], None] | None) -> Any:
    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        guard = request.app.get(_GUARD_KEY)
        if guard is not None:
            guard.request_started(request.protocol)
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _INCOMING_ID.match(incoming) else uuid.uuid4().hex
        with structlog.contextvars.bound_contextvars(request_id=request_id):
            response = await _guarded(request, handler, access, bounds)
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
    access: auth.ApiAccess,
    bounds: _BodyBounds,
) -> web.StreamResponse:
    routed = request.match_info.http_exception is None
    try:
        role = None
        if routed:
            role = _authorize(request, access)
            _check_length(request, bounds.max_bytes)
        if role is None:
            return await handler(request)
        with acting_as(api_actor(request, role)):  # journaled changes say who made them
            return await handler(request)
    except ServiceError as exc:
        response = _service_error(exc, request)
        if exc.code in ("payload_too_large", "request_timeout"):
            response.force_close()  # the rest of the body is not worth reading
        return response
    except InvalidInputError as exc:
        error = ServiceError("invalid_request", f"invalid {exc.what}", problems=exc.problems)
        return _service_error(error, request)
    except web.HTTPException as exc:
        return _http_error(exc, request, bounds.max_bytes)
    except Exception:
        _log.exception("api_internal_error", method=request.method, path=request.path)
        error = ServiceError("internal", "internal error; the daemon log has the details (see request id)")
        return _service_error(error, request)


USER_HEADER = "X-Reassignd-User"
_USER = re.compile(r"[\w.@+-]{1,64}")


def api_actor(request: web.Request, role: str) -> dict[str, str]:
    """Who makes a change over the API: the token's role (checked), the name the client gives in
    X-Reassignd-User (the CLI sends user@host; not checked, so it is recorded as claimed) and its address."""
    claimed = request.headers.get(USER_HEADER, "")
    actor = {"via": "api", "role": role, "remote": str(request.remote or "")}
    if _USER.fullmatch(claimed):
        actor["name"] = claimed
    return actor


def _authorize(request: web.Request, access: auth.ApiAccess) -> str | None:
    """Operator token for changes; read or operator token for reads (unless open); probes always open.
    The role of a change's token (OPERATOR), None for a read."""
    if request.method in _SAFE_METHODS:
        if request.path in OPEN_PATHS or access.reads_open:
            return None
        if access.operator is None and access.reader is None:
            raise ServiceError(
                "unauthorized",
                "this daemon has no API token configured: reads need api.read.token or api.token "
                "(or api.read.open = true)",
            )
        presented = auth.bearer_token(request.headers.get("Authorization"))
        if presented is None:
            raise ServiceError("unauthorized", "missing bearer token (Authorization: Bearer <token>)")
        if access.role_of(presented) is None:
            raise ServiceError("unauthorized", "wrong bearer token")
        return None
    if access.operator is None:
        raise ServiceError("unauthorized", "this daemon has no API token configured: mutations are disabled")
    presented = auth.bearer_token(request.headers.get("Authorization"))
    if presented is None:
        raise ServiceError("unauthorized", "missing bearer token (Authorization: Bearer <token>)")
    role = access.role_of(presented)
    if role is None:
        raise ServiceError("unauthorized", "wrong bearer token")
    if role != auth.OPERATOR:
        raise ServiceError("forbidden", "the read token cannot change anything: use the operator token")
    return role


def _check_length(request: web.Request, max_bytes: int) -> None:
    """A declared body above the limit is refused before a byte of it is read (no waiting for 1 TB)."""
    length = request.content_length
    if length is not None and length > max_bytes:
        raise ServiceError(
            "payload_too_large",
            f"the request body ({length} bytes) exceeds {max_bytes} bytes",
            details={"max_bytes": max_bytes},
        )


def _service_error(exc: ServiceError, request: web.Request) -> web.Response:
    status = STATUS_BY_CODE.get(exc.code, 500)
    if status == 404 and request.method in _SAFE_METHODS:
        # a read of something that is not there (`reassignd status` with no plan) refuses nothing; the
        # access log line has it
        _log.debug("api_not_found", method=request.method, path=request.path)
    else:
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
    """One structured line per request: method, path, status, duration, request id. No headers, no query.
    At debug: scrapes and `status --watch` polls are most of the requests, and at info a log says what
    happened (a refused change has its own `api_refused` line at info)."""

    def log(self, request: Any, response: Any, time: float) -> None:
        _log.debug(
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
    app: web.Application,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    shutdown_timeout: float = 5.0,
    limits: ServerLimits | None = None,
) -> web.AppRunner:
    """Bind and serve; await `runner.cleanup()` to stop. `runner.addresses` lists the bound sockets.

    `limits` bounds connections and their timeouts (http_limits.py); the body limits of `create_app` stay
    in force either way.
    """
    limits = limits or ServerLimits(max_body_bytes=app[_BOUNDS_KEY].max_bytes)
    guard = ConnectionGuard(limits)
    app[_GUARD_KEY] = guard
    runner = GuardedRunner(
        app,
        guard,
        access_log_class=AccessLog,
        shutdown_timeout=shutdown_timeout,
        keepalive_timeout=limits.idle_timeout,
        lingering_time=2.0,
    )
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
