package ctl_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// TestTupleRollbackOnTheWire: a host's rollback request for a failing
// tuple and the plan's tuples to dead-letter survive the JSON that
// `ardea local`'s hosts and topology manager exchange (in process they
// are passed as they are).
func TestTupleRollbackOnTheWire(t *testing.T) {
	hb := ctl.Heartbeat{Container: 2, State: api.HostStopped, TupleRollback: &ctl.TupleRollback{
		Generation: 7, Component: "upper", Task: 3, Hash: "86be865b16825039", Error: "component upper task 3: tuple [\"poison\"] failed"}}
	b, err := json.Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	var got ctl.Heartbeat
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.TupleRollback, hb.TupleRollback) {
		t.Fatalf("tuple rollback %+v, want %+v (%s)", got.TupleRollback, hb.TupleRollback, b)
	}
	doc := ctl.PlanDoc{Plan: &plan.Plan{Tasks: make([]plan.Task, 2)}, Generation: 8, Restore: 5, DeadLetterTuples: []string{"86be865b16825039"}}
	pb, err := ctl.EncodePlan(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ctl.DecodePlan(pb)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.DeadLetterTuples, doc.DeadLetterTuples) {
		t.Fatalf("dead-letter tuples %v, want %v (%s)", back.DeadLetterTuples, doc.DeadLetterTuples, pb)
	}
}
