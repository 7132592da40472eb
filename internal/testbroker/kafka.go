//go:build unix

package testbroker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const kafkaStartTimeout = 3 * time.Minute

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
	script := brokerScript(t, "kafka")
	needJava(t, "Kafka", "ARDEA_KAFKA_BROKERS", filepath.Join(cacheDir(), "kafka-4.1.1", "libs"))
	kafkaShared.once.Do(func() { kafkaShared.brokers, kafkaShared.err = startKafka(t.Context(), script, pulsarFreePorts) })
	if kafkaShared.err != nil {
		t.Fatalf("testbroker: %v", kafkaShared.err)
	}
	return kafkaShared.brokers
}

// startKafka fetches the jars and starts a broker, waiting under ctx; the
// broker process itself outlives ctx (it is shared by the tests after).
// The ports are chosen free and bound by the broker a moment later; when
// another process took one meanwhile (the broker exits with "Address
// already in use") it starts again on fresh ports, up to
// pulsarStartTries times.
func startKafka(ctx context.Context, script string, freePorts func(n int) ([]int, error)) (string, error) {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	fetch := exec.CommandContext(fctx, "bash", script)
	fetch.Env = append(os.Environ(), "ARDEA_KAFKA_FETCH_ONLY=1")
	if out, err := fetch.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetching the Kafka jars with Maven (%s): %w\n%s", script, err, pulsarTail(out, 60))
	}
	for try := 1; ; try++ {
		ports, err := freePorts(2)
		if err != nil {
			return "", err
		}
		brokers, retry, err := startKafkaOn(ctx, script, ports[0], ports[1])
		if err == nil {
			return brokers, nil
		}
		if !retry || try == pulsarStartTries {
			return "", err
		}
		fmt.Fprintf(os.Stderr, "testbroker: Kafka start attempt %d: a port was taken, retrying on fresh ports: %v\n", try, err)
	}
}

// startKafkaOn starts one broker on port (and its controller on cport).
// retry reports a failure worth another try with fresh ports.
func startKafkaOn(ctx context.Context, script string, port, cport int) (brokers string, retry bool, err error) {
	dir, err := os.MkdirTemp("", "ardea-kafka-")
	if err != nil {
		return "", false, err
	}
	logPath := filepath.Join(dir, "kafka.log") // removed with dir when the broker goes
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", false, err
	}
	defer logFile.Close()
	cmd := exec.Command("bash", script, dir, strconv.Itoa(port), strconv.Itoa(cport))
	cmd.Env = append(os.Environ(), "ARDEA_KAFKA_WATCH_PID="+strconv.Itoa(os.Getpid()))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", false, fmt.Errorf("starting %s: %w", script, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	brokers = fmt.Sprintf("127.0.0.1:%d", port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return "", false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(kafkaStartTimeout)
	for {
		// Ready: the broker answers metadata and its controller has
		// registered it.
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := adm.BrokerMetadata(rctx)
		rcancel()
		if err == nil && len(m.Brokers) > 0 {
			fmt.Fprintf(os.Stderr, "testbroker: Kafka %s ready in %v (log %s)\n", brokers, time.Since(start).Round(time.Millisecond), logPath)
			return brokers, false, nil
		}
		select {
		case <-tick.C:
		case werr := <-exited:
			log := pulsarLogTail(logPath)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the script's pid watcher
			os.RemoveAll(dir)
			return "", pulsarPortTaken.MatchString(log),
				fmt.Errorf("kafka broker on ports %d and %d exited before it was ready (%w); log:\n%s", port, cport, werr, log)
		case <-deadline:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return "", false, fmt.Errorf("kafka broker not ready after %v; log %s:\n%s", kafkaStartTimeout, logPath, pulsarLogTail(logPath))
		}
	}
}

// brokerScript locates <name>/start.sh next to this source file.
func brokerScript(t testing.TB, name string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testbroker: runtime.Caller failed")
	}
	script := filepath.Join(filepath.Dir(file), name, "start.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("testbroker: %v", err)
	}
	return script
}

func cacheDir() string {
	if c := os.Getenv("ARDEA_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ardea")
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

// StartKafka starts a real broker outside a test (ardea bench kafka): the
// same broker Kafka starts, gone when this process exits. It needs the
// source tree (kafka/start.sh), java 17+ and mvn (or cached jars).
func StartKafka(ctx context.Context) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testbroker: cannot locate kafka/start.sh")
	}
	script := filepath.Join(filepath.Dir(file), "kafka", "start.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("testbroker: %w (run from the source tree, or give --brokers)", err)
	}
	return startKafka(ctx, script, pulsarFreePorts)
}

// KafkaAvailable reports whether Kafka(t) can give a broker (or must:
// ARDEA_REQUIRE_TOOLCHAINS=1), for suites that add a real-broker case
// only where one can run.
func KafkaAvailable() bool {
	if os.Getenv("ARDEA_KAFKA_BROKERS") != "" || os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
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
	_, err := os.Stat(filepath.Join(cacheDir(), "kafka-4.1.1", "libs", ".complete"))
	return err == nil
}
