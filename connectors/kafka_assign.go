package connectors

import (
	"context"
	"encoding/binary"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ardea-dev/ardea/internal/tuple"
)

// Partition assignment of the kafka spout with assign=partitions: which
// partitions a task reads, where each starts, and the state keys that keep
// their positions (kafka_spout.go has the rest of the spout).

// ownedOffsets lists the partitions this task reads (assign=partitions)
// and where each starts: the position in the task's state, else per start.
func (s *kafkaSpout) ownedOffsets(ctx context.Context) (map[string]map[int32]kgo.Offset, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var all []topicPart
	var details kadm.TopicDetails
	var err error
	if s.regex {
		details, err = s.adm.ListTopics(cctx)
	} else {
		details, err = s.adm.ListTopics(cctx, splitList(s.topics)...)
	}
	if err != nil {
		return nil, s.errorf("list topics: %w", err)
	}
	var res []*regexp.Regexp
	if s.regex {
		for _, t := range splitList(s.topics) {
			res = append(res, regexp.MustCompile(t))
		}
	}
	for name, d := range details {
		if d.Err != nil {
			return nil, s.errorf("topic %s: %w", name, d.Err)
		}
		if s.regex && !slices.ContainsFunc(res, func(r *regexp.Regexp) bool { return r.MatchString(name) }) {
			continue
		}
		for p := range d.Partitions {
			if len(s.partitions) == 0 || slices.Contains(s.partitions, p) {
				all = append(all, topicPart{name, p})
			}
		}
	}
	if len(all) == 0 {
		return nil, s.errorf("no partition to read")
	}
	slices.SortFunc(all, func(a, b topicPart) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.part - b.part)
	})
	saved := s.savedPositions()
	s.keys = map[topicPart][]byte{}
	var mine []topicPart
	for j, tp := range all {
		// Partition j's key group sits in the middle of its share of the
		// key-group space: any parallelism gets an even spread, and the
		// position moves with the key group on a rescale.
		kg := (2*j + 1) * s.maxKG / (2 * len(all))
		if tuple.TaskIndexForKeyGroup(kg, s.maxKG, s.par) == s.task {
			mine = append(mine, tp)
			s.keys[tp] = kafkaPositionKey(tp, kg, s.maxKG)
		}
	}
	out := map[string]map[int32]kgo.Offset{}
	var committed kadm.OffsetResponses
	if s.start == "committed" {
		committed, err = s.adm.FetchOffsets(cctx, s.group)
		for kerr.IsRetriable(err) && cctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // a new cluster creating its offsets topic
			committed, err = s.adm.FetchOffsets(cctx, s.group)
		}
		if errors.Is(err, kerr.GroupIDNotFound) {
			err = nil // nothing committed yet
		}
		if err != nil {
			return nil, s.errorf("fetch offsets of group %s: %w", s.group, err)
		}
	}
	var atTime kadm.ListedOffsets
	if s.start == "timestamp" {
		ts, _ := parseKafkaTime(s.startTime)
		if atTime, err = s.adm.ListOffsetsAfterMilli(cctx, ts.UnixMilli(), topicsOf(mine)...); err != nil {
			return nil, s.errorf("offsets at %s: %w", s.startTime, err)
		}
	}
	for _, tp := range mine {
		o := kgo.NewOffset()
		switch pos, ok := saved[tp]; {
		case ok:
			o = o.At(pos)
		case s.start == "committed":
			if c, ok := committed.Lookup(tp.topic, tp.part); ok && c.Err == nil && c.At >= 0 {
				o = o.At(c.At)
			} else if s.reset == "latest" {
				o = o.AtEnd()
			} else {
				o = o.AtStart()
			}
		case s.start == "earliest":
			o = o.AtStart()
		case s.start == "latest":
			o = o.AtEnd()
		case s.start == "offset":
			o = o.At(s.startOffset)
		case s.start == "timestamp":
			l, ok := atTime.Lookup(tp.topic, tp.part)
			if !ok || l.Err != nil {
				return nil, s.errorf("offset at %s of %s/%d not found", s.startTime, tp.topic, tp.part)
			}
			o = o.At(l.Offset)
		}
		if out[tp.topic] == nil {
			out[tp.topic] = map[int32]kgo.Offset{}
		}
		out[tp.topic][tp.part] = o
	}
	s.log("kafka spout partitions", "owned", len(mine), "of", len(all), "restored", len(saved))
	return out, nil
}

func topicsOf(tps []topicPart) []string {
	var out []string
	for _, tp := range tps {
		if !slices.Contains(out, tp.topic) {
			out = append(out, tp.topic)
		}
	}
	return out
}

const kafkaPosPrefix = "ardea.kafka.position."

// kafkaPositionKey is the state key of a partition's position: it names
// the partition and lands in key group kg.
func kafkaPositionKey(tp topicPart, kg, maxKG int) []byte {
	base := kafkaPosPrefix + strconv.Itoa(int(tp.part)) + "." + tp.topic + "#"
	for i := 0; ; i++ {
		k := []byte(base + strconv.Itoa(i))
		if tuple.KeyGroup(tuple.StateKeyHash(k), maxKG) == kg {
			return k
		}
	}
}

// savedPositions reads every partition position in the task's state
// (whatever key group it came with).
func (s *kafkaSpout) savedPositions() map[topicPart]int64 {
	out := map[topicPart]int64{}
	s.state.Scan([]byte(kafkaPosPrefix), func(k, v []byte) bool {
		rest := strings.TrimPrefix(string(k), kafkaPosPrefix)
		dot, hash := strings.IndexByte(rest, '.'), strings.LastIndexByte(rest, '#')
		if dot < 0 || hash < dot || len(v) != 8 {
			return true
		}
		p, err := strconv.ParseInt(rest[:dot], 10, 32)
		if err != nil {
			return true
		}
		out[topicPart{rest[dot+1 : hash], int32(p)}] = int64(binary.LittleEndian.Uint64(v))
		return true
	})
	return out
}
