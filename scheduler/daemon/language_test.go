package daemon

import (
	"os"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

func TestProducersLanguage(t *testing.T) {
	testutil.RacedToo(t)
	goMod, err := os.ReadFile("../../examples/wordcount/go/split.wasm")
	if err != nil {
		t.Fatal(err)
	}
	// A producers section as rustc writes it: language Rust, processed-by rustc.
	rust := append([]byte("\x00asm\x01\x00\x00\x00"), custom("producers",
		"\x02\x08language\x01\x04Rust\x00\x0cprocessed-by\x01\x05rustc\x061.63.0")...)
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"go module", goMod, "go"},
		{"rust producers", rust, "rust"},
		{"no producers section", []byte("\x00asm\x01\x00\x00\x00"), "wasm"},
		{"not wasm", []byte("hello world"), "wasm"},
		{"truncated section", append([]byte("\x00asm\x01\x00\x00\x00"), 0, 0x7f, 1), "wasm"},
		{"truncated producers", append([]byte("\x00asm\x01\x00\x00\x00"), custom("producers", "\x01\x08language\x05")...), "wasm"},
	} {
		if got := producersLanguage(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func custom(name, body string) []byte {
	payload := append([]byte{byte(len(name))}, name...)
	payload = append(payload, body...)
	return append([]byte{0, byte(len(payload))}, payload...)
}

func FuzzProducersLanguage(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add(append([]byte("\x00asm\x01\x00\x00\x00"), custom("producers", "\x01\x08language\x01\x02Go\x00")...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = producersLanguage(b) // must not panic
	})
}
