"""The plumbing under KafkaClusterAdmin: both clients, the thread pool, timeouts, retries, the observer.

confluent-kafka's admin calls return futures, awaited without holding a thread; kafka-python's calls (and
librdkafka's list_topics) block, so they run on one dedicated thread pool, never on the event loop. Every
call goes through `_call`: a timeout per attempt, retries with backoff and full jitter on retriable errors
only, and one report to the observer (the daemon's metrics) after the retries; requests to every broker at
once (`_each_broker`) report once per broker.

Until a call has answered (and again once every broker went down), each attempt first checks that a broker
can be reached at all, with a DescribeCluster raced against what librdkafka reports about its connections
(connection.py): a wrong password, an untrusted CA or TLS against a PLAINTEXT listener fails the call within
about a second, with one line naming the cause and the setting to check (diagnosis.py), instead of the
request timeout on every retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import structlog
from confluent_kafka.admin import AdminClient

from reassignd import config_keys
from reassignd.cluster import convert
from reassignd.cluster._kafka_python import KafkaAdminClient, send_each, stream_each
from reassignd.cluster.api import ClusterObserver
from reassignd.cluster.connection import SCRUB, ConnectionMonitor, LibrdkafkaEvents, route_kafka_python_logs
from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo, WriteFenced, from_exception
from reassignd.cluster.group import GroupTransport
from reassignd.cluster.pool import DaemonThreadPool, on_own_thread
from reassignd.cluster.replaceable import ReplaceableClient
from reassignd.cluster.retry import RetryPolicy, run_with_retry
from reassignd.cluster.security import is_secret, redact, to_kafka_python, validate_settings

log = structlog.get_logger("reassignd.cluster")
T = TypeVar("T")
# How often a contact check looks at what librdkafka reported meanwhile.
CONTACT_POLL_SECONDS = 0.05
LIVE_BROKERS_FOR = 1.0  # seconds one DescribeCluster answer stands for the live brokers (_live_brokers)


@dataclass(frozen=True, slots=True)
class AdminSettings:
    """`client` holds librdkafka-style properties (bootstrap.servers, security.protocol, ssl.*, sasl.*)."""

    client: Mapping[str, str]
    request_timeout: float = 15.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_workers: int = 8
    # Beyond this many topics, Metadata is asked once for all topics, whatever the cluster's size
    # (metadata_for_all_topics has the rest of the rule).
    per_topic_metadata_up_to: int = 1000

    @classmethod
    def from_config(cls, config: Any) -> AdminSettings:
        """From a loaded reassignd config (reassignd.config.Config: `cluster.*` keys)."""
        return cls(
            client=config.client_settings(),
            request_timeout=float(config[config_keys.CLUSTER_REQUEST_TIMEOUT_SECONDS]),
            retry=RetryPolicy(
                attempts=int(config[config_keys.CLUSTER_RETRIES]) + 1,
                base_delay=float(config[config_keys.CLUSTER_RETRY_BACKOFF_SECONDS]),
                max_delay=float(config[config_keys.CLUSTER_RETRY_BACKOFF_MAX_SECONDS]),
            ),
        )


class ClientCalls:
    """Owns the clients and runs calls on them; KafkaClusterAdmin adds the admin operations."""

    def __init__(
        self,
        settings: AdminSettings,
        observer: ClusterObserver | None = None,
        write_fence: Callable[[], None] | None = None,
    ) -> None:
        validate_settings(settings.client)
        SCRUB.add(str(v) for k, v in settings.client.items() if is_secret(k))
        route_kafka_python_logs()
        # Called (no I/O) right before each write leaves: with HA, it refuses (raising WriteFenced) once the
        # leadership lease has run out, so a write delayed by a pause or a retry cannot land after a standby
        # took over. Kafka's admin API takes no fencing token, so this check is the last line.
        self.write_fence = write_fence
        self._settings = settings
        self._observer = observer
        self._timeout = settings.request_timeout
        self._timeout_ms = int(settings.request_timeout * 1000)
        self._kp_config = to_kafka_python(settings.client)
        self._kp_config.setdefault("request_timeout_ms", int(settings.request_timeout * 1000))
        self._kp_config.setdefault("bootstrap_timeout_ms", int(settings.request_timeout * 1000))
        self._kp_config.setdefault("client_id", "reassignd")
        # kafka-python refuses a request beyond this many in flight on a connection (NodeNotReadyError "Node
        # paused"), where Kafka's own clients queue it; the refusal reads as a stale client, which is then
        # replaced under the other calls. Each pool thread waits on one call at a time, with at most one
        # request per broker (_each_broker: one to every broker), and kafka-python adds its metadata refresh.
        self._kp_config.setdefault("max_in_flight_requests_per_connection", settings.max_workers + 1)
        self._kp = ReplaceableClient(self._kp_config, KafkaAdminClient, _closed_error, self._steered)
        self._closed = False
        self._executor = DaemonThreadPool(settings.max_workers, thread_name_prefix="reassignd-cluster")
        self._renewing = threading.Event()  # a Metadata request renewing the controller is in flight
        confluent_config: dict[str, str | int | float | bool] = {
            "client.id": "reassignd",
            **dict(settings.client),
        }
        confluent_config.setdefault("socket.timeout.ms", str(int(settings.request_timeout * 1000)))
        # The admin handle is a producer inside librdkafka, whose Metadata requests would otherwise ask the
        # broker to auto-create a topic we only name (list_topics(topic=...)).
        confluent_config["allow.auto.create.topics"] = "false"
        shown = redact(confluent_config)
        self._monitor = ConnectionMonitor(self._kp_config.get("bootstrap_servers", ()))
        self._contact_lock = asyncio.Lock()
        events = LibrdkafkaEvents(self._monitor)
        self._ck = AdminClient(confluent_config, error_cb=events.error, logger=events)
        # librdkafka hands its error events and log lines over only in poll(): a thread of its own polls
        self._polling = threading.Event()
        self._poller = threading.Thread(target=self._poll_events, name="reassignd-librdkafka", daemon=True)
        self._poller.start()
        log.debug("cluster admin created", settings=shown)
        self._live: tuple[int, ...] = ()  # the brokers DescribeCluster listed last
        self._answering: int | None = None  # where requests any broker answers go (_any_broker)
        self._live_at: float | None = None  # when DescribeCluster last answered (time.monotonic)
        self._live_asked: asyncio.Future[convert.ClusterView] | None = None  # in flight (_live_brokers)
        self._steer_controller = False  # the next kafka-python client starts on _answering (_on_controller)

    def _poll_events(self) -> None:
        while not self._polling.is_set():
            self._ck.poll(0.2)

    # --- plumbing ------------------------------------------------------------------------------------------

    async def _blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        except RuntimeError:  # the pool shut down: a call still in flight when the adapter closed
            if self._closed:
                raise _closed_error() from None
            raise

    async def _call(self, api: str, attempt: Callable[[], Awaitable[T]], *, report: bool = True) -> T:
        """One admin call: timeout per attempt, retries on retriable errors, outcome to the observer
        (unless not `report`: the caller reports it as several)."""

        async def once() -> T:
            try:
                async with asyncio.timeout(self._timeout + 1.0):  # not wait_for: see daemon/runtime.py
                    await self._ensure_contact(api)
                    return await attempt()
            except (ClusterCallError, WriteFenced):
                raise
            except Exception as exc:
                error = from_exception(exc)
                if _WAITED_FOR_CONTROLLER in error.message:
                    self._renew_controller()
                raise ClusterCallError(api, error) from exc

        def on_retry(error: BaseException, number: int, wait: float) -> None:
            log.warning(
                "cluster call failed, retrying",
                api=api,
                attempt=number,
                wait_s=round(wait, 3),
                error=str(error),
            )

        try:
            result = await run_with_retry(once, self._settings.retry, on_retry=on_retry)
        except ClusterCallError as error:
            if report:
                self._item_failed(api, error.error)
            raise
        if report:
            self._item_succeeded(api)
        return result

    def _metadata_of_any_broker(self) -> Any:
        """Metadata for one topic that need not exist (a request for none would ask for every topic):
        librdkafka sends it to any broker that is up, it needs no ACL, and its answer renews whom
        librdkafka takes for the controller. Blocking: on the pool."""
        return self._ck.list_topics(topic=_PROBE_TOPIC, timeout=self._timeout)

    def _renew_controller(self) -> None:
        """librdkafka sends controller requests (DescribeCluster, ElectLeaders, ...) to the broker its last
        Metadata named, waits for it while it is down and never asks Metadata again for that: a KRaft
        broker names a random live broker, a killed one until it is fenced, and every such call failed
        until the killed broker came back (tests/realkafka/test_controller_routing.py). One Metadata
        request at a time, not awaited: the retry's backoff gives it time."""
        if self._renewing.is_set() or self._closed:
            return
        self._renewing.set()

        def renew() -> None:
            try:
                self._metadata_of_any_broker()
            finally:
                self._renewing.clear()

        with contextlib.suppress(RuntimeError):  # the pool shut down meanwhile
            self._executor.submit(renew)

    async def _ensure_contact(self, api: str) -> None:
        """Returns once a broker answers (at once while calls do). Until then a DescribeCluster (no ACL
        needed) is raced against librdkafka's connection reports: once every broker is down, the call fails
        with the problem they name, not retried (diagnosis.ConnectionProblem.error). One check at a time;
        calls made meanwhile wait for its outcome."""
        if self._monitor.in_contact:
            return
        async with self._contact_lock:
            if self._monitor.in_contact:
                return
            started = time.monotonic()
            answer = asyncio.wrap_future(self._ck.describe_cluster(request_timeout=self._timeout))
            try:
                while not answer.done():
                    await asyncio.wait({answer}, timeout=CONTACT_POLL_SECONDS)
                    problem = None if answer.done() else self._monitor.blocking(started, time.monotonic())
                    if problem is not None:
                        raise ClusterCallError(api, problem.error())
                try:
                    answer.result()
                except Exception as exc:
                    problem = self._monitor.last_problem()
                    error = problem.error() if problem else from_exception(exc)
                    raise ClusterCallError(api, error) from exc
            finally:
                # given up on (a problem, the attempt's timeout): librdkafka ends the request by itself,
                # and its outcome is not wanted (nor reported as never retrieved)
                answer.cancel()
            self._monitor.contact()

    def group_transport(self) -> GroupTransport:
        """A kafka-python client of its own for the writer group's requests (cluster/group.py)."""
        return GroupTransport(self._kp_config)

    def _check_write_fence(self) -> None:
        """On the thread that writes the request, immediately before (_kafka_python.send_fenced)."""
        if self.write_fence is not None:
            self.write_fence()

    def _item_failed(self, api: str, error: KafkaErrorInfo) -> None:
        if self._observer is not None:
            self._observer.call_failed(api, error)

    def _item_succeeded(self, api: str) -> None:
        self._monitor.contact()
        if self._observer is not None:
            self._observer.call_succeeded(api, time.time())

    def _kafka_python(self) -> KafkaAdminClient:
        """Created on first use (its constructor connects and blocks); always called on the pool."""
        client: KafkaAdminClient = self._kp.get()
        return client

    def _steered(self, client: KafkaAdminClient) -> None:
        """A new client after a controller failure starts on the broker that answers (`_on_controller`)."""
        if self._steer_controller:
            self._steer_controller = False
            broker = self._answering_broker()
            if broker is not None:
                client._controller_id = broker  # kafka-python's cached controller (pinned 3.0.12)

    def _on_controller(self, call: Callable[[KafkaAdminClient], T]) -> T:
        """Run a controller-routed kafka-python call (on the pool). kafka-python caches the controller id
        and refreshes it only on a NOT_CONTROLLER answer; when the controller broker is down it keeps
        dialling the dead one (NodeNotReadyError, then UnknownBrokerIdError). So after a failure the broker
        did not answer itself (no Kafka code) or NOT_CONTROLLER, the client is replaced.

        The replacement starts on the broker requests any broker answers go to (`_any_broker`), moved past
        the one that failed, rather than asking Metadata: a KRaft broker names a random live broker as the
        controller (every broker forwards these requests to the real one), a broker killed a moment ago
        stays live until it is fenced, and a fresh client knows nothing of the failure. On real KRaft,
        four fresh clients in a row went back to the killed broker (its Metadata request or the controller
        named) within a second, and the cycle failed. In ZooKeeper mode a broker that is not the controller
        answers NOT_CONTROLLER, and kafka-python then asks Metadata for the real one."""
        return self._replacing_client(
            call,
            lambda e: e.code is None or e.name == "NOT_CONTROLLER",
            "a controller failure",
            on_stale=self._controller_failed,
        )

    def _controller_failed(self, client: KafkaAdminClient) -> None:
        failed = getattr(client, "_controller_id", None)
        if isinstance(failed, int):
            self._broker_failed(failed)
        self._steer_controller = True

    def _on_broker(self, call: Callable[[KafkaAdminClient], T]) -> T:
        """Run a broker-routed kafka-python call (on the pool). kafka-python's metadata forgets a broker
        that stopped, and asked for it once it is back answers UnknownBrokerIdError until its next metadata
        refresh, minutes later: after that answer the client is replaced and the call tried once more.
        Not after a broker that is down refused the call: a new client is refused the same, and closing
        the shared one cancels every other call in flight on it (the cycle's read failed "Cancelled" while
        3 of 4 brokers ran)."""
        return self._replacing_client(
            call, lambda e: e.name == _FORGOT_THE_BROKER, "a broker its metadata forgot", again=True
        )

    async def _each_broker(
        self,
        api: str,
        requests: Mapping[int, Any],
        read: Callable[[int, Any], T],
        *,
        in_flight: int | None = None,
    ) -> dict[int, T | KafkaErrorInfo]:
        """One kafka-python request per broker, all in flight at once (100 brokers: 18 ms, against 50 ms as
        100 calls through the pool), or `in_flight` at a time; `read` turns a broker's answer into T on the
        pool thread that waits for the answers, as each arrives (_kafka_python.stream_each: why). A broker
        whose request failed, or whose answer `read` raised for, is asked again alone, retried and with
        `_on_broker`'s stale-client check; what still fails is that broker's error. Never raises for a
        broker's failure. The observer gets one report per broker, as when each broker had a call of its
        own: the first pass is not a call of its own (a success of it, all brokers down, would be no
        success)."""
        if not requests:
            return {}

        def every_broker_failed(error: ClusterCallError) -> dict[int, T | KafkaErrorInfo]:
            for _ in requests:
                self._item_failed(api, error.error)
            return dict.fromkeys(requests, error.error)

        async def client() -> KafkaAdminClient:
            return await self._blocking(self._kafka_python)

        try:
            kp = await self._call(api, client, report=False)
        except ClusterCallError as error:
            return every_broker_failed(error)

        def read_each() -> dict[int, T | KafkaErrorInfo]:
            read_out: dict[int, T | KafkaErrorInfo] = {}

            def each(broker: int, answer: Any) -> None:
                # an answer `read` refuses (its error, or one unlike Kafka's) is that broker's failure: the
                # broker is asked again alone, where its error is retried if retriable, then its entry
                if not isinstance(answer, BaseException):
                    with contextlib.suppress(Exception):
                        read_out[broker] = read(broker, answer)

            stream_each(kp, requests, self._timeout, each, in_flight)
            return read_out

        # sent and read outside the call's timeout (it bounds the client's bootstrap), which would cover the
        # reading: a first full DescribeLogDirs of a big cluster takes seconds to read. stream_each bounds
        # the wait for the answers by one request timeout from the start of the pass.
        try:
            out = await self._blocking(read_each)
        except ClusterCallError as error:  # closed meanwhile
            return every_broker_failed(error)
        for _ in out:
            self._item_succeeded(api)

        async def alone(broker: int) -> tuple[int, T | KafkaErrorInfo]:
            def once() -> T:
                answer = self._on_broker(
                    lambda c: _raised(send_each(c, {broker: requests[broker]}, self._timeout))
                )
                return read(broker, answer)

            async def attempt() -> T:
                return await self._blocking(once)

            try:
                return broker, await self._call(api, attempt)
            except ClusterCallError as error:
                return broker, error.error

        out.update(await asyncio.gather(*(alone(b) for b in requests if b not in out)))
        return {b: out[b] for b in requests}

    def _replacing_client(
        self,
        call: Callable[[KafkaAdminClient], T],
        stale: Callable[[KafkaErrorInfo], bool],
        why: str,
        *,
        again: bool = False,
        on_stale: Callable[[KafkaAdminClient], None] | None = None,
    ) -> T:
        """`call` on the kafka-python client; a failure that says the client's view is `stale` replaces
        the client (`on_stale` sees the old one first), then raises (the caller's retry bootstraps a new
        one) or, `again`, calls once more."""
        client = self._kafka_python()
        try:
            return call(client)
        except WriteFenced:
            raise
        except Exception as exc:
            if not stale(from_exception(exc)):
                raise
            if on_stale is not None:
                on_stale(client)
            self._discard_kafka_python(client, why)
            if not again:
                raise
        return call(self._kafka_python())

    def _discard_kafka_python(self, client: KafkaAdminClient, why: str) -> None:
        if self._kp.discard(client):
            log.info("kafka-python client replaced", after=why)

    async def _describe_cluster(self) -> convert.ClusterView:
        async def attempt() -> convert.ClusterView:
            result = await asyncio.wrap_future(self._ck.describe_cluster(request_timeout=self._timeout))
            controller = result.controller
            self._live = tuple(sorted(int(n.id) for n in result.nodes))
            self._live_at = time.monotonic()
            return convert.ClusterView(
                cluster_id=result.cluster_id,
                controller_id=None if controller is None or controller.id < 0 else int(controller.id),
                racks={int(n.id): (n.rack or None) for n in result.nodes},
            )

        return await self._call("describe_cluster", attempt)

    @contextlib.contextmanager
    def _any_broker(self) -> Iterator[dict[str, int]]:
        """`broker=` for a confluent-kafka request any broker answers (DescribeConfigs and
        IncrementalAlterConfigs of topics): the broker that answered the last one, or after a failure the
        next broker DescribeCluster lists.

        librdkafka sends those requests to the controller its last Metadata named. A KRaft broker names a
        random live broker there (clients cannot reach the KRaft controller), a killed broker stays live
        until the controller fences it (broker.session.timeout.ms), and librdkafka waits the whole request
        timeout for that broker on every retry: on a real KRaft cluster, a killed broker failed every
        snapshot for 22 s with a 5 s timeout (2 minutes with the default 30 s) and the daemon reported the
        cluster unreachable. Kafka's own admin client sends them to its least loaded broker."""
        broker = self._answering_broker()
        try:
            yield {} if broker is None else {"broker": broker}
        except BaseException:
            if broker is not None:
                self._broker_failed(broker)
            raise

    def _answering_broker(self) -> int | None:
        if self._answering not in self._live:
            self._answering = self._live[0] if self._live else None
        return self._answering

    def _broker_failed(self, broker: int) -> None:
        """A request to `broker` failed: requests any broker answers go to the next live one from now."""
        if self._answering == broker and broker in self._live:
            self._answering = self._live[(self._live.index(broker) + 1) % len(self._live)]

    async def _live_brokers(self) -> frozenset[int]:
        """The brokers DescribeCluster listed, asked again only when its last answer (the snapshot's
        included) is older than `LIVE_BROKERS_FOR` seconds: a cycle that writes the throttles of 1,000
        brokers asked it before each write (10 s of a first cycle on bench_daemon's million cluster). A
        broker stopped within that second fails its write as any unreachable broker does, after the
        request timeout, and the next cycle sees it gone. Writes issued together share one question: each
        asked its own before (16 DescribeCluster requests for the 100 throttle writes of a cycle)."""
        if self._live_at is not None and time.monotonic() - self._live_at <= LIVE_BROKERS_FOR:
            return frozenset(self._live)
        if self._live_asked is None:
            self._live_asked = asyncio.ensure_future(self._describe_cluster())
            self._live_asked.add_done_callback(self._live_answered)
        return frozenset((await asyncio.shield(self._live_asked)).racks)

    def _live_answered(self, asked: asyncio.Future[convert.ClusterView]) -> None:
        if self._live_asked is asked:
            self._live_asked = None
        if not asked.cancelled():
            asked.exception()  # retrieved: the callers that awaited it raised it already

    def _offline(self, api: str, broker: int) -> KafkaErrorInfo:
        """librdkafka waits the whole request timeout for a broker it cannot reach, on every retry; a broker
        missing from the cluster's metadata is known offline at once."""
        error = KafkaErrorInfo(
            "BROKER_NOT_AVAILABLE", 8, True, f"broker {broker} is not in the cluster's metadata (offline)"
        )
        self._item_failed(api, error)
        return error

    async def close(self, *, wait: bool = True) -> None:
        """Idempotent. Waits for in-flight blocking calls so no thread outlives the adapter; `wait=False`
        (the cluster does not answer) leaves them to end on their own, never holding the process's exit
        (pool.py), rather than wait out their timeouts."""
        self._closed = True
        self._polling.set()
        # The poller ends within its poll timeout (0.2 s); one still inside librdkafka's poll() when the
        # interpreter finalises calls a log callback into a dying Python (a one-shot command exited -11).
        await on_own_thread(lambda: self._poller.join(timeout=_POLLER_JOIN_SECONDS))
        client = self._kp.close()  # never waits for a bootstrap (replaceable.py)
        if not wait:
            self._executor.shutdown(wait=False, cancel_futures=True)
            return
        if client is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, client.close)
        await on_own_thread(lambda: self._executor.shutdown(wait=True, cancel_futures=True))
        await on_own_thread(self._release_librdkafka)

    def _release_librdkafka(self) -> None:
        """librdkafka's handle destroyed now, while Python runs. Left to the interpreter's exit, its
        destruction logged into a finalising Python: a one-shot command refused by TLS printed its one
        line, then exited -11 (1 of 4 fresh-clone runs of the suite, 2026-11-28)."""
        self._ck = cast(AdminClient, _ClosedHandle())


_FORGOT_THE_BROKER = "UnknownBrokerIdError"  # kafka-python's error name (errors.from_exception)
_PROBE_TOPIC = "__reassignd_reachability_probe"
_WAITED_FOR_CONTROLLER = "waiting for controller"  # librdkafka's _TIMED_OUT text for it (rdkafka_admin.c)
_POLLER_JOIN_SECONDS = 5.0  # a poll(0.2) and the callbacks of its last lines; never the exit held longer


class _ClosedHandle:
    """What stands in for librdkafka's handle once the adapter closed: every use is the closed error."""

    def __getattr__(self, name: str) -> Any:
        raise _closed_error()


def _closed_error() -> ClusterCallError:
    return ClusterCallError(
        "close", KafkaErrorInfo("CLIENT_CLOSED", None, False, "the cluster admin is closed")
    )


def _raised(answers: Mapping[int, Any]) -> Any:
    """The one broker's answer from `send_each`, its failure raised."""
    (answer,) = answers.values()
    if isinstance(answer, BaseException):
        raise answer
    return answer
