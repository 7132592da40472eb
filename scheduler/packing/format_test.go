package packing

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (go test -update rewrites it)\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func formatCases(t *testing.T) map[string]*Plan {
	t.Helper()
	wc := []componentSpec{
		{Name: "lines", Parallelism: 1},
		{Name: "split", Parallelism: 2, Config: map[string]string{keyCPU: "0.5", keyRAM: "256MiB"}},
		{Name: "count", Parallelism: 2, Config: map[string]string{keyRAM: "2GiB"}},
		{Name: "out", Parallelism: 1},
	}
	cases := map[string]map[string]string{
		"wordcount_rr":   {KeyContainers: "2"},
		"wordcount_ffd":  {keyAlgorithm: "first_fit_decreasing", keyMaxRAM: "4GiB"},
		"wordcount_rcrr": {keyAlgorithm: "resource_compliant_round_robin", keyMaxCPU: "3", keyPaddingPercent: "0", keyPaddingCPU: "0.5", keyPaddingRAM: "128MiB", keyPaddingDisk: "0"},
	}
	out := map[string]*Plan{}
	for name, cfg := range cases {
		req, err := requestFromConfig("wordcount", cfg, wc)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Pack(req)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

func TestFormatGolden(t *testing.T) {
	for name, p := range formatCases(t) {
		for _, f := range formats {
			t.Run(name+"."+f, func(t *testing.T) {
				var b bytes.Buffer
				if err := Format(&b, p, f); err != nil {
					t.Fatal(err)
				}
				golden(t, name+"."+f+".golden", b.Bytes())
				if f == "json" {
					// The JSON is the Plan: it reads back into an equal plan,
					// which Repack accepts (the state manager may store it).
					var back Plan
					if err := json.Unmarshal(b.Bytes(), &back); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(&back, p) {
						t.Fatalf("json round trip differs:\n%+v\n%+v", back, *p)
					}
				}
			})
		}
	}
}

func TestFormatUnknown(t *testing.T) {
	p := formatCases(t)["wordcount_rr"]
	if err := Format(&bytes.Buffer{}, p, "yaml"); err == nil || err.Error() != `unknown format "yaml" (want table or json)` {
		t.Fatalf("Format(yaml) = %v", err)
	}
}
