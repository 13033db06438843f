"""A paho-mqtt subscriber on its own network thread, collecting messages for the tests to inspect."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    retain: bool

    def json(self) -> Any:
        return json.loads(self.payload)


class Subscriber:
    def __init__(
        self,
        port: int,
        *topics: str,
        ca_file: str | None = None,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        self.messages: list[Received] = []
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        if ca_file:
            self.client.tls_set(ca_certs=ca_file)
        if username:
            self.client.username_pw_set(username, password)
        self.client.on_message = self._on_message
        self.client.on_connect = lambda client, *_: client.subscribe([(t, 1) for t in topics])
        self.client.on_subscribe = lambda *_: self._subscribed.set()
        self.client.connect("127.0.0.1", port, keepalive=10)
        self.client.loop_start()
        if not self._subscribed.wait(10):
            raise TimeoutError("subscription not acknowledged")

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        with self._lock:
            self.messages.append(Received(message.topic, bytes(message.payload), bool(message.retain)))

    def on(self, topic_suffix: str) -> list[Received]:
        with self._lock:
            return [m for m in self.messages if m.topic.endswith(topic_suffix)]

    def wait(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        raise TimeoutError(f"{what}; received: {[m.topic for m in self.messages][-20:]}")

    def publish(self, topic: str, payload: bytes) -> None:
        self.client.publish(topic, payload, qos=1).wait_for_publish(10)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()
