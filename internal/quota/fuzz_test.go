package quota

import (
	"encoding/json"
	"testing"
)

// FuzzOverrides: the admin API's body and the deployment file's section
// never panic the decoders, and overrides that decode write back to
// overrides that decode to the same.
func FuzzOverrides(f *testing.F) {
	for _, s := range []string{`{"cpu": 0.5, "instances": 8}`, `{"bytes_per_second": "16MiB", "topologies": "unlimited"}`,
		`{}`, `[1]`, `{"cpu": null}`, `{"jetstream_disk": "1.5 GiB", "cpu": "500m"}`, deployment, "quotas:\n  tenants:\n    a: {cpu: 1}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseFile("fuzz", []byte(s))
		var o Overrides
		if json.Unmarshal([]byte(s), &o) != nil {
			return
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("%q decoded to %+v, which does not encode: %v", s, o, err)
		}
		var back Overrides
		if err := json.Unmarshal(b, &back); err != nil || back != o {
			t.Fatalf("%q: %+v wrote %s, read back %+v (%v)", s, o, b, back, err)
		}
	})
}
