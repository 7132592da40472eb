package ardea_test

import (
	"strings"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

// split emits each word of its input's line field, anchored on the input.
type split struct{ ardea.BaseBolt }

func (split) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	for _, w := range strings.Fields(t.StringByName("line")) {
		c.EmitAnchored(t, w)
	}
	return nil
}

// A module registers its one component from an init function, declaring
// what it reads and emits (its manifest), and has an empty main; built
// with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared (`ardea build`), it is
// a topology's bolt:
//
//	func init() {
//		ardea.RegisterBolt(split{}, ardea.Reads("line"), ardea.Emits("default", "word"))
//	}
//	func main() {}
//
// The example is compiled but not run (it has no Output line): a process
// registers exactly one component, and this test binary's tests register
// their own. Package ardeatest runs a bolt natively, for unit tests (see
// its Example).
func ExampleRegisterBolt() {
	ardea.RegisterBolt(split{}, ardea.Reads("line"), ardea.Emits("default", "word"))
}
