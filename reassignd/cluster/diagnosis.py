"""Why the cluster cannot be reached, as one line an operator can act on (pure: text in, values out).

librdkafka says why a connection failed only in its own words, and says it again on every reconnect
(thousands of `%3|...|FAIL|` lines a minute) while the admin call itself ends, minutes later, in a bare
`_TRANSPORT` or timeout. `classify` reads one of its messages (an error event or a FAIL log line) and names
the cause and the setting to check. For `ssl://10.0.0.1:9093/bootstrap: SSL handshake failed: Disconnected:
SSL connection closed by peer: connecting to a PLAINTEXT broker listener? (after 1ms in state
SSL_HANDSHAKE)` the line is `TLS handshake refused by 10.0.0.1:9093: is the listener PLAINTEXT? check
cluster.security.protocol and the port in cluster.bootstrap.servers (SSL handshake failed: ...)`.
kafka-python connects only once librdkafka has (clients.py), so its words need no reading.

`explain` turns any failed admin call into its one line, authorization failures included (with the ACL the
call needs, from acls.py). Library messages carry no secrets (they name the mechanism, never a password);
callers still pass every line through the secret scrubber before it is shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Final

from reassignd.cluster.acls import required_for
from reassignd.cluster.errors import ClusterCallError, KafkaErrorInfo


class Cause(Enum):
    """(what happened, the fix, whether it can pass without a change of settings: a broker restarting)."""

    SASL_AUTHENTICATION_FAILED = (
        "SASL authentication failed at {broker}",
        "check cluster.sasl.username / cluster.sasl.password (and cluster.sasl.mechanism)",
        False,
    )
    TLS_CERTIFICATE_UNTRUSTED = (
        "the TLS certificate of {broker} is not trusted",
        "check cluster.ssl.ca.location (the CA that signed the brokers' certificates)",
        False,
    )
    TLS_HOST_NAME_MISMATCH = (
        "the TLS certificate of {broker} does not name that host",
        "use the host name the certificate names in cluster.bootstrap.servers, or set "
        "cluster.ssl.endpoint.identification.algorithm = none",
        False,
    )
    TLS_TO_PLAINTEXT_LISTENER = (
        "TLS handshake refused by {broker}: is the listener PLAINTEXT?",
        "check cluster.security.protocol and the port in cluster.bootstrap.servers",
        False,
    )
    TLS_CLIENT_CERTIFICATE_REFUSED = (
        "{broker} refused the client certificate",
        "check cluster.ssl.certificate.location / cluster.ssl.key.location, and that the brokers trust "
        "the CA that signed it",
        False,
    )
    TLS_HANDSHAKE_FAILED = (
        "TLS handshake with {broker} failed",
        "check cluster.security.protocol and the cluster.ssl.* settings",
        False,
    )
    NOT_TLS_TO_TLS_LISTENER = (
        "{broker} closed the connection at the first request: is the listener TLS (SSL or SASL_SSL)?",
        "check cluster.security.protocol and the port in cluster.bootstrap.servers",
        False,
    )
    NOT_SASL_TO_SASL_LISTENER = (
        "{broker} closes the connection after its first request: is the listener SASL (SASL_PLAINTEXT or "
        "SASL_SSL)?",
        "check cluster.security.protocol, cluster.sasl.* and the port in cluster.bootstrap.servers",
        False,
    )
    SASL_TO_NON_SASL_LISTENER = (
        "{broker} takes no SASL handshake: is the listener PLAINTEXT or SSL?",
        "check cluster.security.protocol and the port in cluster.bootstrap.servers",
        False,
    )
    SASL_MECHANISM_NOT_ENABLED = (
        "{broker} does not offer this SASL mechanism",
        "check cluster.sasl.mechanism against the listener's sasl.enabled.mechanisms",
        False,
    )
    CONNECTION_REFUSED = (
        "connection refused by {broker}: no broker listens there",
        "check cluster.bootstrap.servers and that the brokers run",
        True,
    )
    HOST_NOT_FOUND = (
        "cannot resolve {broker}",
        "check the host names in cluster.bootstrap.servers",
        True,
    )
    CONNECTION_TIMED_OUT = (
        "no answer from {broker} (connection timed out)",
        "check cluster.bootstrap.servers, and firewalls between here and the brokers",
        True,
    )
    BROKER_UNREACHABLE = (
        "cannot use {broker}",
        "check cluster.bootstrap.servers and cluster.security.protocol",
        True,
    )

    @property
    def what(self) -> str:
        return self.value[0]

    @property
    def fix(self) -> str:
        return self.value[1]

    @property
    def transient(self) -> bool:
        """Refused or timed out connections can pass by themselves (brokers restarting); a wrong password or
        CA cannot."""
        return self.value[2]


@dataclass(frozen=True, slots=True)
class ConnectionProblem:
    cause: Cause
    broker: str
    detail: str = ""

    def line(self) -> str:
        """`<what happened>: <fix> (<the library's own words>)`, one line."""
        what = self.cause.what.format(broker=self.broker)
        text = f"{what}{' ' if what.endswith('?') else '; '}{self.cause.fix}"
        return f"{text} ({self.detail})" if self.detail else text

    def error(self) -> KafkaErrorInfo:
        """Not retriable within the call, even when transient: no broker could be reached at all, and the
        caller (the daemon's next cycle, an operator) is better told now than after the call's retries."""
        return KafkaErrorInfo(self.cause.name, None, False, self.line())


# (pattern over librdkafka's message, cause); the first that matches wins. Each pattern is a message seen on
# Kafka 4.4 (tests/realkafka/test_security.py) or, where marked, librdkafka's source wording.
_PATTERNS: Final[tuple[tuple[re.Pattern[str], Cause], ...]] = tuple(
    (re.compile(pattern, re.IGNORECASE), cause)
    for pattern, cause in (
        # "SASL authentication error: Authentication failed during authentication due to invalid credentials"
        (r"SASL authentication error|Authentication failed", Cause.SASL_AUTHENTICATION_FAILED),
        # "SASL SCRAM-SHA-512 mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's
        # supported mechanisms: PLAIN" (source wording)
        (r"Unsupported SASL mechanism", Cause.SASL_MECHANISM_NOT_ENABLED),
        # "SASL SCRAM-SHA-512 mechanism handshake failed: Broker: Request not valid in current SASL state:
        # broker's supported mechanisms: " (a PLAINTEXT listener)
        (r"not valid in current SASL state|mechanism handshake failed", Cause.SASL_TO_NON_SASL_LISTENER),
        # OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH / IP_ADDRESS_MISMATCH (source wording)
        (r"hostname mismatch|IP address mismatch", Cause.TLS_HOST_NAME_MISMATCH),
        # "SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker certificate
        # could not be verified, verify that ssl.ca.location is correctly configured ..."
        (r"certificate verify failed|could not be verified", Cause.TLS_CERTIFICATE_UNTRUSTED),
        # "SSL handshake failed: Disconnected: SSL connection closed by peer: connecting to a PLAINTEXT broker
        # listener?", or without the question
        (r"connecting to a PLAINTEXT broker listener|SSL connection closed by peer|wrong version number",
         Cause.TLS_TO_PLAINTEXT_LISTENER),
        # "Receive failed: error:0A000412:SSL routines::ssl/tls alert bad certificate: SSL alert number 42"
        (r"alert bad certificate|alert certificate required|alert unknown ca|alert certificate unknown",
         Cause.TLS_CLIENT_CERTIFICATE_REFUSED),
        (r"SSL handshake failed", Cause.TLS_HANDSHAKE_FAILED),
        # "Disconnected: connection closed by peer: receive 0 after POLLIN (after 1ms in state
        # APIVERSION_QUERY)": a TLS listener drops what it cannot read as a TLS record
        (r"in state APIVERSION_QUERY", Cause.NOT_TLS_TO_TLS_LISTENER),
        # "Disconnected: connection closed by peer: receive 0 after POLLIN (after 0ms in state UP)": a SASL
        # listener answers ApiVersions, then drops an unauthenticated client's next request. Only a
        # connection up for less than a second: a broker closes idle ones too, after minutes
        (r"closed by peer: receive 0 after POLLIN \(after \d{1,3}ms in state UP",
         Cause.NOT_SASL_TO_SASL_LISTENER),
        # "Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)"
        (r"Connection refused", Cause.CONNECTION_REFUSED),
        # "Failed to resolve 'nohost:9092': Name or service not known" (source wording)
        (r"Failed to resolve", Cause.HOST_NOT_FOUND),
        # "Connection setup timed out in state CONNECT" (source wording)
        (r"timed out in state CONNECT|Network is unreachable|No route to host", Cause.CONNECTION_TIMED_OUT),
    )
)  # fmt: skip

# librdkafka prefixes its broker messages with the broker's name: `ssl://10.0.0.1:9093/bootstrap: ...`
_BROKER = re.compile(r"^(?:[a-z_]+://)?(?P<address>[^\s/]+)/(?:bootstrap|-?\d+): ")
_TIMING = re.compile(r"\s*\(after \d+ms in state [A-Z_]+(?:, \d+ identical error\(s\) suppressed)?\)")
_OPENSSL_CODE = re.compile(r"error:[0-9A-F]{8}:[A-Za-z ]+ routines::")
MAX_DETAIL: Final = 160


def classify(message: str, *, otherwise: Cause | None = None) -> ConnectionProblem | None:
    """The cause librdkafka's message about a broker connection names; `otherwise` (or None) when it names
    none of those above."""
    cause = next((cause for pattern, cause in _PATTERNS if pattern.search(message)), otherwise)
    return None if cause is None else ConnectionProblem(cause, _broker_of(message), _detail(message))


def _broker_of(message: str) -> str:
    found = _BROKER.match(message)
    return found["address"] if found else "the brokers"


def _detail(message: str) -> str:
    """The library's own words, without the broker prefix, timings and OpenSSL's error codes."""
    text = _BROKER.sub("", message, count=1)
    text = _OPENSSL_CODE.sub("", _TIMING.sub("", text)).strip()
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


AUTHORIZATION_ERRORS: Final = frozenset(
    {"CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"}
)


def explain(error: ClusterCallError) -> str:
    """One line for a failed admin call: a connection problem as classified, an authorization failure with
    the ACL the call needs, anything else as Kafka named it."""
    info = error.error
    if info.name in Cause.__members__:
        return info.message
    if info.name in AUTHORIZATION_ERRORS:
        needs = required_for(error.api)
        grant = "; ".join(str(acl) for acl in needs) if needs else "see docs/deployment.md"
        return (
            f"{error.api} refused: not authorized ({info.name}); the principal reassignd connects as needs "
            f"{grant} (docs/deployment.md lists every ACL reassignd needs)"
        )
    message = info.message if len(info.message) <= 2 * MAX_DETAIL else info.message[: 2 * MAX_DETAIL] + "..."
    shown = KafkaErrorInfo(info.name, info.code, info.retriable, message)
    return f"{error.api} failed: {shown}"
