package host

import (
	"context"
	"reflect"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// TestEmitSpans: a collector that takes parsed values gets every emit that
// way, with the spans the host computed when it checked the tuple, and the
// same tuples as a plain collector.
func TestEmitSpans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := compile(t, newRuntime(t, Config{}), "echo")
	run := func(col plugin.Collector, rec *recorder) []emitted {
		b, err := m.NewBolt(ctx, instanceConfig("echo"))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Prepare(context.Background(), taskContext("echo", map[string]string{"echo.count": "1"}, wordStream, countStream), col); err != nil {
			t.Fatal(err)
		}
		if err := b.Execute(context.Background(), batchOf(11, "a", "bb", "a", "a longer word than sixteen bytes"), col); err != nil {
			t.Fatal(err)
		}
		return rec.take()
	}
	var plain recorder
	var spans spanRecorder
	want := run(&plain, &plain)
	got := run(&spans, &spans.recorder)
	if spans.badSpans != nil {
		t.Fatal(spans.badSpans)
	}
	if len(want) != 8 || spans.viaSpans != len(want) {
		t.Fatalf("%d emits, %d of them through EmitSpans; want 8 and 8", len(want), spans.viaSpans)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("through EmitSpans:\n got %+v\nwant %+v", got, want)
	}
}
