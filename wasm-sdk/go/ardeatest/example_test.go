package ardeatest_test

import (
	"fmt"
	"strings"
	"testing"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
	"github.com/ardea-dev/ardea/wasm-sdk/go/ardeatest"
)

// upper emits each input line upper-cased, anchored on it.
type upper struct{ ardea.BaseBolt }

func (upper) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	c.EmitAnchored(t, strings.ToUpper(t.StringByName("line")))
	return nil
}

func Example() {
	t := &testing.T{} // in a test: the test's *testing.T
	h := ardeatest.NewBolt(t, upper{}, ardeatest.Task{}, ardea.Reads("line"), ardea.Emits("default", "line"))
	if err := h.ExecuteFields(map[string]any{"line": "hello world"}); err != nil {
		fmt.Println(err)
	}
	for _, e := range h.Emits("default") {
		fmt.Println(e.Values[0], "anchored on", e.Anchors)
	}
	fmt.Println("acked", h.Acked())
	fmt.Println(h.Manifest())
	// Output:
	// HELLO WORLD anchored on [1]
	// acked [1]
	// {"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["line"]}],"inputs":["line"]}
}
