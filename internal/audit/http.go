package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
)

// appendTimeout bounds one append after the handler has answered.
const appendTimeout = 5 * time.Second

// Middleware records, after next has answered, every state-changing call
// (POST, PUT, PATCH, DELETE: any status) and every refused call of any
// method (Refused), with the status code and, for a refused or failed
// call, the API's error message. Put it outermost, around the security
// layer, so that the calls that layer refuses are recorded too; that
// layer and the handlers tell it the principal, action and target
// (SetPrincipal, SetCall, Param). A failed append is logged on log (nil:
// slog.Default()); the answer has been sent by then.
func Middleware(a Appender, log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		pd := &pending{}
		r = r.WithContext(context.WithValue(r.Context(), pendingKey{}, pd))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		code := sw.status()
		if !stateChanging(r.Method) && !Refused(code) {
			return
		}
		rec := pd.record(r, code, sw.message())
		rec.Time = start
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), appendTimeout)
		defer cancel()
		if err := a.Append(ctx, rec); err != nil {
			log.Error("audit: a record was not appended", "action", rec.Action, "principal", rec.Principal,
				"target", rec.Target, "code", code, "err", err)
		}
	})
}

// Refused reports whether an answer with this status is a refusal the
// audit log keeps even for a read: bad credentials (401), too little scope
// or a cross-site call (403), the wrong method (405), an oversized body
// (413), the wrong content type (415), a foreign Host (421), too many
// requests (429).
func Refused(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusMethodNotAllowed,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusMisdirectedRequest,
		http.StatusTooManyRequests:
		return true
	}
	return false
}

func stateChanging(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func (pd *pending) record(r *http.Request, code int, msg string) Record {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	rec := Record{
		Action: pd.action,
		Target: pd.target,
		Method: r.Method,
		Path:   r.URL.Path,
		Result: Result{OK: code < 400, Code: code},
		Source: r.RemoteAddr,
	}
	if code >= 400 {
		rec.Result.Error = msg
	}
	if p := pd.principal; p != nil {
		rec.Principal, rec.TokenID, rec.Tenant, rec.Scope = p.String(), p.TokenID, p.Tenant, p.Scope
	}
	if rec.Action == "" {
		if stateChanging(r.Method) {
			rec.Action = Action(r.Method + " " + clip(r.URL.Path, maxPathBytes))
		} else {
			rec.Action = ActionRead
		}
	}
	params := map[string]any{}
	query := r.URL.Query()
	if len(query) > maxQueryParams {
		params["query"] = fmt.Sprintf("%d parameters, not recorded (more than %d)", len(query), maxQueryParams)
		query = nil
	}
	for k, vs := range query {
		k = clip(k, maxNameBytes)
		if len(vs) == 1 {
			params[k] = Redact(k, vs[0])
		} else {
			params[k] = Redact(k, vs)
		}
	}
	for k, v := range pd.params {
		params[k] = v
	}
	if len(params) > 0 {
		rec.Params = params
	}
	return rec
}

// maxCapture bounds how much of an error answer is kept to find its
// message.
const maxCapture = 2048

// statusWriter notes the status and the start of an error answer. It
// passes Flush through (the events stream) and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code int
	body []byte
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code >= 400 && len(w.body) < maxCapture {
		w.body = append(w.body, b[:min(len(b), maxCapture-len(w.body))]...)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// message is the error answer's message: the API's {"message": ...}, or
// its text.
func (w *statusWriter) message() string {
	var e struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(w.body, &e) == nil {
		if e.Message != "" {
			return e.Message
		}
		if e.Error != "" {
			return e.Error
		}
	}
	return strings.TrimSpace(string(w.body))
}

// Handler serves GET /api/v1/audit?tenant=T&since=S&limit=N: the records
// q holds, oldest first, as a JSON array. since is an RFC 3339 time or a
// duration back from now ("1h"). Only an admin token may read it (the
// route table says so too; this checks again, failing closed).
func Handler(q Querier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := auth.PrincipalFrom(r.Context())
		if !ok {
			writeError(w, http.StatusUnauthorized, "the audit log needs an admin token")
			return
		}
		if !p.Scope.Allows(auth.ScopeAdmin) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("the audit log needs an admin token (this one has scope %s)", p.Scope))
			return
		}
		f, err := ParseFilter(r.URL.Query().Get("tenant"), r.URL.Query().Get("since"), r.URL.Query().Get("limit"), time.Now())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		recs, err := q.Query(r.Context(), f)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if recs == nil {
			recs = []Record{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(recs)
	})
}

// ParseFilter reads a filter from the query's strings (empty: unset).
// since is an RFC 3339 time or a duration back from now.
func ParseFilter(tenant, since, limit string, now time.Time) (Filter, error) {
	f := Filter{Tenant: tenant}
	if since != "" {
		t, err := ParseSince(since, now)
		if err != nil {
			return Filter{}, err
		}
		f.Since = t
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			return Filter{}, fmt.Errorf("limit %q: want 1..%d", limit, MaxLimit)
		}
		f.Limit = n
	}
	return f, nil
}

// ParseSince reads an RFC 3339 time, or a duration ("90m", "1h") back from
// now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("since %q: want a positive duration or an RFC 3339 time", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("since %q: want a duration (1h) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
	}
	return t, nil
}

// writeError answers in the API's error shape ({"status", "message",
// "error"}, as api.ErrorBody).
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}{code, msg, msg})
}
