"""Kafka wire protocol for the simulated cluster: frame in, handler, frame out.

Requests are decoded and responses encoded with kafka-python's schema-driven message classes, so every
version we advertise is exactly what Kafka's own JSON schemas describe (the handlers live in
protocol_metadata.py and protocol_admin.py). What a real broker does that the schemas do not say is
handled here:

- the request header is read from fixed offsets first (api key, version, correlation id), so a request
  for an API or version we do not serve can still be answered or refused cleanly;
- ApiVersions answers with a v0 response header even for flexible bodies, and an ApiVersions version we do
  not know gets the v0 body with UNSUPPORTED_VERSION (35) and our list, so the client can retry (KIP-511,
  clients/.../requests/ApiVersionsRequest.java `getErrorResponse`);
- any other unsupported API or version closes the connection, as Kafka's SocketServer does.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from reassignd.sim.errors import KafkaError

log = structlog.get_logger(__name__)

UNSUPPORTED_VERSION = 35
_HEADER_PREFIX = struct.Struct(">hhi")


class ProtocolError(Exception):
    """The peer sent something we cannot answer; the connection is closed, as Kafka does."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    broker_id: int
    host: str
    port: int


@dataclass(slots=True)
class RequestContext:
    """What a handler knows besides the request: the model, the broker it was sent to, the listeners."""

    cluster: Any  # reassignd.sim.model.SimCluster
    broker_id: int
    api_version: int
    client_id: str | None
    endpoints: Mapping[int, Endpoint]
    groups: Any = None  # reassignd.sim.groups.GroupCoordinator: the brokers' group coordinator


Handler = Callable[[RequestContext, Any], Any]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API we serve: its message classes, the version range we advertise, and its handler."""

    request_class: Any
    response_class: Any
    min_version: int
    max_version: int
    handler: Handler

    @property
    def api_key(self) -> int:
        return int(self.request_class.API_KEY)


def schema_versions(message_class: Any, cap: int | None = None) -> tuple[int, int]:
    """The versions Kafka's JSON schema describes (kafka-python rewrites its own minimum to 0)."""
    low_text, _, high_text = str(message_class.json["validVersions"]).partition("-")
    low, high = int(low_text), int(high_text or low_text)
    return low, high if cap is None else min(high, cap)


def api_spec(request_class: Any, response_class: Any, handler: Handler, cap: int | None = None) -> ApiSpec:
    low, high = schema_versions(request_class, cap)
    return ApiSpec(request_class, response_class, low, high, handler)


