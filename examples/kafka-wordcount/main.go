// Command kafka-wordcount runs the Kafka word count end to end: it starts
// an in-process Kafka (franz-go's kfake) unless --brokers names one, writes
// examples/wordcount/input.txt to topic "lines", runs topology.yaml
// (Kafka -> split -> count -> Kafka) and stops once topic "counts" holds
// every word's final count, which it checks against a plain Go count.
//
//	go run ./examples/kafka-wordcount [--brokers host:port] [--reliability effectively_once]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

func main() {
	brokers := flag.String("brokers", "", "Kafka seed brokers (default: an in-process kfake cluster)")
	reliability := flag.String("reliability", "at_least_once", "at_most_once, at_least_once or effectively_once")
	verbose := flag.Bool("v", false, "log the run")
	flag.Parse()
	if err := run(*brokers, *reliability, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-wordcount:", err)
		os.Exit(1)
	}
}

func here() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// run runs the example; sets override the topology's settings (a test's
// modules).
func run(brokers, reliability string, verbose bool, sets ...string) error {
	if brokers == "" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return err
		}
		defer c.Close()
		brokers = strings.Join(c.ListenAddrs(), ",")
		fmt.Println("kfake Kafka at", brokers)
	}
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, "lines", "counts"); err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	input, err := readLines(filepath.Join(here(), "..", "wordcount", "input.txt"))
	if err != nil {
		return err
	}
	var recs []*kgo.Record
	for _, l := range input {
		recs = append(recs, &kgo.Record{Topic: "lines", Value: []byte(l)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce the input: %w", err)
	}
	fmt.Printf("wrote %d lines to topic lines\n", len(input))

	t, err := ardea.LoadFile(filepath.Join(here(), "topology.yaml"))
	if err != nil {
		return err
	}
	sets = append([]string{"lines.brokers=" + brokers, "out.brokers=" + brokers, "topology.reliability=" + reliability}, sets...)
	if err := t.SetAll(sets); err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	want := wordcount.Reference(input)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := daemon.Run(runCtx, daemon.RunOptions{Topology: t, Logger: log})
		done <- err
	}()
	got, ended, err := awaitCounts(runCtx, brokers, want, done)
	stop()
	if !ended {
		if rerr := <-done; err == nil && rerr != nil && !errors.Is(rerr, context.Canceled) {
			err = rerr
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("topic counts holds every word's count (%d words) after %v (%s):\n", len(got), time.Since(start).Round(time.Millisecond), reliability)
	words := make([]string, 0, len(got))
	for w := range got {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		return got[words[i]] > got[words[j]] || got[words[i]] == got[words[j]] && words[i] < words[j]
	})
	for _, w := range words[:min(10, len(words))] {
		fmt.Printf("  %-12s %d\n", w, got[w])
	}
	return nil
}

// awaitCounts reads topic counts (read_committed) until every word's
// largest count equals want's, the run ends (ended), or a minute passes.
func awaitCounts(ctx context.Context, brokers string, want map[string]int64, done <-chan error) (got map[string]int64, ended bool, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics("counts"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, false, err
	}
	defer cl.Close()
	got = map[string]int64{}
	deadline := time.Now().Add(time.Minute)
	for !equal(got, want) {
		if time.Now().After(deadline) {
			return got, false, fmt.Errorf("after a minute topic counts holds %d of %d words' final counts", matching(got, want), len(want))
		}
		select {
		case err := <-done:
			return got, true, fmt.Errorf("the topology stopped: %v", err)
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err == nil {
				got[string(r.Key)] = max(got[string(r.Key)], n)
			}
		})
	}
	return got, false, nil
}

func equal(a, b map[string]int64) bool { return len(a) == len(b) && matching(a, b) == len(b) }

func matching(got, want map[string]int64) int {
	n := 0
	for w, c := range want {
		if got[w] == c {
			n++
		}
	}
	return n
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}
