//go:build unix

package testbroker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testbroker/brokerproc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafka: the real broker takes idempotent and transactional producers
// and a read_committed consumer group sees both.
func TestKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker")
	}
	seeds := kgo.SeedBrokers(strings.Split(Kafka(t), ",")...) // ARDEA_KAFKA_BROKERS may list several
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := fmt.Sprintf("tb-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "i%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := kgo.NewClient(seeds, kgo.TransactionalID("tb-"+topic))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := tx.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "t%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(seeds, kgo.ConsumerGroup("g-"+topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	n := 0
	for n < 200 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 200 records", n)
		}
		n += fs.NumRecords()
	}
}

// TestKafkaPortTaken: a port chosen free and taken by another process
// before the broker binds it ("Address already in use", which failed
// TestKafka on a busy machine) costs a retry on fresh ports, not the test.
// The first pick here is a port this test holds.
func TestKafkaPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker")
	}
	if os.Getenv("ARDEA_KAFKA_BROKERS") != "" {
		t.Skip("ARDEA_KAFKA_BROKERS: no broker is started here")
	}
	script := brokerScript(t, "kafka")
	needJava(t, "Kafka", "ARDEA_KAFKA_BROKERS", filepath.Join(brokerproc.CacheDir(), "kafka-4.1.1", "libs"))
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	picks := 0
	ports := func(n int) ([]int, error) {
		picks++
		p, err := brokerproc.FreePorts(n)
		if picks == 1 && err == nil {
			p[0] = heldPort
		}
		return p, err
	}
	brokers, err := brokerproc.StartKafka(t.Context(), script, ports)
	if err != nil {
		t.Fatalf("StartKafka with port %d taken: %v", heldPort, err)
	}
	// The first pick failed on the held port; a later one may fail too
	// (another process took a fresh port between its pick and the bind,
	// which is why StartKafka picks again), so the broker is on any pick
	// after the first.
	if picks < 2 || brokers == fmt.Sprintf("127.0.0.1:%d", heldPort) {
		t.Fatalf("broker %s after %d port picks; want a pick after the first (the first held port %d)", brokers, picks, heldPort)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if m, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil || len(m.Brokers) == 0 {
		t.Fatalf("broker %s: metadata %v, %v", brokers, m, err)
	}
}
