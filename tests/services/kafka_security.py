"""TLS, SASL/SCRAM and ACLs for the real-Kafka test cluster (reassignd/localkafka/cluster.py).

`ClusterSecurity` adds to a KRaft cluster, besides its PLAINTEXT listener (inter-broker traffic, the
controller's, and the test's own probe, whose principal User:ANONYMOUS is a super user):

* a `TLS` listener (protocol SSL) that requires a client certificate: the client's principal is its
  certificate's subject (`User:CN=...`), so ACLs apply to TLS clients as to SASL ones;
* a `SCRAM` listener (protocol SASL_PLAINTEXT) with SCRAM-SHA-512, its users created when the controller is
  formatted (`kafka-storage format --add-scram`, written into the bootstrap metadata);
* KRaft's StandardAuthorizer on every node: a principal that is no super user may do only what an ACL
  allows it (`allow.everyone.if.no.acl.found` stays false).

Certificates are made at test time with the openssl command-line tool (Python's `cryptography` is not
installed): one CA, the brokers' certificate (SAN IP:127.0.0.1 and DNS:localhost) and a client certificate,
all in PEM, which Kafka 4.x reads as key stores (`ssl.keystore.type=PEM`); and a second CA that signed
nothing the cluster trusts, for a client that must be refused.

    security = ClusterSecurity.create(tmp_path / "certs", users={"reassignd": "s3cret"})
    cluster = KafkaCluster(tmp_path / "kafka", security=security).start()
    cluster.bootstrap("TLS"), cluster.bootstrap("SCRAM")
    grant(cluster.bootstrap_servers, [Acl("User:reassignd", "CLUSTER", "kafka-cluster", "ALTER")])
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reassignd.localkafka.cluster import JVM_OPTIONS, jars

TLS_LISTENER = "TLS"
SCRAM_LISTENER = "SCRAM"
SCRAM_MECHANISM = "SCRAM-SHA-512"
ANONYMOUS = "User:ANONYMOUS"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLIENT_CN = "reassignd-tls"
CLUSTER_RESOURCE = "kafka-cluster"  # the one CLUSTER resource's name in every ACL


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")


@dataclass(frozen=True)
class Certificates:
    """PEM files in `folder`: `ca` (the cluster's CA), `broker_keystore` (key + certificate + CA),
    `client_cert`/`client_key` (signed by `ca`, CN=reassignd-tls), `other_ca` (trusted by nobody)."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def other_ca(self) -> Path:
        return self.folder / "other-ca.pem"

    @property
    def broker_keystore(self) -> Path:
        return self.folder / "broker-keystore.pem"

    @property
    def client_cert(self) -> Path:
        return self.folder / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.folder / "client.key"

    @property
    def client_principal(self) -> str:
        """The principal Kafka's default mapping gives the client certificate: its subject's DN."""
        return f"User:CN={CLIENT_CN}"

    @classmethod
    def create(cls, folder: Path) -> Certificates:
        """EC P-256 keys (fast to make), unencrypted PKCS#8, valid two days."""
        folder.mkdir(parents=True, exist_ok=True)
        certs = cls(folder)
        for ca in ("ca", "other-ca"):
            _openssl(
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2",
                "-subj", f"/CN=reassignd test {ca}",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
                cwd=folder,
            )  # fmt: skip
        certs._sign("broker", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost")
        certs._sign("client", CLIENT_CN, "extendedKeyUsage=clientAuth")
        certs.broker_keystore.write_text(
            (folder / "broker.key").read_text() + (folder / "broker.pem").read_text() + certs.ca.read_text()
        )
        return certs

    def _sign(self, name: str, common_name: str, extension: str) -> None:
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={common_name}",
            cwd=self.folder,
        )  # fmt: skip
        (self.folder / f"{name}.ext").write_text(extension + "\n")
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
            cwd=self.folder,
        )  # fmt: skip


