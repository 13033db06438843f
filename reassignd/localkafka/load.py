"""Real records into a real cluster: a bulk fill before a test, and a producer at a set rate during it.

The producer sends with acks=all and no client retries, so every error a broker answered reaches its report
(with retries, librdkafka would hide a NOT_ENOUGH_REPLICAS that a later attempt got past).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

RECORD_BYTES = 16 * 1024
# What a producer with acks=all is answered when a partition's ISR is below min.insync.replicas.
MIN_INSYNC_ERRORS = frozenset({"NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"})
# Random bytes do not compress: the bytes a test writes are the bytes a replica copies.
_PAYLOAD = os.urandom(1024 * 1024)


def _payload(size: int, n: int) -> bytes:
    start = (n * 7919) % (len(_PAYLOAD) - size)
    return _PAYLOAD[start : start + size]


def _producer(bootstrap: str, extra: dict[str, Any] | None = None) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,
            "linger.ms": 10,
            "compression.type": "none",
            "log_level": 3,
            **(extra or {}),
        }
    )


def fill(
    bootstrap: str,
    topic: str,
    partitions: Iterable[int],
    bytes_per_partition: int,
    *,
    record_bytes: int = 64 * 1024,
    client: dict[str, Any] | None = None,
) -> int:
    """Writes `bytes_per_partition` of incompressible records into each partition (acks=all), as fast as the
    cluster takes them; raises on the first failed record. Returns the bytes written."""
    producer = _producer(bootstrap, {"retries": 5, "batch.size": 1024 * 1024, **(client or {})})
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    written = 0
    for partition in partitions:
        for n in range(max(1, bytes_per_partition // record_bytes)):
            while True:
                try:
                    producer.produce(
                        topic, _payload(record_bytes, n), partition=partition, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            written += record_bytes
            producer.poll(0)
    if producer.flush(120) != 0:
        failures.append("records still queued after 120 s")
    if failures:
        raise RuntimeError(f"fill of {topic} failed: {failures[:5]} ({len(failures)} errors)")
    return written


@dataclass
class ProducerReport:
    """What a RateProducer saw: records and bytes acknowledged, every error by name, latency quantiles."""

    acked_records: int = 0
    acked_bytes: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    def latency_quantile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class RateProducer:
    """Writes to `topic`'s partitions round-robin at `bytes_per_second` with acks=all, in a thread of its own,
    until stop(); stop() returns the report.

        with RateProducer(cluster.bootstrap_servers, "orders", range(12), 512 * 1024) as producer:
            ...
        assert not producer.report.errors
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: Sequence[int],
        bytes_per_second: float,
        *,
        record_bytes: int = RECORD_BYTES,
        client: dict[str, Any] | None = None,
    ) -> None:
        self.topic = topic
        self.partitions = list(partitions)
        self.bytes_per_second = bytes_per_second
        self.record_bytes = record_bytes
        self.report = ProducerReport()
        self._producer = _producer(bootstrap, {"message.timeout.ms": 30000, **(client or {})})
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)

    def start(self) -> RateProducer:
        self._thread.start()
        return self

    def _delivered(self, sent_at: float) -> Any:
        def callback(err: Any, msg: Any) -> None:
            with self._lock:
                if err is not None:
                    self.report.errors[err.name()] += 1
                    return
                self.report.acked_records += 1
                self.report.acked_bytes += len(msg.value())
                self.report.latencies.append(time.monotonic() - sent_at)

        return callback

    def _run(self) -> None:
        started = time.monotonic()
        sent = 0
        n = 0
        while not self._stop.is_set():
            due = (time.monotonic() - started) * self.bytes_per_second
            while sent + self.record_bytes <= due:
                partition = self.partitions[n % len(self.partitions)]
                try:
                    self._producer.produce(
                        self.topic,
                        _payload(self.record_bytes, n),
                        partition=partition,
                        on_delivery=self._delivered(time.monotonic()),
                    )
                except BufferError:
                    with self._lock:
                        self.report.errors["LOCAL_QUEUE_FULL"] += 1
                    break
                except Exception as exc:
                    with self._lock:
                        self.report.errors[type(exc).__name__] += 1
                    break
                sent += self.record_bytes
                n += 1
            self._producer.poll(0.02)

    def stop(self) -> ProducerReport:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        remaining = self._producer.flush(35)
        if remaining:
            with self._lock:
                self.report.errors["UNDELIVERED_AT_STOP"] += remaining
        return self.report

    def __enter__(self) -> RateProducer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
