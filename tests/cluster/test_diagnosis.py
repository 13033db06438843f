"""The one-line diagnosis of a cluster nobody can use, from librdkafka's own words (diagnosis.py), and the
monitor that decides when a contact check gives up (connection.py). Pure: the messages are the ones Kafka
4.4 and librdkafka 2.x produced in tests/realkafka/test_security.py."""

from __future__ import annotations

import pytest

from reassignd.cluster.acls import NEEDS, Acl, required_for
from reassignd.cluster.connection import SETTLE_SECONDS, ConnectionMonitor, LibraryLog, SecretScrubber
from reassignd.cluster.diagnosis import Cause, ConnectionProblem, classify, explain
from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo, error_for_code

SEEN = {
    Cause.SASL_AUTHENTICATION_FAILED: "sasl_plaintext://127.0.0.1:34515/bootstrap: SASL authentication "
    "error: Authentication failed during authentication due to invalid credentials with SASL mechanism "
    "SCRAM-SHA-512 (after 313ms in state AUTH_REQ)",
    Cause.TLS_CERTIFICATE_UNTRUSTED: "ssl://127.0.0.1:45851/bootstrap: SSL handshake failed: "
    "error:0A000086:SSL routines::certificate verify failed: broker certificate could not be verified, "
    "verify that ssl.ca.location is correctly configured or root CA certificates are installed (install "
    "ca-certificates package) (after 3ms in state SSL_HANDSHAKE)",
    Cause.TLS_TO_PLAINTEXT_LISTENER: "ssl://127.0.0.1:45203/bootstrap: SSL handshake failed: Disconnected: "
    "SSL connection closed by peer: connecting to a PLAINTEXT broker listener? (after 1ms in state "
    "SSL_HANDSHAKE)",
    Cause.TLS_CLIENT_CERTIFICATE_REFUSED: "ssl://127.0.0.1:45851/bootstrap: Receive failed: "
    "error:0A000412:SSL routines::ssl/tls alert bad certificate: SSL alert number 42 (after 0ms in state "
    "APIVERSION_QUERY)",
    Cause.NOT_TLS_TO_TLS_LISTENER: "127.0.0.1:37227/bootstrap: Disconnected: connection closed by peer: "
    "receive 0 after POLLIN (after 1ms in state APIVERSION_QUERY)",
    Cause.NOT_SASL_TO_SASL_LISTENER: "127.0.0.1:42523/bootstrap: Disconnected: connection closed by peer: "
    "receive 0 after POLLIN (after 0ms in state UP)",
    Cause.SASL_TO_NON_SASL_LISTENER: "sasl_plaintext://127.0.0.1:54403/bootstrap: SASL SCRAM-SHA-512 "
    "mechanism handshake failed: Broker: Request not valid in current SASL state: broker's supported "
    "mechanisms:  (after 7ms in state AUTH_HANDSHAKE)",
    Cause.CONNECTION_REFUSED: "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection "
    "refused (after 0ms in state CONNECT)",
}


@pytest.mark.parametrize("cause", list(SEEN), ids=lambda c: c.name)
def test_each_message_seen_on_real_kafka_names_its_cause_and_broker(cause: Cause) -> None:
    problem = classify(SEEN[cause])
    assert problem is not None and problem.cause is cause
    assert problem.broker == SEEN[cause].split("/")[2 if "://" in SEEN[cause] else 0]
    line = problem.line()
    assert "\n" not in line and "ms in state" not in line and "error:0A" not in line, line
    assert line.startswith(cause.what.format(broker=problem.broker)), line


def test_a_long_idle_connection_closed_by_the_broker_is_not_a_sasl_listener() -> None:
    idle = (
        "127.0.0.1:9092/1: Disconnected: connection closed by peer: receive 0 after POLLIN "
        "(after 600012ms in state UP)"
    )
    assert classify(idle) is None
    assert classify(idle, otherwise=Cause.BROKER_UNREACHABLE) == ConnectionProblem(
        Cause.BROKER_UNREACHABLE,
        "127.0.0.1:9092",
        "Disconnected: connection closed by peer: receive 0 after POLLIN",
    )


def test_the_line_names_what_happened_and_the_setting_to_check() -> None:
    problem = classify(SEEN[Cause.TLS_TO_PLAINTEXT_LISTENER])
    assert problem is not None
    assert problem.line() == (
        "TLS handshake refused by 127.0.0.1:45203: is the listener PLAINTEXT? check "
        "cluster.security.protocol and the port in cluster.bootstrap.servers (SSL handshake failed: "
        "Disconnected: SSL connection closed by peer: connecting to a PLAINTEXT broker listener?)"
    )
    error = problem.error()
    assert (error.name, error.code, error.retriable) == ("TLS_TO_PLAINTEXT_LISTENER", None, False)


def test_explain_gives_an_authorization_failure_the_acl_the_call_needs() -> None:
    refused = ClusterCallError("list_partition_reassignments", error_for_code(31, "Request 'x' failed ..."))
    line = explain(refused)
    assert "not authorized (CLUSTER_AUTHORIZATION_FAILED)" in line and "DESCRIBE on CLUSTER" in line, line
    assert "Request 'x'" not in line
    other = ClusterCallError("describe_cluster", KafkaErrorInfo("REQUEST_TIMED_OUT", None, True, "x" * 1000))
    assert len(explain(other)) < 400


