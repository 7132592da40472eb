//go:build unix

package testbroker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestPulsar starts a real Pulsar standalone (or uses ARDEA_PULSAR_URL),
// produces 50 messages, consumes them on a Shared subscription with acks,
// and checks that a negatively acknowledged message is redelivered.
func TestPulsar(t *testing.T) {
	testutil.StartsProcesses(t, "a Pulsar broker (a JVM)")
	url := Pulsar(t)

	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               url,
		OperationTimeout:  30 * time.Second,
		ConnectionTimeout: 10 * time.Second,
		Logger:            pulsarlog.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("persistent://public/default/ardea-testbroker-%d", time.Now().UnixNano())

	// Subscribe first, so every message produced below is in the backlog.
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:               topic,
		SubscriptionName:    "ardea-shared",
		Type:                pulsar.Shared,
		NackRedeliveryDelay: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	const n = 50
	for i := range n {
		if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "msg-%d", i)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}

	seen := make(map[string]int)
	for len(seen) < n {
		msg, err := consumer.Receive(ctx)
		if err != nil {
			t.Fatalf("receive after %d of %d distinct messages: %v", len(seen), n, err)
		}
		seen[string(msg.Payload())]++
		if err := consumer.Ack(msg); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	for i := range n {
		if c := seen[fmt.Sprintf("msg-%d", i)]; c != 1 {
			t.Errorf("msg-%d received %d times, want 1", i, c)
		}
	}

	// Nack: the same message comes back, with its redelivery count raised.
	if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("nack-me")}); err != nil {
		t.Fatal(err)
	}
	first, err := consumer.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Payload()) != "nack-me" {
		t.Fatalf("got %q, want nack-me", first.Payload())
	}
	consumer.Nack(first)
	again, err := consumer.Receive(ctx)
	if err != nil {
		t.Fatalf("no redelivery after Nack: %v", err)
	}
	if string(again.Payload()) != "nack-me" || again.ID().String() != first.ID().String() {
		t.Fatalf("after Nack got %q (%v), want nack-me (%v) again", again.Payload(), again.ID(), first.ID())
	}
	if again.RedeliveryCount() < 1 {
		t.Errorf("redelivered message has RedeliveryCount %d, want >= 1", again.RedeliveryCount())
	}
	if err := consumer.Ack(again); err != nil {
		t.Fatal(err)
	}
}