@dataclass(frozen=True)
class ClusterSecurity:
    """What KafkaCluster(security=...) adds: the TLS and SCRAM listeners, SCRAM users (name -> password),
    the authorizer and its super users (the PLAINTEXT principal always among them)."""

    certificates: Certificates
    users: Mapping[str, str] = field(default_factory=dict)
    super_users: tuple[str, ...] = ()

    @classmethod
    def create(
        cls, folder: Path, users: Mapping[str, str], super_users: Iterable[str] = ()
    ) -> ClusterSecurity:
        return cls(Certificates.create(folder), dict(users), (ANONYMOUS, *super_users))

    @property
    def listeners(self) -> dict[str, str]:
        return {TLS_LISTENER: "SSL", SCRAM_LISTENER: "SASL_PLAINTEXT"}

    def broker_properties(self) -> dict[str, str]:
        tls = f"listener.name.{TLS_LISTENER.lower()}."
        scram = f"listener.name.{SCRAM_LISTENER.lower()}."
        return {
            **self._authorizer(),
            f"{tls}ssl.keystore.type": "PEM",
            f"{tls}ssl.keystore.location": str(self.certificates.broker_keystore),
            f"{tls}ssl.truststore.type": "PEM",
            f"{tls}ssl.truststore.location": str(self.certificates.ca),
            f"{tls}ssl.client.auth": "required",
            f"{scram}sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"{scram}{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
        }

    def controller_properties(self) -> dict[str, str]:
        return self._authorizer()

    def _authorizer(self) -> dict[str, str]:
        return {"authorizer.class.name": AUTHORIZER, "super.users": ";".join(self.super_users)}

    def format_args(self) -> list[str]:
        """`--add-scram` per user: Kafka's format tool writes the credentials into the bootstrap metadata."""
        args: list[str] = []
        for name, password in self.users.items():
            args += ["--add-scram", f"{SCRAM_MECHANISM}=[name={name},password={password}]"]
        return args

    # -- client settings (librdkafka names, as reassignd's cluster.* keys take them) ------------------------

    def tls_client(self, ca: Path | None = None) -> dict[str, str]:
        return {
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca or self.certificates.ca),
            "ssl.certificate.location": str(self.certificates.client_cert),
            "ssl.key.location": str(self.certificates.client_key),
        }

    def scram_client(self, user: str, password: str | None = None) -> dict[str, str]:
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.username": user,
            "sasl.password": self.users[user] if password is None else password,
        }


# -- ACLs ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Acl:
    """One ALLOW ACL: `principal` may do `operation` (Kafka's name, e.g. DESCRIBE_CONFIGS) on a resource
    (CLUSTER kafka-cluster, or TOPIC with a literal name or `*`), from any host."""

    principal: str
    resource_type: str
    resource_name: str
    operation: str
    pattern: str = "LITERAL"  # or PREFIXED: every resource whose name starts with resource_name

    def binding(self, kind: str = "AclBinding") -> Any:
        """confluent-kafka's AclBinding of this ACL (or, `kind="AclBindingFilter"`, the filter matching
        exactly it, as DeleteAcls takes)."""
        import confluent_kafka.admin as ck
        from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

        return getattr(ck, kind)(
            ResourceType[_CONFLUENT_RESOURCE.get(self.resource_type, self.resource_type)],
            self.resource_name,
            ResourcePatternType[self.pattern],
            self.principal,
            "*",
            AclOperation[self.operation],
            AclPermissionType.ALLOW,
        )

    def __str__(self) -> str:
        return f"{self.operation} on {self.resource_type} {self.resource_name} for {self.principal}"


# confluent-kafka names Kafka's CLUSTER resource type (code 4) BROKER
_CONFLUENT_RESOURCE = {"CLUSTER": "BROKER"}
_KAFKA_RESOURCE = {v: k for k, v in _CONFLUENT_RESOURCE.items()}


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def grant(bootstrap: str, acls: Iterable[Acl]) -> None:
    """CreateAcls over PLAINTEXT (a super user); returns once Kafka accepted every one."""
    bindings = [acl.binding() for acl in acls]
    if bindings:
        admin = _admin(bootstrap)  # held until the answers are in: a dropped handle fails its futures
        for future in admin.create_acls(bindings, request_timeout=15).values():
            future.result()


def revoke(bootstrap: str, acls: Iterable[Acl]) -> None:
    """DeleteAcls of exactly these bindings."""
    filters = [acl.binding("AclBindingFilter") for acl in acls]
    if filters:
        admin = _admin(bootstrap)
        for future in admin.delete_acls(filters, request_timeout=15).values():
            future.result()


def listed(bootstrap: str) -> set[Acl]:
    """Every ACL the cluster holds, as Acl values."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    admin = _admin(bootstrap)
    bindings = admin.describe_acls(every, request_timeout=15).result()
    return {
        Acl(
            b.principal,
            _KAFKA_RESOURCE.get(b.restype.name, b.restype.name),
            b.name,
            b.operation.name,
            b.resource_pattern_type.name,
        )
        for b in bindings
        if b.permission_type == AclPermissionType.ALLOW
    }


def kafka_acls(bootstrap: str, command: str) -> str:
    """Runs one `kafka-acls.sh ...` command line as an operator would (Kafka's own AclCommand, from the
    kafka-tools jars), against `bootstrap` over PLAINTEXT: its --bootstrap-server is replaced and its
    --command-config dropped (the test's principal is a super user). Returns the tool's output."""
    args = shlex.split(command)
    if args[:1] != ["kafka-acls.sh"]:
        raise ValueError(f"not a kafka-acls.sh command: {command!r}")
    kept: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        if arg in ("--bootstrap-server", "--command-config"):
            next(rest)
            continue
        kept.append(arg)
    done = subprocess.run(
        [
            *("java", *JVM_OPTIONS, "-Dlog4j2.level=warn", "-cp", f"{jars('tools')}/*"),
            *("org.apache.kafka.tools.AclCommand", "--bootstrap-server", bootstrap, *kept),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"kafka-acls failed ({done.returncode}): {done.stdout} {done.stderr}")
    return done.stdout
