//go:build unix

package brokerproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaStartTimeout bounds a Kafka broker's start from cached jars.
const KafkaStartTimeout = 3 * time.Minute

// Kafka starts a real broker outside a test (ardea bench kafka): the
// broker testbroker.Kafka starts, gone when this process exits. It needs
// the source tree (kafka/start.sh), java 17+ and mvn (or cached jars).
func Kafka(ctx context.Context) (string, error) {
	script, err := Script("kafka")
	if err != nil {
		return "", fmt.Errorf("%w (run from the source tree, or give --brokers)", err)
	}
	return StartKafka(ctx, script, FreePorts)
}

// StartKafka fetches the jars for script (kafka/start.sh) and starts a
// broker, waiting under ctx; the broker process itself outlives ctx (the
// tests after share it) and goes when this process exits. The ports are
// chosen with freePorts and bound by the broker a moment later; when
// another process took one meanwhile (the broker exits with "Address
// already in use") it starts again on fresh ports, up to StartTries times.
func StartKafka(ctx context.Context, script string, freePorts func(n int) ([]int, error)) (string, error) {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	fetch := exec.CommandContext(fctx, "bash", script)
	fetch.Env = append(os.Environ(), "ARDEA_KAFKA_FETCH_ONLY=1")
	if out, err := fetch.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetching the Kafka jars with Maven (%s): %w\n%s", script, err, Tail(out, 60))
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
		if !retry || try == StartTries {
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
	deadline := time.After(KafkaStartTimeout)
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
			log := LogTail(logPath)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the script's pid watcher
			os.RemoveAll(dir)
			return "", PortTaken.MatchString(log),
				fmt.Errorf("kafka broker on ports %d and %d exited before it was ready (%w); log:\n%s", port, cport, werr, log)
		case <-deadline:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return "", false, fmt.Errorf("kafka broker not ready after %v; log %s:\n%s", KafkaStartTimeout, logPath, LogTail(logPath))
		}
	}
}
