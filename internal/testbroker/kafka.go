//go:build unix

package testbroker

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/testbroker/brokerproc"
	"github.com/ardea-dev/ardea/internal/testutil"
)

var kafkaShared struct {
	once    sync.Once
	brokers string
	err     error
}

// Kafka returns the seed brokers of a real Apache Kafka broker for the
// test, comma-separated.
//
// With ARDEA_KAFKA_BROKERS set it returns that and starts nothing.
// Otherwise the first call in a test binary starts a single-node Kafka
// 4.1.1 in KRaft mode with kafka/start.sh (jars fetched with Maven into
// ${ARDEA_CACHE:-$HOME/.cache/ardea}/kafka-4.1.1/libs the first time) and
// later calls share it: tests use their own topics and groups. The broker
// and its data go when the test binary exits (the script watches its pid).
// Without java 17+ (or mvn, before the jars are cached) the test is
// skipped, or fails with ARDEA_REQUIRE_TOOLCHAINS=1.
func Kafka(t testing.TB) string {
	t.Helper()
	if v := os.Getenv("ARDEA_KAFKA_BROKERS"); v != "" {
		return v
	}
	testutil.StartsProcesses(t, "a Kafka broker (set ARDEA_KAFKA_BROKERS to use a running one)")
	script := brokerScript(t, "kafka")
	needJava(t, "Kafka", "ARDEA_KAFKA_BROKERS", filepath.Join(brokerproc.CacheDir(), "kafka-4.1.1", "libs"))
	kafkaShared.once.Do(func() {
		kafkaShared.brokers, kafkaShared.err = brokerproc.StartKafka(t.Context(), script, brokerproc.FreePorts)
	})
	if kafkaShared.err != nil {
		t.Fatalf("testbroker: %v", kafkaShared.err)
	}
	return kafkaShared.brokers
}

// brokerScript locates <name>/start.sh next to this source file.
func brokerScript(t testing.TB, name string) string {
	t.Helper()
	script, err := brokerproc.Script(name)
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// needJava skips (or fails, with ARDEA_REQUIRE_TOOLCHAINS=1) when bash,
// java 17+ or, before libs is filled, mvn is missing.
func needJava(t testing.TB, what, env, libs string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("testbroker: %s broker unavailable: %s (or set %s to an existing one)", what, fmt.Sprintf(format, args...), env)
		if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
			t.Fatal(msg + "; ARDEA_REQUIRE_TOOLCHAINS=1 requires it")
		}
		t.Skip(msg)
	}
	for _, tool := range []string{"bash", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing("%s not found", tool)
		}
	}
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		missing("java -version: %v", err)
	}
	if v := pulsarJavaMajor(string(out)); v != 0 && v < 17 {
		missing("java %d found, 17+ needed", v)
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		if _, serr := os.Stat(filepath.Join(libs, ".complete")); serr != nil {
			missing("mvn not found and the jars are not cached in %s", libs)
		}
	}
}

// KafkaAvailable reports whether Kafka(t) can give a broker (or must:
// ARDEA_REQUIRE_TOOLCHAINS=1), for suites that add a real-broker case
// only where one can run. The fast tier (-short) starts none: there it
// reports only an ARDEA_KAFKA_BROKERS one. Called before the test flags
// are parsed (from a package's init) it cannot know -short; Kafka(t)
// then skips the case.
func KafkaAvailable() bool {
	if os.Getenv("ARDEA_KAFKA_BROKERS") != "" {
		return true
	}
	if flag.Parsed() && testing.Short() {
		return false
	}
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		return true
	}
	for _, tool := range []string{"bash", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false
		}
	}
	if _, err := exec.LookPath("mvn"); err == nil {
		return true
	}
	_, err := os.Stat(filepath.Join(brokerproc.CacheDir(), "kafka-4.1.1", "libs", ".complete"))
	return err == nil
}
