"""`reassignd demo`: a simulated cluster, the daemon, a drain plan, shown live to the end.

Everything it starts is a child process (the simulator, because librdkafka may abort on protocol errors
and must not take the demo down with it; the daemon, so it runs exactly as `reassignd run` does) and is
stopped by its PID. The plan comes from `drain_plan`, which uses the placement package's move rule
(`reassignd.placement.rules.move_violation`): every replica leaves the drained broker for the emptiest
broker where the partition's rack spread does not get worse. The simulated clock runs at a speed chosen
from a rehearsal of the plan, so the whole move plays in about `target_seconds` of wall time.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

from reassignd import config_keys, examples
from reassignd.children import free_port, stop_process
from reassignd.model import ClusterSnapshot, InvalidInputError, Problem, ReassignmentPlan
from reassignd.placement.rules import move_violation
from reassignd.placement.topology import Topology

BOOTSTRAP_PREFIX = "bootstrap.servers="
CONTROL_PREFIX = "control="
DEMO_SCENARIO = examples.DIRECTORY / "demo.json"


# ---------------------------------------------------------------------------------------------------------
# The plan


def drain_plan(snapshot: ClusterSnapshot, drained: Sequence[int]) -> ReassignmentPlan:
    """Every replica on `drained` moves to the emptiest broker the spread rule allows, in its place.

    Replacing in place keeps each partition's preferred-leader order (a drained preferred leader is
    replaced by its new broker, which then leads). Emptiest is in bytes, counting what this plan already
    sent there, and the largest partitions are placed first, so the receivers fill evenly. A partition
    with no valid destination is an error naming it.
    """
    gone = set(drained)
    unknown = sorted(gone - set(snapshot.brokers))
    if unknown:
        raise InvalidInputError(
            "drain",
            [
                Problem(
                    "drain", "brokers", f"unknown broker id(s) {unknown}; known: {sorted(snapshot.brokers)}"
                )
            ],
        )
    keep = [b for b in snapshot.brokers.values() if b.id not in gone and b.online]
    topology = Topology.from_brokers(keep)
    load = {b.id: 0 for b in keep}
    for p in snapshot.partitions.values():
        for r in p.target_replicas:
            if r in load:
                load[r] += p.size_bytes
    entries = []
    problems = []
    for tp in sorted(snapshot.partitions, key=lambda tp: (-snapshot.partitions[tp].size_bytes, tp)):
        p = snapshot.partitions[tp]
        replicas = list(p.target_replicas)
        if not gone & set(replicas):
            continue
        for source in [r for r in replicas if r in gone]:
            allowed = [b for b in load if move_violation(replicas, source, b, topology) is None]
            if not allowed:
                problems.append(Problem(str(tp), "replicas", f"no broker can take the replica on {source}"))
                break
            destination = min(allowed, key=lambda b: (load[b], b))
            load[destination] += p.size_bytes
            replicas = [destination if r == source else r for r in replicas]
        else:
            entries.append({"topic": tp.topic, "partition": tp.partition, "replicas": replicas})
    if problems:
        raise InvalidInputError("drain plan", problems)
    return ReassignmentPlan.from_dict({"version": 1, "partitions": entries})


# ---------------------------------------------------------------------------------------------------------
# Child processes


def _child_env() -> dict[str, str]:
    return dict(os.environ, PYTHONUNBUFFERED="1")


@dataclass
class SimulatorProcess:
    """`python -m reassignd sim` with its two ready lines read: the bootstrap servers and the control URL."""

    scenario: Path
    log_path: Path
    time_scale: float = 0.0
    proc: subprocess.Popen[bytes] | None = None
    bootstrap_servers: str = ""
    control_url: str = ""

    def start(self, timeout: float = 30.0) -> SimulatorProcess:
        cmd = [sys.executable, "-m", "reassignd", "--log-format", "json", "sim"]
        cmd += ["--scenario", str(self.scenario), "--time-scale", repr(float(self.time_scale))]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=_child_env(),
                start_new_session=True,  # Ctrl-C reaches the demo only; it stops its children in order
            )
        lines = _read_lines(self.proc.stdout, 2, timeout)
        if len(lines) < 2:
            self.stop()
            raise RuntimeError(f"simulator not ready (lines {lines!r}); log: {_tail(self.log_path)}")
        bootstrap, control = lines
        if not bootstrap.startswith(BOOTSTRAP_PREFIX) or not control.startswith(CONTROL_PREFIX):
            self.stop()
            raise RuntimeError(f"unexpected simulator ready lines {lines!r}")
        self.bootstrap_servers = bootstrap[len(BOOTSTRAP_PREFIX) :]
        self.control_url = control[len(CONTROL_PREFIX) :]
        return self

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        code = stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def control(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.control_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


def _read_lines(stream: IO[bytes] | None, count: int, timeout: float) -> list[str]:
    """Up to `count` lines from a child's stdout within `timeout` (a thread: pipes have no timeout)."""
    assert stream is not None
    found: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for _ in range(count):
            raw = stream.readline()
            if not raw:
                break
            found.put(raw.decode("utf-8", "replace").rstrip("\n"))
        found.put(None)

    threading.Thread(target=read, name="child-ready-lines", daemon=True).start()
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while len(lines) < count:
        try:
            line = found.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        lines.append(line)
    return lines


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