class KafkaProtocol:
    """Dispatches decoded requests to handlers; shared by every broker listener.

    `versions` (API key to (min, max)) is what the simulated Kafka release advertises
    (reassignd/sim/kafka_version.py); an API it lacks is not served, and a handler's schema must describe
    every version advertised. Without it, each API's schema range is served.
    """

    def __init__(
        self,
        specs: list[ApiSpec],
        versions: Mapping[int, tuple[int, int]] | None = None,
        groups: Any = None,
    ) -> None:
        self.groups = groups
        low, high = schema_versions(ApiVersionsRequest)
        every = [*specs, ApiSpec(ApiVersionsRequest, ApiVersionsResponse, low, high, self._api_versions)]
        self.specs: dict[int, ApiSpec] = {}
        for spec in every:
            if versions is None:
                self.specs[spec.api_key] = spec
            elif spec.api_key in versions:
                low, high = versions[spec.api_key]
                _, schema_high = schema_versions(spec.request_class)
                if high > schema_high:
                    raise ValueError(
                        f"api key {spec.api_key}: v{high} advertised, the schema ends at v{schema_high}"
                    )
                self.specs[spec.api_key] = ApiSpec(
                    spec.request_class, spec.response_class, low, high, spec.handler
                )

    def advertised(self) -> list[tuple[int, int, int]]:
        return [(key, spec.min_version, spec.max_version) for key, spec in sorted(self.specs.items())]

    def handle(
        self, payload: bytes, cluster: Any, broker_id: int, endpoints: Mapping[int, Endpoint]
    ) -> bytes:
        """One request frame (without its size prefix) to one response frame (with it)."""
        answered = self._answer(payload, cluster, broker_id, endpoints)
        if isinstance(answered, bytes):
            return answered
        spec, version, correlation_id, response = answered
        if isinstance(response, asyncio.Future):
            raise ProtocolError(f"api key {spec.api_key} is answered later: use handle_async")
        return self._frame(spec, version, correlation_id, response)

    async def handle_async(
        self, payload: bytes, cluster: Any, broker_id: int, endpoints: Mapping[int, Endpoint]
    ) -> bytes:
        """As `handle`, for requests a broker parks until something else happens (JoinGroup, SyncGroup): the
        connection waits for the answer, as Kafka mutes a channel while its request is parked."""
        answered = self._answer(payload, cluster, broker_id, endpoints)
        if isinstance(answered, bytes):
            return answered
        spec, version, correlation_id, response = answered
        if isinstance(response, asyncio.Future):
            response = await response
        return self._frame(spec, version, correlation_id, response)

    def _answer(
        self, payload: bytes, cluster: Any, broker_id: int, endpoints: Mapping[int, Endpoint]
    ) -> bytes | tuple[ApiSpec, int, int, Any]:
        if len(payload) < _HEADER_PREFIX.size:
            raise ProtocolError(f"request of {len(payload)} bytes is shorter than a request header")
        api_key, version, correlation_id = _HEADER_PREFIX.unpack_from(payload)
        spec = self.specs.get(api_key)
        if spec is None:
            raise ProtocolError(f"unsupported api key {api_key} (version {version})")
        if not spec.min_version <= version <= spec.max_version:
            if api_key == ApiVersionsRequest.API_KEY:
                return self._api_versions_unsupported(correlation_id)
            raise ProtocolError(
                f"unsupported version {version} of api key {api_key} "
                f"(supported {spec.min_version}-{spec.max_version})"
            )
        try:
            request = spec.request_class.decode(payload, version=version, header=True)
        except Exception as exc:
            raise ProtocolError(f"cannot decode api key {api_key} v{version}: {exc!r}") from exc
        ctx = RequestContext(
            cluster=cluster,
            broker_id=broker_id,
            api_version=version,
            client_id=request.header.client_id,
            endpoints=endpoints,
            groups=self.groups,
        )
        return spec, version, correlation_id, spec.handler(ctx, request)

    @staticmethod
    def _frame(spec: ApiSpec, version: int, correlation_id: int, response: Any) -> bytes:
        if isinstance(response, bytes):  # a handler with its own (byte-identical) fast encoder
            return response_frame(correlation_id, response, spec.response_class, version)
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))

    def _api_versions(self, ctx: RequestContext, request: Any) -> Any:
        return self._api_versions_response(ctx.api_version, error_code=0)

    def _api_versions_response(self, version: int, error_code: int) -> Any:
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in self.advertised()
        ]
        return ApiVersionsResponse(version=version, error_code=error_code, api_keys=keys, throttle_time_ms=0)

    def _api_versions_unsupported(self, correlation_id: int) -> bytes:
        response = self._api_versions_response(0, error_code=UNSUPPORTED_VERSION)
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))


def response_frame(correlation_id: int, body: bytes, response_class: Any, version: int) -> bytes:
    """Frame a pre-encoded body with the response header its version calls for (v1 when flexible)."""
    header = struct.pack(">i", correlation_id)
    if response_class.flexible_version_q(version) and response_class.API_KEY != ApiVersionsRequest.API_KEY:
        header += b"\x00"  # empty tagged fields
    return struct.pack(">i", len(header) + len(body)) + header + body


def error_fields(exc: KafkaError | None) -> tuple[int, str | None]:
    """(error_code, error_message) for a per-item result."""
    if exc is None:
        return 0, None
    return exc.code, exc.message
