// Package conformance is the suite every native plugin passes, one entry
// point per kind, importable by code outside this module the way the
// built-ins use it (Benthos' public/service/integration plays this part
// there):
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
package conformance