@dataclass
class DaemonProcess:
    """`python -m reassignd run` with a generated token, a temp state dir and a free loopback port."""

    workdir: Path
    bootstrap_servers: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    token: str = ""

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_file(self) -> Path:
        return self.workdir / config_keys.API_TOKEN

    @property
    def log_path(self) -> Path:
        return self.workdir / "daemon.log"

    def start(self, timeout: float = 30.0) -> DaemonProcess:
        from reassignd.client import ApiClient, ApiError, ApiUnreachable

        self.port = free_port()
        self.token = secrets.token_urlsafe(24)
        self.token_file.write_text(self.token, encoding="utf-8")
        self.token_file.chmod(0o600)
        config = {
            config_keys.CLUSTER_BOOTSTRAP_SERVERS: self.bootstrap_servers,
            config_keys.API_LISTEN: f"127.0.0.1:{self.port}",
            config_keys.API_TOKEN_FILE: str(self.token_file),
            config_keys.STATE_DIR: str(self.workdir / "state"),
            config_keys.LOG_FORMAT: "json",
            **self.settings,
        }
        config_path = self.workdir / "reassignd.toml"
        config_path.write_text(
            "".join(f"{k} = {toml_value(v)}\n" for k, v in config.items()), encoding="utf-8"
        )
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "reassignd", "run", "--config", str(config_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=_child_env(),
                start_new_session=True,  # Ctrl-C reaches the demo only; it stops its children in order
            )
        client = ApiClient(self.api_url, token=self.token, timeout=2.0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}: {_tail(self.log_path)}")
            try:
                client.health()
                return self
            except (ApiUnreachable, ApiError):
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"daemon not healthy after {timeout}s: {_tail(self.log_path)}")

    def stop(self) -> int | None:
        return None if self.proc is None else stop_process(self.proc, timeout=15.0)


# ---------------------------------------------------------------------------------------------------------
# The demo


DEMO_LIMITS: Mapping[str, Any] = {
    config_keys.REASSIGNMENT_PARALLEL_REPLICA_COUNT: 1,
    config_keys.REASSIGNMENT_MAX_INCOMING_REPLICA_MOVEMENTS_PER_BROKER: 2,
    config_keys.REASSIGNMENT_MAX_OUTGOING_REPLICA_MOVEMENTS_PER_BROKER: 2,
    config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE: 50_000_000,
    config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE: 50_000_000,
}
CYCLE_SECONDS = 0.5  # wall seconds between daemon cycles


@dataclass
class DemoOptions:
    scenario: Path = DEMO_SCENARIO
    drain: tuple[int, ...] = ()
    target_seconds: float = 100.0
    limits: Mapping[str, Any] = field(default_factory=lambda: dict(DEMO_LIMITS))
    keep_dir: bool = False


