#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: Debian packages the tests need, .venv with every extra, and the
# real Apache Kafka jars (Maven Central) the real-cluster tests start.
# When everything is present it takes seconds: each step checks before it acts, and pip keeps its cache.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
DEBS=(zookeeper mosquitto mosquitto-clients prometheus curl tmux)

missing=()
for pkg in "${DEBS[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
# Maven fetches the real Kafka brokers the tests run (scripts/fetch-kafka.sh).
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # zookeeper, not zookeeperd: zookeeperd's post-install starts a server on 0.0.0.0:2181.
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
    .venv/bin/pip install -q --upgrade pip wheel setuptools
fi
# Reinstall only when the project's metadata or the pinned versions changed since the last install. The
# exact versions come from the constraints file the image uses too (pyproject.toml has ranges).
stamp=.venv/.reassignd-installed
want=$(cat pyproject.toml deploy/docker/constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! .venv/bin/python -c "import reassignd" 2>/dev/null; then
    echo "setup: installing reassignd and its extras into .venv"
    .venv/bin/pip install -q -c deploy/docker/constraints.txt -e ".[pipeline,charts,dev]"
    echo "$want" > "$stamp"
fi
scripts/fetch-kafka.sh
# The JVM class-data archive that halves a Kafka node's start-up CPU (reassignd/localkafka/cluster.py).
.venv/bin/python -m reassignd.localkafka.cluster class-archive
# The same for Kafka's own reassignment tool (reassignd/localkafka/tools.py): a short JVM the tests run often.
.venv/bin/python -m reassignd.localkafka.tools class-archive
echo "setup: ready"
