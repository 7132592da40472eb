package process

import (
	"bytes"
	"maps"
	"testing"
)

func TestGroupRoundTrip(t *testing.T) {
	for _, m := range []map[string][]byte{
		{},
		{"": nil},
		{"a": []byte("1"), "b\x1fc": bytes.Repeat([]byte{0xff}, 300), "東京": {0, 0, 0, 0, 0, 0, 0, 7}},
	} {
		got, err := decodeGroup(encodeGroup(m))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(got, m, bytes.Equal) {
			t.Errorf("round trip of %q gave %q", m, got)
		}
	}
}

func FuzzDecodeGroup(f *testing.F) {
	f.Add(encodeGroup(map[string][]byte{"k": []byte("v")}))
	f.Add([]byte{1, 0, 0, 0, 255, 255, 255, 255})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeGroup(b)
		if err != nil {
			return
		}
		again, err := decodeGroup(encodeGroup(m))
		if err != nil || !maps.EqualFunc(again, m, bytes.Equal) {
			t.Fatalf("decoded %q does not round-trip: %v", m, err)
		}
	})
}
