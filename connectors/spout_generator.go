package connectors

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The generator spout emits sentences picked pseudo-randomly from a built-in
// corpus, one string field "line" per tuple. The sequence is deterministic:
// it depends only on the seed and the task index.
//
// Pacing: with rate > 0 a task emits about rate tuples per second using a
// token bucket (capacity: half a second of tuples, at least one). Next never
// sleeps; it returns plugin.Idle when the task is ahead of schedule.
// With count > 0 a task stops after count tuples (plugin.Done).
//
// The corpus is encoded once; Next emits the pre-encoded values blocks and
// allocates nothing.

func init() {
	register(plugin.RegisterSpout(plugin.Spec{
		Name: "generator",
		Summary: "Emits English sentences from a built-in corpus (`line`), optionally paced and bounded. " +
			"Sentence k of a task is a hash of (seed + task, k): replayable, its position (k) is in the task state.",
		Fields: []plugin.Field{
			{Name: "rate", Type: plugin.TypeFloat, Default: "0", Min: "0", Doc: "tuples per second per task; 0 = as fast as possible"},
			{Name: "count", Type: plugin.TypeInt, Default: "0", Min: "0", Doc: "tuples per task before the spout is done; 0 = endless"},
			{Name: "seed", Type: plugin.TypeInt, Default: "1", Doc: "random seed; task i uses seed + i"},
		},
		Outputs: map[string][]string{"default": {"line"}},
	}, newGenerator))
}

// corpus is the generator's text: varied sentences, some with punctuation,
// digits and non-ASCII letters, so word-splitting bolts see realistic input.
var corpus = []string{
	"the quick brown fox jumps over the lazy dog",
	"a stream is an unbounded sequence of tuples",
	"four score and seven years ago our fathers brought forth on this continent a new nation",
	"to be or not to be that is the question",
	"all happy families are alike; each unhappy family is unhappy in its own way",
	"it was the best of times it was the worst of times",
	"call me Ishmael",
	"the heron stands still in the shallow water waiting for a fish",
	"spouts emit tuples and bolts process them",
	"in the beginning was the word",
	"the rain in Spain stays mainly in the plain",
	"she sells sea shells by the sea shore",
	"how much wood would a woodchuck chuck if a woodchuck could chuck wood",
	"the early bird catches the worm but the second mouse gets the cheese",
	"never put off until tomorrow what you can do today",
	"a journey of a thousand miles begins with a single step",
	"water flows downhill and data flows downstream",
	"the cat sat on the mat and looked at the hat",
	"every good boy deserves fudge",
	"twinkle twinkle little star how I wonder what you are",
	"the café on the corner serves crème brûlée on Sundays",
	"über alles the naïve coöperative façade collapsed",
	"three hundred and sixty five days make a year",
	"the committee met at 9:30 and adjourned at 11:45",
	"version 2.0 fixed 17 bugs and introduced 3 new ones",
	"an apple a day keeps the doctor away",
	"the wind howled through the empty streets of the old town",
	"we shall fight on the beaches we shall fight on the landing grounds",
	"the only thing we have to fear is fear itself",
	"ask not what your country can do for you",
	"I think therefore I am",
	"knowledge is power and power corrupts",
	"the river bends around the hill and disappears into the forest",
	"seven swans a swimming six geese a laying",
	"the mountains are calling and I must go",
	"time flies like an arrow; fruit flies like a banana",
	"colorless green ideas sleep furiously",
	"the lighthouse keeper counted the ships as they passed",
	"a watched pot never boils",
	"the library closes at noon on Saturdays",
	"she opened the window and the morning light poured in",
	"the old man and the sea",
	"the train to Zürich departs from platform 7",
	"bright stars burn out fast; slow fires keep the house warm",
	"the answer to the ultimate question is 42",
	"winter is coming said the man in black",
	"please mind the gap between the train and the platform",
	"the orchestra tuned their instruments before the concert",
	"data without context is just noise",
	"\"hello, world!\" printed the first program",
	"the heron flew low over the marsh at dusk",
	"every tuple counts when you are counting words",
}

// corpusValues holds each corpus sentence as an encoded values block.
var corpusValues = func() [][]byte {
	out := make([][]byte, len(corpus))
	for i, s := range corpus {
		out[i] = appendStringValues(nil, []byte(s))
	}
	return out
}()

type generator struct {
	rate  float64
	count int64
	seed  int64

	now     func() time.Time // injectable clock for tests
	stream  uint16
	base    uint64 // seed + task index: sentence k is pick(base, k)
	emitted int64  // sentences emitted the first time; the next has seq emitted+1
	tokens  float64
	burst   float64
	last    time.Time

	// The position (emitted) lives in the task's state, so a restore from
	// a checkpoint rewinds the generator exactly (effectively once).
	state  plugin.State
	posKey []byte
	posBuf [8]byte // kept here: a stack array passed to Put would escape
	// At least once: sentences by seq awaiting their outcome, and failed
	// ones to emit again (replays take at most half of a Next's budget
	// while new sentences remain).
	acking  bool
	pending map[uint64]bool
	replay  []uint64
}

