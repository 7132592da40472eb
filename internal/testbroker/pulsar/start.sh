#!/usr/bin/env bash
# Starts a real Apache Pulsar standalone (broker + one in-process bookie,
# RocksDB metadata store, no functions worker, no stream storage) in the
# foreground, for the Go test helper testbroker.Pulsar (../pulsar.go).
#
#   start.sh DATA_DIR BROKER_PORT WEB_PORT
#
# The jars (org.apache.pulsar:pulsar-broker:4.2.4 and its runtime
# dependencies, ~240 MB) are fetched with Maven once, into
#   ${ARDEA_CACHE:-$HOME/.cache/ardea}/pulsar-4.2.4/libs
# Environment:
#   ARDEA_CACHE          cache root (default $HOME/.cache/ardea)
#   MAVEN_OPTS, ~/.m2/settings.xml  as for any mvn run (mirror, local repo)
#   ARDEA_PULSAR_HEAP    -Xmx for the JVM (default 512m)
#   ARDEA_PULSAR_DIRECT  -XX:MaxDirectMemorySize (default 256m)
#   ARDEA_PULSAR_FETCH_ONLY=1  only fetch the jars, then exit
#   ARDEA_PULSAR_WATCH_PID     kill the broker once this process is gone
#                              (the Go test binary sets its own pid)
# The script cds into DATA_DIR and execs java, so killing its process
# (group) stops the broker.
set -euo pipefail

PULSAR_VERSION=4.2.4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${ARDEA_CACHE:-$HOME/.cache/ardea}/pulsar-$PULSAR_VERSION
libs=$cache/libs

fetch() {
	mkdir -p "$cache"
	# Several test binaries may start at once: one fetch at a time.
	exec 9>"$cache/.lock"
	if command -v flock >/dev/null; then flock 9; fi
	if [[ ! -f $libs/.complete ]]; then
		echo "start.sh: fetching Pulsar $PULSAR_VERSION jars into $libs" >&2
		local tmp=$cache/libs.tmp.$$
		rm -rf "$cache"/libs.tmp.*  # left by an interrupted fetch
		local t0=$SECONDS
		mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies \
			-DincludeScope=runtime -DoutputDirectory="$tmp" >&2
		rm -rf "$libs"
		mv "$tmp" "$libs"
		touch "$libs/.complete"
		echo "start.sh: fetched $(ls "$libs" | wc -l) jars in $((SECONDS - t0))s" >&2
	fi
	exec 9>&-
}

fetch
if [[ ${ARDEA_PULSAR_FETCH_ONLY:-} == 1 ]]; then
	exit 0
fi

if [[ $# -ne 3 ]]; then
	echo "usage: $0 DATA_DIR BROKER_PORT WEB_PORT" >&2
	exit 2
fi
data=$1 broker_port=$2 web_port=$3
mkdir -p "$data"
cd "$data"
data=$(pwd)
mkdir -p tmp

# Settings follow the distribution's conf/standalone.conf; everything not
# listed takes the ServiceConfiguration / ServerConfiguration default. The
# same file is read by the broker and by the in-process bookie.
# The bookie binds 0.0.0.0 unless given an interface.
loopback=lo
if [[ $(uname) == Darwin ]]; then loopback=lo0; fi

cat >standalone.conf <<CONF
clusterName=standalone
metadataStoreUrl=
configurationMetadataStoreUrl=
brokerServicePort=$broker_port
webServicePort=$web_port
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
numIOThreads=2
numHttpServerThreads=4
numOrderedExecutorThreads=2
numExecutorThreadPoolSize=2
numCacheExecutorThreadPoolSize=2
numWorkerThreadsForNonPersistentTopic=2
managedLedgerNumSchedulerThreads=2
bookkeeperClientNumWorkerThreads=2
bookkeeperClientNumIoThreads=2
bookkeeperNumberOfChannelsPerBookie=1
authenticationEnabled=false
authorizationEnabled=false
statusFilePath=$data/status
narExtractionDirectory=$data/nar
systemTopicEnabled=true
topicLevelPoliciesEnabled=true
brokerDeleteInactiveTopicsEnabled=false
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
allowAutoSubscriptionCreation=true
transactionCoordinatorEnabled=false
enablePackagesManagement=false
webSocketServiceEnabled=false
loadManagerClassName=org.apache.pulsar.broker.loadbalance.NoopLoadManager
loadBalancerEnabled=false
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
managedLedgerCacheSizeMB=32
managedLedgerNewEntriesCheckDelayInMillis=1
bookkeeperUseV2WireProtocol=true
bookkeeperClientRackawarePolicyEnabled=true
bookkeeperClientHealthCheckEnabled=false
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
nettyMaxFrameSizeBytes=5253120
dbStorage_writeCacheMaxSizeMb=16
dbStorage_readAheadCacheMaxSizeMb=16
dbStorage_rocksDB_blockCacheSize=8388608
dbStorage_rocksDB_writeBufferSizeMB=4
dbStorage_rocksDB_sstSizeInMB=4
journalMaxGroupWaitMSec=1
journalSyncData=false
diskUsageThreshold=0.99
diskUsageWarnThreshold=0.99
allowLoopback=true
listeningInterface=$loopback
gcWaitTime=300000
CONF

cat >log4j2.properties <<'LOG'
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_OUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5level [%t] %c{1} - %msg%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
LOG

if [[ -n ${ARDEA_PULSAR_WATCH_PID:-} ]]; then
	# Watchdog: after the exec below, $$ is the java process.
	watch=$ARDEA_PULSAR_WATCH_PID me=$$
	(
		while kill -0 "$watch" 2>/dev/null; do sleep 1; done
		kill -KILL "$me" 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
fi

exec java \
	-Xms"${ARDEA_PULSAR_HEAP:-512m}" -Xmx"${ARDEA_PULSAR_HEAP:-512m}" \
	-XX:MaxDirectMemorySize="${ARDEA_PULSAR_DIRECT:-256m}" \
	-XX:+UseG1GC -XX:TieredStopAtLevel=1 -Xss512k \
	-Djava.io.tmpdir="$data/tmp" \
	-Dlog4j2.configurationFile="$data/log4j2.properties" \
	-Dpulsar.allocator.exit_on_oom=true \
	-Dio.netty.tryReflectionSetAccessible=true \
	-Dio.netty.recycler.maxCapacityPerThread=4096 \
	--add-opens java.base/java.io=ALL-UNNAMED \
	--add-opens java.base/java.lang=ALL-UNNAMED \
	--add-opens java.base/java.nio=ALL-UNNAMED \
	--add-opens java.base/java.util.zip=ALL-UNNAMED \
	--add-opens java.base/jdk.internal.misc=ALL-UNNAMED \
	--add-opens java.base/sun.net=ALL-UNNAMED \
	--add-opens java.base/sun.nio.ch=ALL-UNNAMED \
	--add-opens java.management/sun.management=ALL-UNNAMED \
	--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
	-cp "$libs/*" \
	org.apache.pulsar.PulsarStandaloneStarter \
	--config "$data/standalone.conf" \
	--metadata-dir "$data/metadata" \
	--bookkeeper-dir "$data/bookkeeper" \
	--zookeeper-dir "$data/zookeeper-unused" \
	--no-functions-worker --no-stream-storage
