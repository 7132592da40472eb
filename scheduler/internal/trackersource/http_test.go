package trackersource_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/trackersource"
	"github.com/ardea-dev/ardea/ui"
)

// TestTrackerAnswers: the tracker's answers over a Source, the status
// code and message of each error as a client reads them (404 for what is
// not there or not running; another daemon's topology is not one of the
// tracker's kinds: 500).
func TestTrackerAnswers(t *testing.T) {
	mux := http.NewServeMux()
	ui.NewTracker(trackersource.New(newWorld().cfg)).Register(mux)
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/api/v1/topologies/wc/info", 200, ""},
		{"/api/v1/topologies/wc/logicalplan", 200, ""},
		{"/api/v1/topologies/wc/packingplan", 200, ""},
		{"/api/v1/topologies/wc/physicalplan", 200, ""},
		{"/api/v1/topologies/wc/containers/2/logs?lines=5", 200, ""},
		{"/api/v1/topologies/nope/info", 404, `no topology named "nope"`},
		{"/api/v1/topologies/done/physicalplan", 404, "topology done is not running (it finished, failed or was killed): it has no live plan or metrics"},
		{"/api/v1/topologies/loading/packingplan", 404, `topology "loading" is not loaded yet`},
		{"/api/v1/topologies/wc/containers/3/logs", 404, "topology wc has containers 1..2, not 3"},
		{"/api/v1/topologies/elsewhere/packingplan", 500, "topology elsewhere is managed by another daemon now (this one lost its manager lock: x)"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.code {
				t.Fatalf("GET %s: %d %s, want %d", tc.path, rec.Code, rec.Body, tc.code)
			}
			if tc.msg == "" {
				return
			}
			var body api.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body != (api.ErrorBody{Status: tc.code, Message: tc.msg, Error: tc.msg}) {
				t.Errorf("GET %s: %+v, want message %q", tc.path, body, tc.msg)
			}
		})
	}
}
