#!/usr/bin/env bash
# Starts a real single-node Apache Kafka broker in KRaft mode (broker and
# controller in one JVM) in the foreground, for the Go test helper
# testbroker.Kafka (../kafka.go).
#
#   start.sh DATA_DIR PORT CONTROLLER_PORT
#
# The jars (org.apache.kafka:kafka_2.13 and its runtime dependencies) are
# fetched with Maven once, into ${ARDEA_CACHE:-$HOME/.cache/ardea}/kafka-<version>/libs.
# Environment: ARDEA_CACHE; ARDEA_KAFKA_HEAP (-Xmx, default 512m);
# ARDEA_KAFKA_FETCH_ONLY=1 only fetches the jars; ARDEA_KAFKA_WATCH_PID
# kills the broker once that process is gone.
set -euo pipefail

KAFKA_VERSION=4.1.1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${ARDEA_CACHE:-$HOME/.cache/ardea}/kafka-$KAFKA_VERSION
libs=$cache/libs

mkdir -p "$cache"
exec 9>"$cache/.lock" # one fetch at a time across test binaries
if command -v flock >/dev/null; then flock 9; fi
if [[ ! -f $libs/.complete ]]; then
	echo "start.sh: fetching Kafka $KAFKA_VERSION jars into $libs" >&2
	tmp=$cache/libs.tmp.$$
	rm -rf "$cache"/libs.tmp.*
	t0=$SECONDS
	mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >&2
	rm -rf "$libs"
	mv "$tmp" "$libs"
	touch "$libs/.complete"
	echo "start.sh: fetched $(ls "$libs" | wc -l) jars in $((SECONDS - t0))s" >&2
fi
exec 9>&-
if [[ ${ARDEA_KAFKA_FETCH_ONLY:-} == 1 ]]; then
	exit 0
fi

if [[ $# -ne 3 ]]; then
	echo "usage: $0 DATA_DIR PORT CONTROLLER_PORT" >&2
	exit 2
fi
data=$1 port=$2 cport=$3
mkdir -p "$data"
cd "$data"
data=$(pwd)

# One node, replication factor 1 everywhere (offsets, transactions, share
# groups), no initial rebalance delay: what tests of groups and
# transactions need on a single broker.
cat >server.properties <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$data/logs
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
CONF

java=(java "-Xmx${ARDEA_KAFKA_HEAP:-512m}" -Xss1m -XX:+UseG1GC -Djava.awt.headless=true -cp "$libs/*")
# Format once per data dir, so a rerun by hand on the same dir keeps its
# data. A cluster id is 16 random bytes in unpadded URL-safe base64, as
# `StorageTool random-uuid` prints it, made here to save a JVM start
# (~0.8 s); like Kafka's it must not start with '-' (read as an option).
if [[ ! -f logs/meta.properties ]]; then
	cluster=-
	while [[ $cluster == -* ]]; do
		cluster=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
	done
	"${java[@]}" kafka.tools.StorageTool format --standalone -t "$cluster" -c server.properties >&2
fi

if [[ -n ${ARDEA_KAFKA_WATCH_PID:-} ]]; then
	# Kill the broker (this pid, after the exec) once the test binary is
	# gone, and remove its data.
	(
		while kill -0 "$ARDEA_KAFKA_WATCH_PID" 2>/dev/null; do sleep 1; done
		kill -KILL $$ 2>/dev/null
		rm -rf "$data"
	) </dev/null >/dev/null 2>&1 &
fi
exec "${java[@]}" kafka.Kafka server.properties