def test_every_adapter_call_that_needs_an_acl_names_one() -> None:
    assert required_for("alter_partition_reassignments") == (Acl("ALTER", "CLUSTER"),)
    assert set(required_for("describe_configs")) == {
        Acl("DESCRIBE_CONFIGS", "CLUSTER"),
        Acl("DESCRIBE_CONFIGS", "TOPIC"),
    }
    assert required_for("describe_cluster") == ()
    assert Acl("DESCRIBE", "TOPIC").implied_by == (Acl("ALTER", "TOPIC"),)
    assert len({n.acl for n in NEEDS}) == len(NEEDS)


def test_the_deployment_docs_list_every_acl_as_acls_py_has_it() -> None:
    """docs/deployment.md's ACL table is acls.NEEDS, row for row (one concept in one place)."""
    from reassignd.localkafka.cluster import REPO

    docs = (REPO / "docs" / "deployment.md").read_text()
    rows = [line for line in docs.splitlines() if line.startswith("| `") and " on `" in line.split("|")[1]]
    expected = [
        f"| `{n.acl.operation}` on `{n.acl.resource}` | {n.kafka_requests} | {n.why} | {n.features} |"
        for n in NEEDS
    ]
    assert rows == expected


def test_a_contact_check_gives_up_when_every_broker_is_down_with_the_worst_problem() -> None:
    refused = classify(SEEN[Cause.CONNECTION_REFUSED])
    wrong = classify(SEEN[Cause.SASL_AUTHENTICATION_FAILED])
    assert refused is not None and wrong is not None
    monitor = ConnectionMonitor(["127.0.0.1:1", "127.0.0.1:34515", "127.0.0.1:9"])
    monitor.problem(wrong, 10.0)
    monitor.problem(refused, 10.5)
    assert monitor.blocking(started=9.0, now=10.6) is None, "not every broker is down yet"
    monitor.all_down(10.6)
    assert monitor.blocking(started=9.0, now=10.7) == wrong, "a wrong password before a refused connection"
    monitor.contact()
    assert monitor.blocking(started=11.0, now=11.1) is None and monitor.in_contact


def test_a_disconnect_after_these_settings_were_served_is_a_broker_going_away_not_a_protocol() -> None:
    """The simulator's outage (and a broker shutting down) closes connections a moment after they came up,
    as a SASL listener closes a PLAINTEXT client's."""
    closing = classify(SEEN[Cause.NOT_SASL_TO_SASL_LISTENER])
    assert closing is not None
    fresh = ConnectionMonitor()
    fresh.problem(closing, 1.0)
    fresh.all_down(1.0)
    assert fresh.last_problem() == closing
    served = ConnectionMonitor()
    served.contact()
    served.problem(closing, 1.0)
    served.all_down(1.0)
    assert served.blocking(started=0.5, now=1.1) == ConnectionProblem(
        Cause.BROKER_UNREACHABLE, closing.broker, closing.detail
    )


def test_brokers_down_before_the_check_began_get_a_moment_to_come_back() -> None:
    monitor = ConnectionMonitor()
    refused = classify(SEEN[Cause.CONNECTION_REFUSED])
    assert refused is not None
    monitor.problem(refused, 1.0)
    monitor.all_down(1.0)
    assert monitor.blocking(started=5.0, now=5.0 + SETTLE_SECONDS / 2) is None
    assert monitor.blocking(started=5.0, now=5.0 + SETTLE_SECONDS) == refused


def test_every_bootstrap_server_failing_during_the_check_is_enough_without_librdkafka_saying_all_down() -> (
    None
):
    monitor = ConnectionMonitor(["127.0.0.1:42523", "127.0.0.1:34515"])
    closing = classify(SEEN[Cause.NOT_SASL_TO_SASL_LISTENER])
    assert closing is not None
    monitor.problem(closing, 2.0)
    assert monitor.blocking(started=1.0, now=2.1) is None, "one of two"
    monitor.problem(ConnectionProblem(Cause.NOT_SASL_TO_SASL_LISTENER, "127.0.0.1:34515"), 2.2)
    assert monitor.blocking(started=1.0, now=2.3) is not None
    assert monitor.blocking(started=2.25, now=2.3) is None, "failures before the check began do not count"


def test_library_lines_are_logged_once_a_minute_with_their_repeats_and_without_secrets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from reassignd import logs
    from reassignd.cluster import connection

    logs.configure("debug", json=True)
    now = [0.0]
    log = LibraryLog("librdkafka", clock=lambda: now[0])
    connection.SCRUB.add(["hunter2-secret"])
    for ms in range(5):
        log.line("error", f"FAIL ... Connection refused (after {ms}ms in state CONNECT) hunter2-secret")
        now[0] += 1.0
    now[0] = 61.0
    log.line("error", "FAIL ... Connection refused (after 9ms in state CONNECT) hunter2-secret")
    logs.configure("info")  # back to the default for the tests that follow
    captured = capsys.readouterr()
    out = captured.out + captured.err
    lines = [line for line in out.splitlines() if "Connection refused" in line]
    assert len(lines) == 2, out
    assert '"repeated": 4' in lines[1] and "hunter2-secret" not in out


def test_the_scrubber_leaves_short_values_and_other_text_alone() -> None:
    scrub = SecretScrubber()
    scrub.add(["abc", "longer-secret"])
    assert scrub("abc and longer-secret") == "abc and [redacted]"
