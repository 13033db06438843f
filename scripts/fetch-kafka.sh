#!/usr/bin/env bash
# Fetches the real Apache Kafka jars the tests and benchmarks run (scripts/kafka/*.pom.xml) into
# .cache/kafka/NAME/, with Maven. Idempotent: a folder whose pom has not changed since it was filled is kept
# as it is, so a second run takes no network and well under a second. Nothing is fetched at test time.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=.cache/kafka
mkdir -p "$CACHE"
for pom in scripts/kafka/*.pom.xml; do
    name=$(basename "$pom" .pom.xml)
    dest="$CACHE/$name"
    want=$(sha256sum "$pom" | cut -d' ' -f1)
    if [ -f "$dest/.pom-sha256" ] && [ "$(cat "$dest/.pom-sha256")" = "$want" ]; then
        continue
    fi
    command -v mvn >/dev/null 2>&1 || { echo "setup: Maven (mvn) is needed to fetch Kafka's jars" >&2; exit 1; }
    echo "setup: fetching Kafka jars ($name) from Maven Central"
    tmp=$(mktemp -d "$CACHE/.$name.XXXXXX")
    # -B: no progress bars; -q: errors only. Runtime scope is what a broker's classpath needs.
    if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$PWD/$tmp" >"$tmp.log" 2>&1; then
        cat "$tmp.log" >&2; rm -rf "$tmp" "$tmp.log"; exit 1
    fi
    rm -f "$tmp.log"
    echo "$want" > "$tmp/.pom-sha256"
    rm -rf "$dest"
    mv "$tmp" "$dest"
done
