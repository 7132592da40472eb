package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to a daemon's API.
type Client struct {
	Base string // e.g. http://127.0.0.1:7780
	HTTP *http.Client
	// Token, if set, is sent on every request as
	// "Authorization: Bearer <Token>" (internal/auth).
	Token string
}

// NewClient makes a client for server ("host:port" or a URL).
func NewClient(server string) *Client {
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	return &Client{Base: strings.TrimRight(server, "/"), HTTP: &http.Client{Timeout: 10 * time.Minute}}
}

// ErrUnreachable is returned when no daemon answers.
var ErrUnreachable = errors.New("no ardea daemon answers")

// maxRateRetries bounds how often a call refused by the tenant's API
// rate limit (429, nothing done) is sent again after its Retry-After.
const maxRateRetries = 20

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		status, data, retryAfter, err := c.send(ctx, method, path, body != nil, b)
		if err != nil {
			return err
		}
		if status == http.StatusTooManyRequests && attempt < maxRateRetries {
			// The tenant's API rate limit refused the call before anything
			// ran: it is sent again after the wait the daemon named, as
			// Kubernetes' clients do.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(retryAfter):
			}
			continue
		}
		if status >= 300 {
			var ae ErrorBody
			if json.Unmarshal(data, &ae) == nil && ae.Message != "" {
				return &APIError{Status: status, Message: ae.Message}
			}
			return &APIError{Status: status, Message: strings.TrimSpace(string(data))}
		}
		if out != nil {
			return json.Unmarshal(data, out)
		}
		return nil
	}
}

// send makes one request and reads its answer; retryAfter is the
// answer's Retry-After (1 s when missing or unreadable, at most 10 s).
func (c *Client) send(ctx context.Context, method, path string, hasBody bool, b []byte) (status int, data []byte, retryAfter time.Duration, err error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if hasBody || method != http.MethodGet && method != http.MethodHead {
		// The API takes state-changing calls as JSON only, bodiless ones too
		// (a form or text/plain POST is what a foreign page can send).
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ctx.Err() == nil {
			return 0, nil, 0, fmt.Errorf("%w at %s (start one with `ardea local`, or point --server / ARDEA_SERVER at it): %v", ErrUnreachable, c.Base, ue.Err)
		}
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	if data, err = io.ReadAll(resp.Body); err != nil {
		return 0, nil, 0, err
	}
	retryAfter = time.Second
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
		retryAfter = min(time.Duration(n)*time.Second, 10*time.Second)
	}
	return resp.StatusCode, data, retryAfter, nil
}

// Do sends one API request: body (if not nil) as JSON, the answer decoded
// into out (if not nil); an error answer is an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	return c.do(ctx, method, path, body, out)
}

// APIError is an error the daemon returned.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return e.Message }

// NotFound reports whether err is the daemon's 404.
func NotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

func (c *Client) List(ctx context.Context) ([]Summary, error) {
	var out []Summary
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies", nil, &out)
}

func (c *Client) Submit(ctx context.Context, req SubmitRequest) (Status, error) {
	var out Status
	return out, c.do(ctx, http.MethodPost, "/api/v1/topologies", req, &out)
}

func (c *Client) Status(ctx context.Context, name string) (Status, error) {
	var out Status
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies/"+url.PathEscape(name), nil, &out)
}

// Action runs activate, deactivate, kill, restart or update.
func (c *Client) Action(ctx context.Context, name, action string, query url.Values, body any) (Status, error) {
	var out Status
	p := "/api/v1/topologies/" + url.PathEscape(name) + "/" + action
	if len(query) > 0 {
		p += "?" + query.Encode()
	}
	return out, c.do(ctx, http.MethodPost, p, body, &out)
}

// Logs returns log lines of a topology, optionally of one instance
// ("count/2") or component ("count").
func (c *Client) Logs(ctx context.Context, name, instance string, lines int) ([]string, error) {
	q := url.Values{}
	if instance != "" {
		q.Set("instance", instance)
	}
	if lines > 0 {
		q.Set("lines", fmt.Sprint(lines))
	}
	var out []string
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies/"+url.PathEscape(name)+"/logs?"+q.Encode(), nil, &out)
}

// Swap replaces a component's module in a running topology.
func (c *Client) Swap(ctx context.Context, name string, req SwapRequest) (SwapResult, error) {
	var out SwapResult
	return out, c.do(ctx, http.MethodPost, "/api/v1/topologies/"+url.PathEscape(name)+"/swap", req, &out)
}

// Rollback swaps a component back to its previous version.
func (c *Client) Rollback(ctx context.Context, name, component, by string) (SwapResult, error) {
	var out SwapResult
	q := url.Values{"component": {component}, "by": {by}}
	return out, c.do(ctx, http.MethodPost, "/api/v1/topologies/"+url.PathEscape(name)+"/rollback?"+q.Encode(), nil, &out)
}

// History lists every module version of every component of a topology.
func (c *Client) History(ctx context.Context, name string) ([]ModuleVersion, error) {
	var out []ModuleVersion
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies/"+url.PathEscape(name)+"/history", nil, &out)
}

// Apply changes a running topology into the one in req (or, with DryRun,
// only says how).
func (c *Client) Apply(ctx context.Context, name string, req ApplyRequest) (ApplyResult, error) {
	var out ApplyResult
	return out, c.do(ctx, http.MethodPost, "/api/v1/topologies/"+url.PathEscape(name)+"/apply", req, &out)
}

// DeadLetters lists the dead letters of a topology's spouts and wasm
// bolts (component "" means all), or with replay sends the spouts' back
// to their sources.
func (c *Client) DeadLetters(ctx context.Context, name, component string, replay bool) (DeadLetterResult, error) {
	var out DeadLetterResult
	path, method := "/api/v1/topologies/"+url.PathEscape(name)+"/dlq", http.MethodGet
	if replay {
		path, method = path+"/replay", http.MethodPost
	}
	if component != "" {
		path += "?component=" + url.QueryEscape(component)
	}
	return out, c.do(ctx, method, path, nil, &out)
}

// LogicalPlan is the tracker's logical plan.
func (c *Client) LogicalPlan(ctx context.Context, name string) (LogicalPlan, error) {
	var out LogicalPlan
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies/"+url.PathEscape(name)+"/logicalplan", nil, &out)
}

// Metrics is the tracker's /metrics for one component: names empty asks
// for all; interval in seconds.
func (c *Client) Metrics(ctx context.Context, name, component string, names []string, interval int64) (MetricsAnswer, error) {
	q := url.Values{"component": {component}, "metricname": names}
	if interval > 0 {
		q.Set("interval", fmt.Sprint(interval))
	}
	var out MetricsAnswer
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies/"+url.PathEscape(name)+"/metrics?"+q.Encode(), nil, &out)
}

// ExceptionSummary is the tracker's exceptions folded over instances.
func (c *Client) ExceptionSummary(ctx context.Context, name, component string) ([]Exception, error) {
	q := url.Values{}
	if component != "" {
		q.Set("component", component)
	}
	var out []Exception
	return out, c.do(ctx, http.MethodGet, "/api/v1/topologies/"+url.PathEscape(name)+"/exceptionsummary?"+q.Encode(), nil, &out)
}

// ContainerLogs is a container's last lines.
func (c *Client) ContainerLogs(ctx context.Context, name string, container, lines int) ([]string, error) {
	var out struct {
		Lines []string `json:"lines"`
	}
	p := fmt.Sprintf("/api/v1/topologies/%s/containers/%d/logs?lines=%d", url.PathEscape(name), container, lines)
	return out.Lines, c.do(ctx, http.MethodGet, p, nil, &out)
}
