"""reassignd's planner against the planners operators use today, on the same clusters: Yelp kafka-utils
(`kafka-cluster-manager rebalance / decommission`) and LinkedIn kafka-tools (`kafka-assigner balance /
remove`), each fed the cluster through a real ZooKeeper in the classic /brokers layout (bench/peer_tools.py
for how they are installed and run), reassignd through its CLI from the same snapshot, cold (a new process
with its Spark start-up every time).

Scenarios (bench/peer_clusters.py): fill, drain, rebalance at 2,000 / 10,000 / 50,000 partitions. Every
plan is measured by the same code: replicas moved against the lower bound, bytes moved, replica / leader /
byte balance, rack-spread violations and wall time. reassignd runs twice: the count plan (fewest moves,
then fewest bytes) and `--size-aware` (fewest moves, then bytes balanced within 10%), both with
`--threshold 0` (every broker within floor..ceil of the average, the balance kafka-utils reaches).

A full run writes bench/results/peers.md and the section of docs/benchmarks.md between its markers.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import peer_clusters as clusters
from bench import peer_tools as tools

RESULTS = Path(__file__).parent / "results"
DOC = Path(__file__).parent.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
PEER_TIMEOUT = float(os.environ.get("REASSIGND_PEER_TIMEOUT", "1800"))
"""Seconds a peer gets per plan (REASSIGND_PEER_TIMEOUT): past it, `no plan` in the table."""
BIG = str(10**7)
REASSIGND_GOAL = {"fill": "fill", "drain": "drain", "rebalance": "cluster-balance"}


def _peer_commands(s: clusters.Scenario) -> tuple[list[str], list[str]]:
    if s.name == "drain":
        utils = [
            "decommission",
            *map(str, s.brokers),
            "--max-partition-movements",
            BIG,
            "--max-leader-changes",
            BIG,
        ]
        assigner = ["remove", "-b", *map(str, s.brokers)]
    else:
        utils = [
            "rebalance",
            "--replication-groups",
            "--brokers",
            "--leaders",
            "--max-partition-movements",
            BIG,
            "--max-leader-changes",
            BIG,
        ]
        assigner = ["balance", "-t", "count", "leader", "rackaware"]
    return utils, assigner


def _reassignd(
    s: clusters.Scenario, snapshot: Path, workdir: Path, *, size_aware: bool, engine: str = "auto"
) -> dict[str, Any]:
    out = workdir / f"{s.key}-reassignd{'-size' if size_aware else ''}-{engine}.json"
    cmd = [
        sys.executable,
        "-m",
        "reassignd",
        "plan",
        "--goal",
        REASSIGND_GOAL[s.name],
        "--snapshot",
        str(snapshot),
        "--out",
        str(out),
        "--threshold",
        "0",
        "--engine",
        engine,
        "--json",
    ]
    if s.brokers:
        cmd += ["--brokers", ",".join(map(str, s.brokers))]
    if size_aware:
        cmd.append("--size-aware")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=PEER_TIMEOUT, check=False)
    seconds = time.monotonic() - started
    name = "reassignd --size-aware" if size_aware else "reassignd"
    if engine != "auto":
        name += f" --engine {engine}"
    if done.returncode != 0:
        return {"tool": name, "seconds": round(seconds, 1), "error": done.stderr.strip()[-300:]}
    current = {(tp.topic, tp.partition): list(p.replicas) for tp, p in s.snapshot.partitions.items()}
    for entry in json.loads(out.read_text())["partitions"]:
        current[(entry["topic"], int(entry["partition"]))] = [int(r) for r in entry["replicas"]]
    figures = json.loads(done.stdout)["clusters"][0]
    return {
        "tool": name,
        "seconds": round(seconds, 1),
        **clusters.measure(s, current),
        "goals_not_held": [g["goal"] for g in figures["goals"] if not g["held"]],
        "bytes_lower_bound": figures.get("bytes_lower_bound"),
        "plan": out.read_text(),
    }


def _peer(run: tools.PeerRun, s: clusters.Scenario) -> dict[str, Any]:
    if run.targets is None:
        return {"tool": run.tool, "seconds": round(run.seconds, 1), "error": run.error}
    return {"tool": run.tool, "seconds": round(run.seconds, 1), **clusters.measure(s, run.targets)}


def _spread(row: dict[str, Any], load: str) -> float:
    values = row[load]
    avg = values["max"] / values["max_over_avg"] if values["max_over_avg"] else 0.0
    return (values["max"] - values["min"]) / avg if avg else 0.0


def verdict(rows: list[dict[str, Any]], partitions: int, scenario: str) -> dict[str, Any]:
    """Per reassignd row: is it at least as good as the best peer on each figure? Balance is also compared
    with the best peer that keeps rack spread as well as reassignd (`*_balance_rack_keeping`): a peer that
    breaks the spread can balance what the racks otherwise pin."""
    peers = [r for r in rows if not r["tool"].startswith("reassignd") and "error" not in r]
    out: dict[str, Any] = {}
    ours_rows = [r for r in rows if r["tool"] in ("reassignd", "reassignd --size-aware") and "error" not in r]
    for ours in ours_rows:
        checks: dict[str, Any] = {}
        if peers:
            checks["moves"] = ours["replicas_moved"] <= min(p["replicas_moved"] for p in peers)
            keeping = [p for p in peers if p["rack_violations"] <= ours["rack_violations"]]
            for load in ("replicas", "leaders", "bytes"):
                checks[f"{load}_balance"] = _spread(ours, load) <= min(_spread(p, load) for p in peers) + 1e-9
                if keeping:
                    checks[f"{load}_balance_rack_keeping"] = (
                        _spread(ours, load) <= min(_spread(p, load) for p in keeping) + 1e-9
                    )
            checks["rack_spread"] = ours["rack_violations"] <= min(p["rack_violations"] for p in peers)
            least = min(p["bytes_moved"] for p in peers)
            checks["bytes_over_least_peer"] = round(ours["bytes_moved"] / least, 2) if least else None
            if ours.get("bytes_lower_bound") and least and scenario != "drain":
                checks["byte_band_bound_over_least_peer"] = round(ours["bytes_lower_bound"] / least, 2)
            checks["bytes_within_1_5x"] = ours["bytes_moved"] <= 1.5 * least if least else True
        timed = [r for r in rows if not r["tool"].startswith("reassignd")]
        if partitions >= 50_000 and timed:
            checks["faster_than_every_peer"] = all(
                ours["seconds"] < (p["seconds"] if "error" not in p else float("inf")) for p in timed
            )
        out[ours["tool"]] = checks
    return out


def run(quick: bool) -> dict[str, Any]:
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    sizes = [2_000] if quick else [2_000, 10_000, 50_000]
    peers = tools.install()
    from tests.services.zookeeper import ZooKeeperServer

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        work = Path(tmp)
        zk = ZooKeeperServer(work / "zookeeper")
        zk.start()
        try:
            for partitions in sizes:
                for name in clusters.SCENARIOS:
                    s = clusters.build(name, partitions, threshold=0.0)
                    snapshot = clusters.write_snapshot(s, work)
                    sizes_file, du_file = clusters.write_sizes(s, work)
                    chroot = f"/{s.key}"
                    clusters.load_zookeeper(zk.hosts, chroot, s.snapshot)
                    current = {
                        (tp.topic, tp.partition): list(p.replicas) for tp, p in s.snapshot.partitions.items()
                    }
                    utils_cmd, assigner_cmd = _peer_commands(s)
                    rows = [
                        _peer(
                            tools.run_kafka_utils(
                                peers,
                                work,
                                zk.hosts + chroot,
                                utils_cmd,
                                sizes_file=sizes_file,
                                current=current,
                                timeout=PEER_TIMEOUT,
                            ),
                            s,
                        ),
                        _peer(
                            tools.run_kafka_tools(
                                peers, zk.hosts + chroot, assigner_cmd, du_file, PEER_TIMEOUT
                            ),
                            s,
                        ),
                        _reassignd(s, snapshot, work, size_aware=False),
                        _reassignd(s, snapshot, work, size_aware=True),
                        _reassignd(s, snapshot, work, size_aware=False, engine="spark"),
                    ]
                    local, spark = rows[2], rows[4]
                    if "error" not in spark and spark.get("plan") != local.get("plan"):
                        raise AssertionError(f"{s.key}: the Spark engine planned differently from in-process")
                    for r in rows:
                        r.pop("plan", None)
                    entry = {
                        "scenario": name,
                        "partitions": partitions,
                        "brokers": len(s.snapshot.brokers),
                        "lower_bound": clusters.lower_bound(s),
                        "rows": rows,
                        "verdict": verdict(rows, partitions, name),
                    }
                    results.append(entry)
                    for r in rows:
                        print(f"   {s.key} {_line(r, clusters.lower_bound(s))}", flush=True)
        finally:
            zk.stop()
    figures = {"peers": peers.versions(), "timeout_s": PEER_TIMEOUT, "results": results}
    table = markdown(figures)
    print(table)
    if not quick:
        (RESULTS / "peers.md").write_text(table)
        _update_doc(table)
    return figures


def _gb(value: float) -> str:
    return f"{value / 1e9:,.0f}"


def _line(r: dict[str, Any], bound: int) -> str:
    if "error" in r:
        return f"{r['tool']}: no plan ({r['error']}) after {r['seconds']} s"
    return (
        f"{r['tool']}: {r['replicas_moved']} moves (bound {bound}), {_gb(r['bytes_moved'])} GB, "
        f"replicas {r['replicas']['min']}-{r['replicas']['max']}, leaders {r['leaders']['min']}-"
        f"{r['leaders']['max']}, bytes max/avg {r['bytes']['max_over_avg']}, rack violations "
        f"{r['rack_violations']}, {r['seconds']} s"
    )


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        "| scenario | partitions (brokers) | tool | moves / lower bound | GB moved | replicas min-max | "
        "leaders min-max | bytes max/avg | rack violations | wall s |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for e in figures["results"]:
        for r in e["rows"]:
            head = f"| {e['scenario']} | {e['partitions']:,} ({e['brokers']}) | {r['tool']} |"
            if "error" in r:
                lines.append(f"{head} no plan: {r['error'][:80]} | | | | | | {r['seconds']:,} |")
                continue
            ratio = r["replicas_moved"] / e["lower_bound"] if e["lower_bound"] else 0.0
            moves = f"{r['replicas_moved']:,} / {e['lower_bound']:,} = {ratio:.2f}"
            lines.append(
                f"{head} {moves} | {_gb(r['bytes_moved'])} | "
                f"{r['replicas']['min']:,}-{r['replicas']['max']:,} | {r['leaders']['min']:,}-"
                f"{r['leaders']['max']:,} | {r['bytes']['max_over_avg']:.2f} | {r['rack_violations']:,} | "
                f"{r['seconds']:,} |"
            )
    lines += ["", "Goals, per reassignd plan against the best peer on each figure (yes = met):", ""]
    lines += [
        "| scenario | partitions | plan | moves | replica balance | leader balance | byte balance "
        "| rack spread | bytes moved / least peer's | faster than every peer |",
        "|---|--:|---|---|---|---|---|---|--:|---|",
    ]
    for e in figures["results"]:
        for tool, c in e["verdict"].items():

            def yes(key: str, c: dict[str, Any] = c) -> str:
                if key not in c:
                    return "n/a"
                text = "yes" if c[key] else "**no**"
                keeping = c.get(key.replace("_balance", "_balance_rack_keeping"))
                if key.endswith("_balance") and not c[key] and keeping:
                    text += " (yes among rack-keeping peers)"
                return text

            ratio = c.get("bytes_over_least_peer")
            over = (
                "n/a"
                if ratio is None
                else f"{ratio:.2f}x" + ("" if c.get("bytes_within_1_5x") else " (**no**)")
            )
            bound = c.get("byte_band_bound_over_least_peer")
            if bound is not None:
                over += f"; a 10% byte band needs at least {bound:.2f}x"
            lines.append(
                f"| {e['scenario']} | {e['partitions']:,} | {tool} | {yes('moves')} | "
                f"{yes('replicas_balance')} | {yes('leaders_balance')} | {yes('bytes_balance')} | "
                f"{yes('rack_spread')} | {over} | "
                f"{yes('faster_than_every_peer')} |"
            )
    return "\n".join(lines) + "\n"


def _update_doc(table: str) -> None:
    text = DOC.read_text()
    block = f"{BEGIN}\n{table}{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + f"\n\n{block}\n"
    DOC.write_text(text)
