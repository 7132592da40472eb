package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestFormatLogLine(t *testing.T) {
	names := map[string]string{"3": "count/1", "1": "lines/0"}
	for _, tc := range []struct{ line, want string }{
		{`{"time":"2026-12-04T10:30:00.123456789Z","level":"INFO","msg":"instance started","topology":"wc","container":2,"component":"count","task":3,"index":1}`,
			`2026-12-04 10:30:00.123 INFO  instance started instance=count/1 container=2 index=1`},
		{`{"time":"2026-12-04T10:30:00+01:00","level":"WARN","msg":"guest log","component":"count","task":9,"line":"a b","err":"x=y"}`,
			`2026-12-04 10:30:00.000 WARN  guest log component=count task=9 line="a b" err="x=y"`},
		{`{"time":"soon","level":"ERROR","msg":"","empty":"","nested":{"a":[1,2]},"ok":true,"n":null}`,
			`soon ERROR empty="" nested="{\"a\":[1,2]}" ok=true n=null`},
		{`{"msg":"only"}`, `only`},
		{`{"level":"DEBUG","msg":"m","component":"lines","task":1}`, `DEBUG m instance=lines/0`},
		{`{"level":"INFO","msg":"m","component":"split","task":3}`, `INFO  m component=split task=3`}, // task 3 is count's
		{`{"level":"INFO","msg":"tab\there","k":"line\nbreak"}`, "INFO  tab\there k=\"line\\nbreak\""},
		{`{"level":"IN\nFO","msg":"two\nlines"}`, `"IN\nFO" "two\nlines"`},
		{`goroutine 1 [running]:`, `goroutine 1 [running]:`},
		{`{"msg":"x"} trailing`, `{"msg":"x"} trailing`},
		{`["not","an","object"]`, `["not","an","object"]`},
		{`{"msg":`, `{"msg":`},
		{``, ``},
	} {
		if got := formatLogLine(tc.line, names); got != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
}

// FuzzParseLogLine: the parser never panics; what it refuses is printed
// as it is; what it accepts is a JSON object whose msg it prints.
func FuzzParseLogLine(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-12-04T10:30:00.123Z","level":"INFO","msg":"instance started","component":"count","task":3}`,
		`{"msg":"a","msg":"b"}`, `{}`, `{"a":{"b":{"c":[]}}}`, `not json`, `{"a":1}{"b":2}`, `{"k":"\u0000\ud800"}`,
		"{\"k\":\"\xff\"}", `{"time":"2026-13-45T99:99:99Z"}`, `{"task":"3","component":"count"}`,
	} {
		f.Add(s)
	}
	names := map[string]string{"3": "count/1"}
	f.Fuzz(func(t *testing.T, line string) {
		r, ok := parseLogLine(line)
		out := formatLogLine(line, names)
		if !ok {
			if out != line {
				t.Fatalf("a refused line %q was printed as %q", line, out)
			}
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "{") {
			t.Fatalf("accepted %q, not an object", line)
		}
		if r.msg != "" && !strings.Contains(out, r.msg) && !strings.Contains(out, strconv.Quote(r.msg)) {
			t.Fatalf("%q printed as %q: msg %q missing", line, out, r.msg)
		}
		if strings.Contains(out, "\n") {
			t.Fatalf("%q printed over several lines: %q", line, out)
		}
	})
}
