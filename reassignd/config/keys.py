"""The daemon's configuration keys, one declaration each (the reassignment limits come from the engine)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from reassignd import config_keys
from reassignd.config.schema import (
    BOOL,
    FLOAT,
    INT,
    PATH,
    STRING,
    STRING_LIST,
    ConfigKey,
    ValueType,
    all_of,
    between,
    each,
    enum,
    greater_than,
    host_port,
    matches,
    min_length,
    non_empty,
    secret_file_key,
)

_DETECTORS: Final = (
    "broker_failure|new_broker|rack_spread|replica_balance|leader_balance|byte_balance|disk_capacity"
    "|under_replicated|log_dir_offline"
)

#: Section titles in the order the reference documentation presents them.
SECTIONS: Final = {
    "cluster": "Kafka cluster connection",
    "reassignment": "Reassignment limits and behaviour",
    "auto.throttle": "Auto-throttle for stalled moves",
    "controller": "Controller loop",
    "api": "HTTP API",
    "state": "State store",
    "ha": "High availability (ZooKeeper)",
    "mqtt": "MQTT events and commands",
    "self.healing": "Self-healing: anomalies and their rehearsed fixes",
    "proposals": "Plan proposals",
    "log": "Logging",
}

_LABEL = matches(r"[A-Za-z0-9._-]{0,64}", "at most 64 letters, digits, '.', '_' or '-'")
_ZK_PATH = matches(r"(/[A-Za-z0-9._-]+)+", "an absolute ZooKeeper path such as /reassignd (no trailing /)")
_MQTT_PREFIX = matches(r"[^#+/\s]+(/[^#+/\s]+)*", "a topic prefix without wildcards (#, +) or empty levels")
_PORT = between(1, 65535)
_LONG_MAX = 2**63 - 1  # Kafka's LONG: throttle rates
#: API tokens: 32 characters at least (`openssl rand -hex 32` gives 64), refused at start-up otherwise.
MIN_TOKEN_LENGTH: Final = 32
_HOUR = 3600.0


def _k(section: str, name: str, value_type: ValueType, doc: str, **options: Any) -> ConfigKey:
    return ConfigKey(name, value_type, doc, section=section, **options)


CLUSTER_KEYS: Final = (
    _k(
        "cluster",
        config_keys.CLUSTER_BOOTSTRAP_SERVERS,
        STRING_LIST,
        "Kafka brokers to bootstrap from, HOST:PORT each (a TOML array, or comma-separated in the "
        "environment). `reassignd run --bootstrap-servers` overrides it.",
        validator=all_of(non_empty, each(host_port)),
        required=True,
        example=["localhost:9092"],
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_ID,
        STRING,
        "A short label for this cluster in metrics, alerts, MQTT topics and the ZooKeeper path: set one "
        "(e.g. prod-eu1). Empty: the cluster id Kafka reports, an opaque string.",
        default="",
        validator=_LABEL,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_REQUEST_TIMEOUT_SECONDS,
        FLOAT,
        "Timeout of one admin request to Kafka.",
        default=30.0,
        validator=greater_than(0, _HOUR),
        reloadable=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_RETRIES,
        INT,
        "How many times a failed admin request is retried (with backoff and jitter) before the cycle gives "
        "up and reports the error.",
        default=3,
        validator=between(0, 100),
        reloadable=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_RETRY_BACKOFF_SECONDS,
        FLOAT,
        "First retry delay; it doubles per attempt, with full jitter.",
        default=0.5,
        validator=greater_than(0, _HOUR),
        reloadable=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_RETRY_BACKOFF_MAX_SECONDS,
        FLOAT,
        "Upper bound of the retry delay.",
        default=10.0,
        validator=greater_than(0, _HOUR),
        reloadable=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_PROBE_INTERVAL_SECONDS,
        FLOAT,
        "How often the reachability probe asks the cluster one Metadata request (any broker answers it), "
        "beside the controller's cycle (whose reads wait out their timeouts and retries): an outage shows "
        "in status, /readyz and `reassignd_cluster_reachable` within this plus "
        "`cluster.probe.timeout.seconds`.",
        default=5.0,
        validator=greater_than(0, _HOUR),
        reloadable=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_PROBE_TIMEOUT_SECONDS,
        FLOAT,
        "How long the reachability probe waits for an answer before the cluster counts as unreachable "
        "(no retry). A read the cycle has in flight is then abandoned, and no cycle reads until the probe "
        "is answered again.",
        default=10.0,
        validator=greater_than(0, _HOUR),
        reloadable=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_WRITER_SESSION_TIMEOUT_SECONDS,
        FLOAT,
        "Session timeout of this daemon in the cluster's writer group `reassignd.<cluster id>` (one writer "
        "per cluster, docs/ha.md): the daemon writes only within half of it after the group confirmed it "
        "holds the writer right, and another daemon can take the right over about this long after the "
        "writer stopped answering. Must lie within the brokers' group.min.session.timeout.ms and "
        "group.max.session.timeout.ms (6 s and 30 min by default).",
        default=10.0,
        validator=between(6, 1800),
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SECURITY_PROTOCOL,
        enum("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        "Protocol to talk to the brokers (librdkafka `security.protocol`).",
        default="PLAINTEXT",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SSL_CA_LOCATION,
        PATH,
        "CA certificate(s) in PEM to verify the brokers (librdkafka `ssl.ca.location`). Unset: the "
        "system's trust store.",
        example="/etc/reassignd/kafka-ca.pem",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SSL_CERTIFICATE_LOCATION,
        PATH,
        "Client certificate in PEM for mutual TLS (librdkafka `ssl.certificate.location`).",
        example="/etc/reassignd/client.pem",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SSL_KEY_LOCATION,
        PATH,
        "Private key in PEM of the client certificate (librdkafka `ssl.key.location`).",
        example="/etc/reassignd/client.key",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SSL_KEY_PASSWORD,
        STRING,
        "Password of the private key, if it is encrypted (librdkafka `ssl.key.password`).",
        secret=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM,
        enum("https", "none"),
        "`https` checks that the broker certificate matches its host name; `none` disables the check.",
        default="https",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SASL_MECHANISM,
        enum("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER", case_sensitive=False),
        "SASL mechanism, required with SASL_PLAINTEXT or SASL_SSL (librdkafka `sasl.mechanism`).",
        example="SCRAM-SHA-512",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SASL_USERNAME,
        STRING,
        "SASL user name for PLAIN and SCRAM (librdkafka `sasl.username`).",
        example="reassignd",
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_SASL_PASSWORD,
        STRING,
        "SASL password for PLAIN and SCRAM (librdkafka `sasl.password`).",
        secret=True,
    ),
    _k(
        "cluster",
        config_keys.CLUSTER_CLIENT,
        STRING,
        'Pass-through: any `cluster.client.<property> = "value"` is handed verbatim to librdkafka (for '
        'example `cluster.client."socket.keepalive.enable" = "true"`). Not settable from the '
        "environment; values of properties whose name mentions a password or secret are redacted in dumps.",
        prefix=True,
    ),
)

BEHAVIOUR_KEYS: Final = (
    _k(
        "reassignment",
        config_keys.REASSIGNMENT_ALLOW_REPLICATION_FACTOR_CHANGE,
        BOOL,
        "Accept plans that change a partition's replication factor. Off, such a plan is rejected whole.",
        default=False,
        reloadable=True,
    ),
    _k(
        "auto.throttle",
        config_keys.AUTO_THROTTLE_ENABLE,
        BOOL,
        "When a move is stalled (its follower catches up no faster than producers write), raise that "
        "broker's throttle rate step by step up to the ceiling until it converges.",
        default=False,
        reloadable=True,
    ),
    _k(
        "auto.throttle",
        config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND,
        INT,
        "How much one auto-throttle step raises a broker's rate (bytes/s, a Kafka LONG).",
        default=10 * 1024 * 1024,
        validator=between(1, _LONG_MAX),
        reloadable=True,
    ),
    _k(
        "auto.throttle",
        config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND,
        INT,
        "The ceiling auto-throttle never raises a rate beyond (bytes/s, a Kafka LONG).",
        default=200 * 1024 * 1024,
        validator=between(1, _LONG_MAX),
        reloadable=True,
    ),
    _k(
        "controller",
        config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS,
        FLOAT,
        "Time between the starts of two controller cycles (a cycle reads the cluster, decides, applies).",
        default=5.0,
        validator=between(0.05, 3600),
        reloadable=True,
    ),
    _k(
        "controller",
        config_keys.CONTROLLER_CYCLE_MIN_INTERVAL_SECONDS,
        FLOAT,
        "Shortest time between two cycles when a cycle is woken early (API call, finished step).",
        default=0.5,
        validator=between(0, 3600),
        reloadable=True,
    ),
    _k(
        "controller",
        config_keys.CONTROLLER_ERROR_BACKOFF_MAX_SECONDS,
        FLOAT,
        "After failed cycles the next one is delayed, doubling up to this bound.",
        default=60.0,
        validator=greater_than(0, 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "controller",
        config_keys.CONTROLLER_SHUTDOWN_TIMEOUT_SECONDS,
        FLOAT,
        "On SIGTERM, how long to wait for the running cycle to finish and state to be persisted before "
        "exiting anyway. In-flight moves are left to Kafka either way; a second signal exits at once.",
        default=30.0,
        validator=greater_than(0, _HOUR),
    ),
)

SERVICE_KEYS: Final = (
    _k(
        "api",
        config_keys.API_LISTEN,
        STRING,
        "HOST:PORT of the HTTP API and /metrics. Loopback by default: expose it deliberately.",
        default="127.0.0.1:8080",
        validator=host_port,
    ),
    _k(
        "api",
        config_keys.API_TOKEN,
        STRING,
        "The operator token (role `operator`): every call that changes something (submit, pause, resume, "
        "cancel, limits, throttles, placements) needs `Authorization: Bearer <token>`, and the token also "
        f"reads everything. At least {MIN_TOKEN_LENGTH} characters (`openssl rand -hex 32`); a shorter one "
        "is refused at start-up. Without one, mutating calls are refused. Prefer `api.token.file` (which "
        "must not be readable by group or others) or the environment to writing it here.",
        secret=True,
        reloadable=True,
        validator=min_length(MIN_TOKEN_LENGTH),
    ),
    _k(
        "api",
        config_keys.API_READ_TOKEN,
        STRING,
        "The read token (role `reader`): GET calls (`/v1/status`, `/v1/plans`, `/v1/limits`, "
        "`/v1/throttles`, `/v1/reassignments`) and `/metrics` need it or the operator token, unless "
        "`api.read.open` is true; it cannot change anything. Give it to dashboards and Prometheus. At least "
        f"{MIN_TOKEN_LENGTH} characters, different from `api.token`. `/healthz`, `/readyz` and "
        "`/openapi.json` never need a token.",
        secret=True,
        reloadable=True,
        validator=min_length(MIN_TOKEN_LENGTH),
    ),
    _k(
        "api",
        config_keys.API_READ_OPEN,
        BOOL,
        "Serve the GET calls and `/metrics` without any token (for a daemon that listens on a trusted "
        "network only). Off: reads need the read token or the operator token.",
        default=False,
        reloadable=True,
    ),
    _k(
        "api",
        config_keys.API_MAX_BODY_BYTES,
        INT,
        "Largest request body accepted (a 100,000-partition plan is about 8 MB); a larger one is answered "
        "413 at once, from its Content-Length, without reading it.",
        default=64 * 1024 * 1024,
        validator=between(1024, 1024**3),
    ),
    _k(
        "api",
        config_keys.API_MAX_CONNECTIONS,
        INT,
        "Open client connections served at once; a connection beyond it is answered 503 and closed.",
        default=256,
        validator=between(1, 100_000),
    ),
    _k(
        "api",
        config_keys.API_HEADER_TIMEOUT_SECONDS,
        FLOAT,
        "A new connection must send its first request line and headers within this time, or it is closed "
        "(slow clients cannot hold connections open).",
        default=10.0,
        validator=between(0.05, _HOUR),
    ),
    _k(
        "api",
        config_keys.API_BODY_TIMEOUT_SECONDS,
        FLOAT,
        "A request body must arrive completely within this time of the handler starting to read it; "
        "otherwise the answer is 408 `request_timeout`.",
        default=60.0,
        validator=between(0.05, _HOUR),
    ),
    _k(
        "api",
        config_keys.API_IDLE_TIMEOUT_SECONDS,
        FLOAT,
        "A kept-alive connection with no complete next request within this time is closed.",
        default=30.0,
        validator=between(0.05, _HOUR),
    ),
    _k(
        "state",
        config_keys.STATE_DIR,
        PATH,
        "Directory of the embedded state store (SQLite database `reassignd.db`).",
        default="/var/lib/reassignd",
    ),
    _k(
        "state",
        config_keys.STATE_STORE,
        enum("sqlite", "zookeeper"),
        "Where plans, progress, original configs and the journal live: `sqlite` (embedded, one daemon) "
        "or `zookeeper` (shared by HA daemons; needs `ha.zookeeper.connect`).",
        default="sqlite",
    ),
    _k(
        "state",
        config_keys.STORE_RETENTION_DAYS,
        FLOAT,
        "Ended plans (completed, cancelled) are kept this long after they ended, with their journal and "
        "partition rows, then pruned a few at a time in the background. Unfinished plans are never pruned.",
        default=90.0,
        validator=greater_than(0, 36500),
        reloadable=True,
    ),
    _k(
        "state",
        config_keys.STORE_RETENTION_PLANS,
        INT,
        "At most this many ended plans are kept (the newest); older ones are pruned like expired ones.",
        default=500,
        validator=between(1, 1_000_000),
        reloadable=True,
    ),
    _k(
        "ha",
        config_keys.HA_ENABLE,
        BOOL,
        "Elect one active daemon among those configured for the same cluster; the others stand by.",
        default=False,
    ),
    _k(
        "ha",
        config_keys.HA_ZOOKEEPER_CONNECT,
        STRING,
        "ZooKeeper connection string, `host:port[,host:port...]` with an optional chroot.",
        validator=matches(r"[^,\s]+:\d+(,[^,\s]+:\d+)*(/\S*)?", "host:port[,host:port...][/chroot]"),
        example="zk1:2181,zk2:2181,zk3:2181",
    ),
    _k(
        "ha",
        config_keys.HA_ZOOKEEPER_PATH,
        STRING,
        "ZooKeeper path under which daemons elect a leader and keep state (per cluster id below it).",
        default="/reassignd",
        validator=_ZK_PATH,
    ),
    _k(
        "ha",
        config_keys.HA_SESSION_TIMEOUT_SECONDS,
        FLOAT,
        "ZooKeeper session timeout: a leader that loses its session stops acting at once; a standby takes "
        "over after about this long.",
        default=10.0,
        validator=between(1, 600),
    ),
    _k(
        "ha",
        config_keys.HA_NODE_ID,
        STRING,
        "This daemon's name in the election. Empty: the host name.",
        default="",
        validator=_LABEL,
    ),
    _k(
        "ha",
        config_keys.HA_ADVERTISED_URL,
        STRING,
        "URL of this daemon's API that standbys report as the leader's address. Empty: built from "
        "`api.listen`.",
        default="",
    ),
    _k("mqtt", config_keys.MQTT_ENABLE, BOOL, "Publish events and accept commands over MQTT.", default=False),
    _k("mqtt", config_keys.MQTT_HOST, STRING, "MQTT broker host.", default="localhost"),
    _k(
        "mqtt",
        config_keys.MQTT_PORT,
        INT,
        "MQTT broker port (8883 is usual with TLS).",
        default=1883,
        validator=_PORT,
    ),
    _k("mqtt", config_keys.MQTT_TLS_ENABLE, BOOL, "Connect to the MQTT broker over TLS.", default=False),
    _k(
        "mqtt",
        config_keys.MQTT_TLS_CA_FILE,
        PATH,
        "CA certificate(s) in PEM for the MQTT broker; unset: system CAs.",
        example="/etc/reassignd/mqtt-ca.pem",
    ),
    _k(
        "mqtt",
        config_keys.MQTT_TLS_CERTIFICATE_FILE,
        PATH,
        "Client certificate in PEM for mutual TLS.",
        example="/etc/reassignd/mqtt-client.pem",
    ),
    _k(
        "mqtt",
        config_keys.MQTT_TLS_KEY_FILE,
        PATH,
        "Private key in PEM of the client certificate.",
        example="/etc/reassignd/mqtt-client.key",
    ),
    _k("mqtt", config_keys.MQTT_USERNAME, STRING, "MQTT user name.", example="reassignd"),
    _k("mqtt", config_keys.MQTT_PASSWORD, STRING, "MQTT password.", secret=True),
    _k(
        "mqtt",
        config_keys.MQTT_CLIENT_ID,
        STRING,
        "MQTT client id. Empty: `reassignd-<cluster>-<node>`.",
        default="",
        validator=matches(r"[A-Za-z0-9._-]{0,128}", "at most 128 letters, digits, '.', '_' or '-'"),
    ),
    _k(
        "mqtt",
        config_keys.MQTT_TOPIC_PREFIX,
        STRING,
        "Topics are `<prefix>/<cluster>/events`, `.../status` and `.../commands`.",
        default="reassignd",
        validator=_MQTT_PREFIX,
    ),
    _k(
        "mqtt",
        config_keys.MQTT_KEEPALIVE_SECONDS,
        INT,
        "MQTT keep-alive interval.",
        default=30,
        validator=between(5, 3600),
    ),
    _k(
        "mqtt",
        config_keys.MQTT_COMMAND_HMAC_SECRET,
        STRING,
        "Shared secret of the HMAC-SHA256 that signs commands. Unset: every command is rejected.",
        secret=True,
    ),
    _k(
        "mqtt",
        config_keys.MQTT_COMMAND_REPLAY_WINDOW_SECONDS,
        FLOAT,
        "A command whose timestamp is further than this from now is rejected as a replay.",
        default=30.0,
        validator=between(1, 3600),
        reloadable=True,
    ),
    _k(
        "mqtt",
        config_keys.MQTT_QUEUE_MAX_EVENTS,
        INT,
        "Events kept while the MQTT broker is unreachable; beyond that the oldest are dropped (and counted).",
        default=10000,
        validator=between(1, 10_000_000),
    ),
    _k(
        "mqtt",
        config_keys.MQTT_STATUS_MIN_INTERVAL_SECONDS,
        FLOAT,
        "Shortest time between two updates of the retained status document.",
        default=5.0,
        validator=between(0, 3600),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_MODE,
        enum("off", "propose", "execute"),
        "What the daemon does about an anomaly (one of `self.healing.detectors`, such as a broker offline "
        "longer than `self.healing.broker.failure.seconds`): `off` nothing; `propose` plans its fix, "
        "rehearses it, and waits for `reassignd anomalies approve ID`; `execute` queues a fix whose "
        "rehearsal passes every `self.healing.max.*` gate on its own. Never while another plan is queued "
        "or running.",
        default="off",
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_CHECK_INTERVAL_SECONDS,
        FLOAT,
        "How often the writer daemon reads the cluster's brokers for anomalies.",
        default=30.0,
        validator=greater_than(0, _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_BROKER_FAILURE_SECONDS,
        FLOAT,
        "How long a broker stays offline before it is an anomaly whose fix drains it (a broker back "
        "before its fix starts: the anomaly expires).",
        default=600.0,
        validator=greater_than(0, 7 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_DETECTORS,
        STRING_LIST,
        "The anomalies looked for: `broker_failure` (a broker offline too long: drained), `new_broker` (a "
        "running broker with no replica, not decommissioned, for `self.healing.new.broker.seconds`: filled "
        "with its share), `rack_spread` (partitions spanning fewer racks or data centres than the placer "
        "could give them: re-placed), `replica_balance` and `leader_balance` (a broker outside that goal's "
        "band at `self.healing.balance.threshold`: that goal's plan), `byte_balance` (a broker's bytes "
        "outside the planner's byte band at `self.healing.byte.balance.threshold`: the planner's size-aware "
        "replica balance), `disk_capacity` (a broker's log-dir volumes used beyond "
        "`self.healing.disk.capacity.threshold` of their total: bytes shed by the planner's hard disk goal), "
        "`under_replicated` (partitions "
        "under-replicated with every replica's broker online for `self.healing.under.replicated.seconds`: a "
        "preferred-leader election where it helps, else the anomaly says what to check), `log_dir_offline` "
        "(a running broker's log dir answering KAFKA_STORAGE_ERROR for "
        "`self.healing.log.dir.failure.seconds`: the replicas that were in it moved to other brokers).",
        default=["broker_failure", "log_dir_offline"],
        validator=each(matches(_DETECTORS, " or ".join(_DETECTORS.split("|")))),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_NEW_BROKER_SECONDS,
        FLOAT,
        "How long a running broker holds no replica before it is an anomaly whose fix fills it "
        "(with `new_broker` in `self.healing.detectors`).",
        default=300.0,
        validator=greater_than(0, 7 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_VIOLATION_SECONDS,
        FLOAT,
        "How long a rack-spread, balance or disk-capacity violation lasts (with `rack_spread`, "
        "`replica_balance`, `leader_balance`, `byte_balance` or `disk_capacity` in "
        "`self.healing.detectors`) before it is an anomaly; a "
        "partition counts from "
        "when it was first seen uneven. Not judged while a partition is being reassigned.",
        default=600.0,
        validator=greater_than(0, 7 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_UNDER_REPLICATED_SECONDS,
        FLOAT,
        "How long a partition stays under-replicated, every replica's broker online, before it is part of an "
        "anomaly (with `under_replicated` in `self.healing.detectors`).",
        default=600.0,
        validator=greater_than(0, 7 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_LOG_DIR_FAILURE_SECONDS,
        FLOAT,
        "How long a log dir of a running broker stays offline (DescribeLogDirs answers it "
        "KAFKA_STORAGE_ERROR) before it is an anomaly whose fix moves the replicas that were in it to other "
        "brokers (with `log_dir_offline` in `self.healing.detectors`; a dir back before its fix starts: the "
        "anomaly expires). Kafka brings a failed dir back only with a restart of its broker.",
        default=600.0,
        validator=greater_than(0, 7 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_ANOMALY_RETENTION_SECONDS,
        FLOAT,
        "Anomalies that ended (`fixed`, `ignored`, `expired`) are kept in the state store this long after "
        "their last change, then pruned by the leader with the plans' history (an open anomaly never is).",
        default=7 * 24 * _HOUR,
        validator=greater_than(0, 3650 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_BALANCE_THRESHOLD,
        FLOAT,
        "The balance goals' threshold (KIP-166, a share of the average: 0.10 is 10%) for `replica_balance` "
        "and `leader_balance`: a broker outside the band is an anomaly, and the fix is that goal's plan at "
        "this threshold.",
        default=0.10,
        validator=between(0, 0.99),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_BYTE_BALANCE_THRESHOLD,
        FLOAT,
        "The byte band's threshold (KIP-166, a share of the average bytes per broker, each replica weighing "
        "its partition's size) for `byte_balance`: a broker outside it is an anomaly, and the fix is the "
        "planner's size-aware replica balance (`reassignd plan --goal replica-balance --size-aware`) at "
        "this byte threshold and `self.healing.balance.threshold`, which keeps every broker in the replica "
        "band too.",
        default=0.10,
        validator=between(0, 0.99),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_DISK_CAPACITY_THRESHOLD,
        FLOAT,
        "For `disk_capacity`: the share of a broker's log-dir volumes (summed over its dirs; their total and "
        "usable bytes as DescribeLogDirs gives them from Kafka 3.3, KIP-827) used past which it is an "
        "anomaly. Its fix is the planner's hard disk goal at this share: bytes moved off the broker until it "
        "is under, none onto a broker they would take past it (a broker that does not say its volumes is "
        "not bounded).",
        default=0.80,
        validator=between(0.01, 0.99),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_MAX_BYTES,
        INT,
        "Gate: a fix whose plan moves more bytes than this is not run (its anomaly is ignored, saying why).",
        default=100 * 1024**3,
        validator=between(1, _LONG_MAX),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_MAX_PARTITIONS,
        INT,
        "Gate: a fix whose plan moves more partitions than this is not run.",
        default=1000,
        validator=between(1, 10_000_000),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_MAX_DURATION_SECONDS,
        FLOAT,
        "Gate: a fix whose rehearsal predicts a longer run than this is not run.",
        default=6 * _HOUR,
        validator=greater_than(0, 30 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "self.healing",
        config_keys.SELF_HEALING_COOLDOWN_SECONDS,
        FLOAT,
        "The least time between the start of one fix and the start of the next.",
        default=600.0,
        validator=between(0, 7 * 24 * _HOUR),
        reloadable=True,
    ),
    _k(
        "proposals",
        config_keys.PROPOSALS_ENABLE,
        BOOL,
        "Serve plan proposals (`POST /v1/proposals`, `reassignd propose`) from the live cluster view, "
        "planned on one Spark session the daemon keeps warm (needs the `pipeline` extra; the JVM starts "
        "with the daemon and holds about 1 GB).",
        default=False,
    ),
    _k(
        "proposals",
        config_keys.PROPOSALS_SPARK_MASTER,
        STRING,
        "Spark master URL of the proposal planner's session.",
        default="local[*]",
    ),
    _k(
        "proposals",
        config_keys.PROPOSALS_CAPACITY_FILE,
        PATH,
        "Broker capacities (disk, network in/out) for the planner's hard goals, in reassignd's or Cruise "
        "Control's format (docs/planner.md); a request's own `capacity` replaces it.",
        example="/etc/reassignd/capacity.json",
    ),
    _k(
        "log",
        config_keys.LOG_LEVEL,
        enum("debug", "info", "warning", "error"),
        "Least severe log level written.",
        default="info",
        reloadable=True,
    ),
    _k(
        "log",
        config_keys.LOG_FORMAT,
        enum("auto", "json", "console"),
        "`json` lines for log collectors, `console` for people; `auto` picks console on a terminal.",
        default="auto",
    ),
)


def _with_secret_files(keys: tuple[ConfigKey, ...]) -> tuple[ConfigKey, ...]:
    expanded: list[ConfigKey] = []
    for key in keys:
        expanded.append(key)
        if key.secret:
            expanded.append(secret_file_key(key))
    return tuple(expanded)


@functools.cache
def schema() -> Mapping[str, ConfigKey]:
    """Every key by name, in documentation order; the limits are the engine's own (see limits_bridge)."""
    from reassignd.config.limits_bridge import limit_config_keys

    ordered = (*CLUSTER_KEYS, *limit_config_keys(), *BEHAVIOUR_KEYS, *SERVICE_KEYS)
    table = {key.name: key for key in _with_secret_files(ordered)}
    if len(table) != len(_with_secret_files(ordered)):
        raise RuntimeError("duplicate configuration key names")
    return MappingProxyType(table)
