// Package conformance is the suite every native plugin passes, one entry
// point per kind. It is Ardea's public API, with connectors/plugin: code
// outside this module imports it the way the built-ins use it (Benthos'
// public/service/integration plays this part there):
//
//	func TestMySpout(t *testing.T) {
//		env := plugin.NewEmptyEnvironment()
//		if err := env.RegisterSpout(spec, newMySpout); err != nil {
//			t.Fatal(err)
//		}
//		conformance.TestSpout(t, env, "mine", conformance.SpoutFixture{Name: "minimal", Config: cfg, Finite: true})
//	}
//
// TestSpout and TestBolt drive a component through its whole life (close
// before open, open, activate, next with varying budgets, ack, fail,
// deactivate, close twice) and check what it emits against the streams
// its spec declares; TestDeadLetter makes a spout give records up,
// lists them, replays them and sees the spout read them again;
// TestMetricsSink writes batches to a sink and lets the fixture check its
// receiver. Every suite checks the spec's own promises too: a config
// missing a required field is refused naming the field.
//
// Recorder, MemState and NewTaskContext are the pieces the suites drive
// components with, for a plugin's own tests.
//
// The package's own tests run each suite against a tiny correct plugin of
// its kind, and against variants with one flaw each (a spout that ignores
// its count or emits after Done, a bolt that loses records or acks twice,
// a dead-letter destination that loses a letter or replays nowhere, a
// metrics sink that ignores its config or blocks past its context, ...),
// each in a process of its own, to see the suite fail saying what is
// wrong.
package conformance
