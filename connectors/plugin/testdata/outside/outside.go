// Package outside registers a spout and a bolt the way code outside
// Ardea's module does: through connectors/plugin only.
package outside

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// Specs of the two plugins.
var (
	CountSpec = plugin.Spec{
		Name:    "outside-count",
		Summary: "Emits the numbers 1 to count as strings (finite).",
		Fields: []plugin.Field{
			{Name: "count", Type: plugin.TypeInt, Default: "10", Min: "0", Doc: "how many numbers"},
		},
		Outputs: map[string][]string{"default": {"n"}},
	}
	UpperSpec = plugin.Spec{
		Name:    "outside-upper",
		Summary: "Emits the first field of every input tuple in upper case.",
		Fields: []plugin.Field{
			{Name: "prefix", Type: plugin.TypeString, Doc: "prepended to every output"},
		},
		Outputs: map[string][]string{"default": {"upper"}},
	}
)

// Register adds both plugins to env.
func Register(env *plugin.Environment) error {
	if err := env.RegisterSpout(CountSpec, newCount); err != nil {
		return err
	}
	return env.RegisterBolt(UpperSpec, newUpper)
}

type count struct {
	n, next int64
	comp    string
	stream  uint16
	vals    []byte
	pending map[uint64]bool // at least once: emitted, no outcome yet
}

func newCount(cfg plugin.Config) (plugin.Spout, error) {
	n, err := cfg.Int("count")
	if err != nil {
		return nil, err
	}
	return &count{n: n}, nil
}

func (c *count) Open(_ context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	c.comp = tc.Component
	if len(tc.Outputs) != 1 || len(tc.Outputs[0].Fields) != 1 {
		return fmt.Errorf("component %q: outside-count emits one field on one stream, the topology declares %v", tc.Component, tc.Outputs)
	}
	if tc.Acking {
		c.pending = map[uint64]bool{}
	}
	return nil
}

func (c *count) Next(_ context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	if c.next >= c.n {
		if len(c.pending) > 0 {
			return plugin.Idle, nil
		}
		return plugin.Done, nil
	}
	for i := 0; i < max && c.next < c.n; i++ {
		c.next++
		var id uint64
		if c.pending != nil {
			id = uint64(c.next)
			c.pending[id] = true
		}
		c.vals = plugin.AppendValues(c.vals[:0], plugin.Str(fmt.Sprint(c.next)))
		if err := out.Emit(c.stream, plugin.NoTask, id, nil, c.vals); err != nil {
			return plugin.Emitted, err
		}
	}
	return plugin.Emitted, nil
}

func (c *count) Ack(_ context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		delete(c.pending, id)
	}
	return nil
}

func (c *count) Fail(ctx context.Context, ids []uint64, out plugin.Collector) error {
	return c.Ack(ctx, ids, out) // a test source: a failure is not replayed
}

func (c *count) Activate(context.Context) error   { return nil }
func (c *count) Deactivate(context.Context) error { return nil }
func (c *count) Close(context.Context) error      { return nil }

type upper struct {
	prefix string
	comp   string
	vals   []plugin.Value
	buf    []byte
	acking bool
}

func newUpper(cfg plugin.Config) (plugin.Bolt, error) {
	p, err := cfg.String("prefix")
	if err != nil {
		return nil, err
	}
	return &upper{prefix: p}, nil
}

func (u *upper) Prepare(_ context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	u.comp, u.acking = tc.Component, tc.Acking
	return nil
}

func (u *upper) Execute(_ context.Context, batch []byte, out plugin.Collector) error {
	r, err := plugin.NewBatchReader(batch)
	if err != nil {
		return fmt.Errorf("component %q: %w", u.comp, err)
	}
	for {
		rec, ok, err := r.Next()
		if err != nil {
			return fmt.Errorf("component %q: %w", u.comp, err)
		}
		if !ok {
			return nil
		}
		u.vals, _, err = plugin.DecodeValues(u.vals[:0], rec.Values)
		if err != nil || len(u.vals) == 0 {
			if u.acking && rec.TupleID != 0 {
				if err := out.Fail(rec.TupleID); err != nil {
					return err
				}
			}
			continue
		}
		u.buf = plugin.AppendValues(u.buf[:0], plugin.Str(u.prefix+strings.ToUpper(u.vals[0].AsString())))
		var anchors []byte // the input tuple's id, u64 LE: the output joins its tree
		if rec.TupleID != 0 {
			anchors = binary.LittleEndian.AppendUint64(nil, rec.TupleID)
		}
		if err := out.Emit(0, plugin.NoTask, 0, anchors, u.buf); err != nil {
			return err
		}
		if u.acking && rec.TupleID != 0 {
			if err := out.Ack(rec.TupleID); err != nil {
				return err
			}
		}
	}
}

func (u *upper) Tick(context.Context, plugin.Collector) error   { return nil }
func (u *upper) Finish(context.Context, plugin.Collector) error { return nil }
func (u *upper) Close(context.Context) error                    { return nil }
