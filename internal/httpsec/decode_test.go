package httpsec

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// request is the shape of the daemon's request bodies (SubmitRequest,
// UpdateRequest, SwapRequest): strings, bytes as base64, maps, numbers,
// booleans, a nested object.
type request struct {
	Name        string            `json:"name"`
	Spec        string            `json:"spec,omitempty"`
	Modules     map[string][]byte `json:"modules,omitempty"`
	Sources     map[string]string `json:"sources,omitempty"`
	Parallelism map[string]int    `json:"parallelism,omitempty"`
	Deactivated bool              `json:"deactivated,omitempty"`
	Canary      int               `json:"canary,omitempty"`
	Probation   int64             `json:"probation,omitempty"`
	Limits      *struct {
		Rate  float64 `json:"rate"`
		Burst uint32  `json:"burst"`
	} `json:"limits,omitempty"`
}

func decode(body, ctype string, max int64) (request, error) {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/topologies", strings.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	var v request
	err := DecodeJSON(httptest.NewRecorder(), r, max, &v)
	return v, err
}

func TestDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body, ctype string
		max               int64
		status            int
		msg               string
	}{
		{"ok", `{"name":"wc","parallelism":{"count":2},"modules":{"split":"AGFzbQ=="}}`, "application/json", 0, 0, ""},
		{"ok with space after", "{\"name\":\"wc\"}\n\t ", "application/json", 0, 0, ""},
		{"unknown field", `{"name":"wc","paralellism":{"count":2}}`, "application/json", 0, 400, `unknown field "paralellism"`},
		{"unknown nested field", `{"limits":{"rate":1,"bursts":2}}`, "application/json", 0, 400, `unknown field "bursts"`},
		{"wrong type", `{"name":"wc","parallelism":{"count":"two"}}`, "application/json", 0, 400, `field "parallelism": want int, got JSON string`},
		{"overflow", `{"limits":{"burst":99999999999}}`, "application/json", 0, 400, `field "limits.burst"`},
		{"bad base64", `{"modules":{"split":"!!"}}`, "application/json", 0, 400, "base64"},
		{"syntax", `{"name":"wc",}`, "application/json", 0, 400, "invalid JSON at byte"},
		{"ends early", `{"name":"wc"`, "application/json", 0, 400, "ends early"},
		{"empty", ``, "application/json", 0, 400, "empty"},
		{"two values", `{"name":"a"}{"name":"b"}`, "application/json", 0, 400, "more than one JSON value"},
		{"trailing garbage", `{"name":"a"} x`, "application/json", 0, 400, ""},
		{"not an object", `[1,2]`, "application/json", 0, 400, "want httpsec.request"},
		{"too large", `{"name":"` + strings.Repeat("x", 100) + `"}`, "application/json", 64, 413, "at most 64 bytes"},
		{"text/plain", `{"name":"wc"}`, "text/plain", 0, 415, "application/json"},
		{"no type", `{"name":"wc"}`, "", 0, 415, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.body, tc.ctype, tc.max)
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %d", tc.status)
			}
			if StatusOf(err) != tc.status || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%d %q, want %d saying %q", StatusOf(err), err, tc.status, tc.msg)
			}
		})
	}
}

// FuzzDecodeJSON feeds any body to the API's request decoding: it never
// panics, refuses with 400 or 413 and one short printable message,
// never answers 413 for a body within the limit, and what it accepts
// survives a round trip.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"wc","spec":"name: wc\n","modules":{"split":"AGFzbQ=="},"sources":{"split":"x.wasm"},"deactivated":true}`,
		`{"parallelism":{"count":4,"split":2}}`,
		`{"limits":{"rate":1.5,"burst":10}}`,
		`{"name":"wc",}`, `{"x":1}`, `[]`, `null`, `""`, `{"name":"\ud800"}`, `{"modules":{"a":"=="}}`,
		`{"canary":1e400}`, `{"name":"a"}{}`, "{\"name\":\"a\"}\x00", `{"limits":{"burst":-1}}`,
	} {
		f.Add([]byte(s))
	}
	const max = 512
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := decode(string(body), "application/json", max)
		if err != nil {
			st := StatusOf(err)
			if st != http.StatusBadRequest && st != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d for %q: %v", st, body, err)
			}
			if st == http.StatusRequestEntityTooLarge && len(body) <= max {
				t.Fatalf("413 for a %d-byte body under the %d limit", len(body), max)
			}
			msg := err.Error()
			if msg == "" || len(msg) > 400 || !utf8.ValidString(msg) || strings.ContainsAny(msg, "\n\r\x00") {
				t.Fatalf("message %q: want one short printable line", msg)
			}
			return
		}
		if len(body) > max {
			t.Fatalf("accepted a %d-byte body over the %d limit", len(body), max)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", v, err)
		}
		v2, err := decode(string(again), "application/json", 0)
		if err != nil {
			t.Fatalf("its own encoding %s refused: %v", again, err)
		}
		if !reflect.DeepEqual(norm(v), norm(v2)) {
			t.Fatalf("round trip: %+v became %+v", v, v2)
		}
	})
}

// norm makes empty maps and nil maps equal (omitempty drops both).
func norm(v request) request {
	if len(v.Modules) == 0 {
		v.Modules = nil
	}
	for k, b := range v.Modules {
		if len(b) == 0 {
			v.Modules[k] = nil
		}
	}
	if len(v.Sources) == 0 {
		v.Sources = nil
	}
	if len(v.Parallelism) == 0 {
		v.Parallelism = nil
	}
	return v
}