def _say(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")
    out.flush()


def choose_time_scale(predicted_seconds: float, target_seconds: float) -> float:
    """Simulated seconds per wall second so the move plays in about `target_seconds` (at least 1x)."""
    return max(1.0, round(predicted_seconds / max(target_seconds, 1.0), 1))


def run_demo(options: DemoOptions, out: TextIO) -> int:
    """0 when the plan completed, 1 when it did not; KeyboardInterrupt propagates after cleanup."""
    import shutil
    import tempfile

    from reassignd.cli.watch import format_duration, watch
    from reassignd.client import ApiClient
    from reassignd.engine import Limits
    from reassignd.model import snapshot_from_dict
    from reassignd.rehearsal import cluster_from_snapshot, rehearse
    from reassignd.sim.scenario import load_scenario
    from reassignd.units import format_bytes

    scenario = load_scenario(options.scenario)
    drain = options.drain or (max(b.id for b in scenario.brokers),)
    workdir = Path(tempfile.mkdtemp(prefix="reassignd-demo-"))
    sim = SimulatorProcess(options.scenario, workdir / "sim.log", time_scale=0.0)
    daemon: DaemonProcess | None = None
    try:
        _say(out, f"reassignd demo: simulated cluster from {options.scenario} (files in {workdir})")
        sim.start()
        snapshot = snapshot_from_dict(sim.control("GET", "/snapshot"))
        racks = sorted({b.rack or "-" for b in snapshot.brokers.values()})
        _say(
            out,
            f"  cluster: {len(snapshot.brokers)} brokers in racks {', '.join(racks)}; "
            f"{len(snapshot.topics)} topics, {len(snapshot.partitions)} partitions",
        )
        _say(
            out, f"  Kafka bootstrap servers: {sim.bootstrap_servers}   simulator control: {sim.control_url}"
        )
        _say(out, f"  simulator pid {sim.proc.pid if sim.proc else '?'}, log {sim.log_path}")
        plan = drain_plan(snapshot, drain)
        limits = Limits.from_mapping(dict(options.limits))
        first = rehearse(cluster_from_snapshot(snapshot), plan, limits, cycle_interval=5.0)
        scale = choose_time_scale(first.duration_seconds, options.target_seconds)
        prediction = rehearse(
            cluster_from_snapshot(snapshot), plan, limits, cycle_interval=CYCLE_SECONDS * scale
        )
        _say(
            out,
            f"  plan: drain broker(s) {list(drain)}: {len(plan)} partitions, "
            f"{format_bytes(prediction.total_bytes)} to copy, {prediction.steps} steps",
        )
        _say(
            out,
            f"  rehearsal: predicted {format_duration(prediction.duration_seconds)} of cluster time "
            f"(computed in {prediction.wall_seconds:.2f} s); played at {scale:g}x",
        )
        daemon = DaemonProcess(
            workdir,
            sim.bootstrap_servers,
            {
                **options.limits,
                config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS: CYCLE_SECONDS,
                config_keys.CONTROLLER_CYCLE_MIN_INTERVAL_SECONDS: 0.1,
            },
        ).start()
        _say(
            out,
            f"  daemon: API {daemon.api_url}  metrics {daemon.api_url}/metrics  "
            f"token file {daemon.token_file}",
        )
        _say(out, f"  daemon pid {daemon.proc.pid if daemon.proc else '?'}, log {daemon.log_path}")
        _say(out, f"    try: reassignd status --api {daemon.api_url} --token-file {daemon.token_file}")
        client = ApiClient(daemon.api_url, token=daemon.token, timeout=10.0)
        submitted = client.submit_plan(plan.to_dict())
        plan_id = str(submitted["plan_id"])
        started_at = float(sim.control("GET", "/state")["time"])
        sim.control("POST", "/time-scale", {"scale": scale})
        _say(out, f"  submitted {plan_id}; progress until it completes (Ctrl-C stops everything):")
        _say(out)
        code = watch(lambda: client.status(plan_id), interval=0.5, out=out)
        elapsed = float(sim.control("GET", "/state")["time"]) - started_at
        _say(out)
        error = (elapsed - prediction.duration_seconds) / max(prediction.duration_seconds, 1e-9)
        _say(
            out,
            f"done: {format_duration(elapsed)} of cluster time, rehearsal predicted "
            f"{format_duration(prediction.duration_seconds)} ({error:+.1%}).",
        )
        return code
    finally:
        # a second Ctrl-C (or SIGTERM, SIGHUP) must not leave the children running: they are stopped first
        stopping = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in stopping}
        try:
            if daemon is not None:
                daemon.stop()
            sim.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if options.keep_dir:
            _say(out, f"files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
