#!/usr/bin/env bash
# One-shot job of the compose stack: waits for the three brokers, creates sample topics laid out so that
# reassignd has work to do, and fills them with data. Idempotent: an existing topic is neither re-created
# nor refilled. Runs in the apache/kafka image (its tools are in /opt/kafka/bin).
#
#   orders    12 partitions, RF 2, only on brokers 1 and 2  -> a replica-balance plan moves replicas to 3
#   clicks     6 partitions, RF 3, every leader on broker 1 -> a leader-balance plan moves leadership
#   payments   4 partitions, RF 3, min.insync.replicas=2    -> moves must keep the ISR at 2 or more
set -euo pipefail

BOOTSTRAP=${BOOTSTRAP:-kafka1:9092,kafka2:9092,kafka3:9092}
RECORD_BYTES=${RECORD_BYTES:-1024}
RECORDS=${RECORDS:-100000}
BIN=/opt/kafka/bin

brokers_up() {
    "$BIN/kafka-broker-api-versions.sh" --bootstrap-server "$BOOTSTRAP" 2>/dev/null | grep -c '(id: ' || true
}

for attempt in $(seq 1 60); do
    up=$(brokers_up)
    [ "$up" -ge 3 ] && break
    echo "create-topics: $up of 3 brokers up (attempt $attempt), waiting"
    sleep 5
done
[ "$(brokers_up)" -ge 3 ] || { echo "create-topics: brokers not up after 5 minutes" >&2; exit 1; }

existing=$("$BIN/kafka-topics.sh" --bootstrap-server "$BOOTSTRAP" --list)

create() {  # create NAME REPLICA_ASSIGNMENT [--config k=v ...]; returns 1 when the topic already existed
    local name=$1 assignment=$2
    shift 2
    if grep -qx "$name" <<<"$existing"; then
        echo "create-topics: $name exists, left as it is"
        return 1
    fi
    "$BIN/kafka-topics.sh" --bootstrap-server "$BOOTSTRAP" --create --topic "$name" \
        --replica-assignment "$assignment" "$@"
}

fill() {  # fill NAME RECORDS
    "$BIN/kafka-producer-perf-test.sh" --topic "$1" --num-records "$2" --record-size "$RECORD_BYTES" \
        --throughput -1 --producer-props bootstrap.servers="$BOOTSTRAP" acks=all linger.ms=20 batch.size=262144
}

if create orders "1:2,2:1,1:2,2:1,1:2,2:1,1:2,2:1,1:2,2:1,1:2,2:1"; then
    fill orders "$RECORDS"
fi
if create clicks "1:2:3,1:3:2,1:2:3,1:3:2,1:2:3,1:3:2"; then
    fill clicks "$((RECORDS / 2))"
fi
if create payments "1:2:3,2:3:1,3:1:2,1:3:2" --config min.insync.replicas=2; then
    fill payments "$((RECORDS / 4))"
fi
"$BIN/kafka-topics.sh" --bootstrap-server "$BOOTSTRAP" --describe --topic 'orders|clicks|payments'
echo "create-topics: done"
