//go:build unix

package testbroker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
