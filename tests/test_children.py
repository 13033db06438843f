"""Free loopback ports for the children the tests and the demo start."""

from __future__ import annotations

import socket

from reassignd.children import LOWEST_PORT, _ephemeral_range, free_port


def test_a_free_port_is_below_the_ephemeral_range_so_no_outgoing_connection_can_take_it() -> None:
    low, _ = _ephemeral_range()
    ports = [free_port() for _ in range(200)]
    assert all(LOWEST_PORT <= port < low for port in ports), ports


def test_a_port_is_never_given_twice_even_before_anyone_binds_it() -> None:
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_a_port_in_use_is_not_given() -> None:
    taken = []
    try:
        for _ in range(50):
            sock = socket.socket()
            port = free_port()
            sock.bind(("127.0.0.1", port))
            taken.append(sock)
        held = {s.getsockname()[1] for s in taken}
        assert not held & {free_port() for _ in range(200)}
    finally:
        for sock in taken:
            sock.close()