func newGenerator(cfg plugin.Config) (plugin.Spout, error) {
	r := cfg.Reader()
	g := &generator{rate: r.Float("rate"), count: r.Int("count"), seed: r.Int("seed"), now: time.Now}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *generator) Open(ctx context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	stream, err := outputStream(tc, "generator spout", "default", 1)
	if err != nil {
		return err
	}
	g.stream = stream
	task, par := taskOf(tc)
	g.base = uint64(g.seed + task)
	if tc.State != nil {
		g.state = tc.State
		g.posKey = positionKey("ardea.generator.position.", tc.MaxKeyGroups, int(task), int(par))
		if v, ok := g.state.Get(g.posKey); ok && len(v) == 8 {
			g.emitted = int64(binary.LittleEndian.Uint64(v))
		}
	}
	if tc.Acking {
		g.acking, g.pending = true, map[uint64]bool{}
	}
	if g.rate > 0 {
		g.burst = max(1, g.rate/2)
		g.tokens = 1
		g.last = g.now()
	}
	return nil
}

// pick is sentence seq of a task: a splitmix64 hash of (base, seq), so any
// sentence can be generated again from its sequence number alone.
func pick(base, seq uint64) []byte { return corpusValues[sentenceIndex(base, seq)] }

func sentenceIndex(base, seq uint64) uint64 {
	z := base*0x9E3779B97F4A7C15 + seq*0xBF58476D1CE4E5B9
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return z % uint64(len(corpusValues))
}

// GeneratorSentence is the sentence the generator spout's task emits as
// its seq-th (from 1), with seed its seed setting: what a benchmark of
// another engine generates to count the same words (internal/bench/peers).
func GeneratorSentence(seed, task int64, seq uint64) string {
	return corpus[sentenceIndex(uint64(seed+task), seq)]
}

// IdleFor (plugin.IdleWaiter): a paced generator without a token sleeps
// until its next one, rather than waking every few milliseconds.
func (g *generator) IdleFor() time.Duration {
	if g.rate <= 0 || g.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - g.tokens) / g.rate * float64(time.Second))
}

func (g *generator) Next(ctx context.Context, budget int, out plugin.Collector) (plugin.Status, error) {
	more := g.count == 0 || g.emitted < g.count
	if !more && len(g.replay) == 0 {
		if len(g.pending) > 0 {
			return plugin.Idle, nil // waiting for outcomes to replay
		}
		return plugin.Done, nil
	}
	n := int64(budget)
	if g.rate > 0 {
		now := g.now()
		if el := now.Sub(g.last); el > 0 {
			g.tokens = min(g.burst, g.tokens+el.Seconds()*g.rate)
		}
		g.last = now
		if g.tokens < 1 {
			return plugin.Idle, nil
		}
		n = min(n, int64(g.tokens))
	}
	var sent int64
	if len(g.replay) > 0 {
		r := min(int64(len(g.replay)), n)
		if more {
			r = min(r, max(1, n/2))
		}
		for _, seq := range g.replay[:r] {
			if err := out.Emit(g.stream, tuple.NoTask, seq, nil, pick(g.base, seq)); err != nil {
				return plugin.Emitted, err
			}
		}
		g.replay = g.replay[r:]
		sent = r
	}
	if more {
		k := n - sent
		if g.count > 0 {
			k = min(k, g.count-g.emitted)
		}
		var i int64
		for ; i < k; i++ {
			seq := uint64(g.emitted + i + 1)
			var msgID uint64
			if g.acking {
				msgID = seq
				g.pending[seq] = true
			}
			if err := out.Emit(g.stream, tuple.NoTask, msgID, nil, pick(g.base, seq)); err != nil {
				g.emitted += i + 1
				g.savePosition()
				return plugin.Emitted, err
			}
		}
		g.emitted += k
		sent += k
		g.savePosition()
	}
	if g.rate > 0 {
		g.tokens -= float64(sent)
	}
	return plugin.Emitted, nil
}

func (g *generator) savePosition() {
	if g.state == nil {
		return
	}
	binary.LittleEndian.PutUint64(g.posBuf[:], uint64(g.emitted))
	g.state.Put(g.posKey, g.posBuf[:])
}

func (g *generator) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		delete(g.pending, id)
	}
	return nil
}

func (g *generator) Fail(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		if g.pending[id] {
			g.replay = append(g.replay, id)
		}
	}
	return nil
}

func (g *generator) Activate(ctx context.Context) error   { return nil }
func (g *generator) Deactivate(ctx context.Context) error { return nil }
func (g *generator) Close(ctx context.Context) error      { return nil }
