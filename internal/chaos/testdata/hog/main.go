//go:build wasip1

// Command hog is the fault-injection suite's abusive guest (a bolt that
// abuses host resources; internal/chaos, docs/reliability.md). Config
// "hog.mode" picks the abuse, per input tuple:
//
//	state  state_put of a 1 MiB value under a new key: the task's
//	       host-side state grows by 1 MiB a tuple, without end
//	log    16 log lines of 64 KiB each (1 MiB of log a tuple)
//
// The suite builds it when its row runs:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hog.wasm ./internal/chaos/testdata/hog
package main

import (
	"strconv"
	"strings"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type hog struct {
	ardea.BaseBolt
	mode  string
	n     int
	state *ardea.State
	log   *ardea.Logger
	val   []byte
	line  string
}

func (h *hog) Prepare(ctx *ardea.Context) error {
	h.mode = ctx.ConfigOr("hog.mode", "state")
	h.state = ctx.State()
	h.log = ctx.Logger()
	h.val = make([]byte, 1<<20)
	for i := range h.val {
		h.val[i] = byte(i * 7)
	}
	h.line = strings.Repeat("flood ", (64<<10)/6)
	return nil
}

func (h *hog) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	h.n++
	switch h.mode {
	case "state":
		h.val[0], h.val[1] = byte(h.n), byte(h.n>>8)
		h.state.Put("hog-"+strconv.Itoa(h.n), h.val)
	case "log":
		for range 16 {
			h.log.Warn(h.line)
		}
	}
	c.Ack(t)
	return nil
}

func init() { ardea.RegisterBolt(&hog{}) }

func main() {}
