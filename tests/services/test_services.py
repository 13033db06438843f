"""Smoke tests proving each real-service fixture works before the features that need it."""

from __future__ import annotations

import asyncio

import pytest

from tests.services.mosquitto import MosquittoServer
from tests.services.zookeeper import ZooKeeperServer, four_letter


@pytest.mark.zookeeper
def test_zookeeper_answers_ruok_and_kazoo_round_trips(zookeeper: ZooKeeperServer) -> None:
    from kazoo.client import KazooClient

    assert four_letter(zookeeper.port, b"ruok") == b"imok"
    client = KazooClient(hosts=zookeeper.hosts, timeout=10)
    client.start(timeout=15)
    try:
        client.ensure_path("/smoke")
        client.create("/smoke/node", b"hello", ephemeral=True)
        value, _ = client.get("/smoke/node")
        assert value == b"hello"
    finally:
        client.stop()
        client.close()


@pytest.mark.mosquitto
async def test_mosquitto_delivers_a_retained_message(mosquitto: MosquittoServer) -> None:
    import aiomqtt

    async with aiomqtt.Client("127.0.0.1", port=mosquitto.port, identifier="smoke-pub") as pub:
        await pub.publish("smoke/retained", b"kept", qos=1, retain=True)
    async with aiomqtt.Client("127.0.0.1", port=mosquitto.port, identifier="smoke-sub") as sub:
        await sub.subscribe("smoke/retained", qos=1)
        async with asyncio.timeout(10):
            async for message in sub.messages:
                assert message.payload == b"kept"
                assert message.retain
                break
