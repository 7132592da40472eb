package httpapi_test

import (
	"context"
	"sync"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/httpapi"
)

// call is one call the fake backend received: the operation, the name it
// acted on and its other arguments.
type call struct {
	Op   string
	Name string
	Arg  any
}

// fake is every backend (Topologies, Streams, Buckets) in one: it
// records its calls and answers each with canned values and err (nil:
// success).
type fake struct {
	mu    sync.Mutex
	calls []call
	err   error
}

var (
	_ httpapi.Topologies = (*fake)(nil)
	_ httpapi.Streams    = (*fake)(nil)
	_ httpapi.Buckets    = (*fake)(nil)
)

// backends is f as each of the handlers' backends.
func (f *fake) backends() httpapi.Backends {
	return httpapi.Backends{Topologies: f, Streams: f, Buckets: f}
}

func (f *fake) rec(op, name string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{op, name, arg})
	return f.err
}

// last is the last call received (zero if none).
func (f *fake) last() call {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return call{}
	}
	return f.calls[len(f.calls)-1]
}

func running(name string) api.Status { return api.Status{Name: name, State: api.StateRunning} }

func (f *fake) Summaries(context.Context) ([]api.Summary, error) {
	return []api.Summary{{Name: "wc", State: api.StateRunning}}, f.rec("Summaries", "", nil)
}
func (f *fake) Submit(_ context.Context, req api.SubmitRequest) error {
	return f.rec("Submit", req.Name, req)
}
func (f *fake) ManagerStatus(_ context.Context, name string) (api.Status, error) {
	return running(name), f.rec("ManagerStatus", name, nil)
}
func (f *fake) Status(_ context.Context, name string) (api.Status, error) {
	return running(name), f.rec("Status", name, nil)
}
func (f *fake) SetActive(_ context.Context, name string, active bool) (api.Status, error) {
	return running(name), f.rec("SetActive", name, active)
}
func (f *fake) Kill(_ context.Context, name string, keep bool) error {
	return f.rec("Kill", name, keep)
}
func (f *fake) Restart(_ context.Context, name string, c int) (api.Status, error) {
	return running(name), f.rec("Restart", name, c)
}
func (f *fake) Update(_ context.Context, name string, req api.UpdateRequest) (api.Status, error) {
	return running(name), f.rec("Update", name, req)
}
func (f *fake) Logs(_ context.Context, name string, q httpapi.LogQuery) ([]string, error) {
	return []string{"a line"}, f.rec("Logs", name, q)
}
func (f *fake) Swap(_ context.Context, name string, req api.SwapRequest) (api.SwapResult, error) {
	return api.SwapResult{Component: req.Component, Version: "v2"}, f.rec("Swap", name, req)
}
func (f *fake) RollbackModule(_ context.Context, name, component, by string) (api.SwapResult, error) {
	return api.SwapResult{Component: component}, f.rec("RollbackModule", name, [2]string{component, by})
}
func (f *fake) ModuleHistory(_ context.Context, name string) ([]api.ModuleVersion, error) {
	return []api.ModuleVersion{{Component: "count", Version: "v1"}}, f.rec("ModuleHistory", name, nil)
}
func (f *fake) Apply(_ context.Context, name string, req api.ApplyRequest) (api.ApplyResult, error) {
	return api.ApplyResult{How: "live"}, f.rec("Apply", name, req)
}
func (f *fake) DeadLetters(_ context.Context, name, component string, replay bool) (api.DeadLetterResult, error) {
	return api.DeadLetterResult{Replayed: replay, DeadLetters: []api.DeadLetter{}}, f.rec("DeadLetters", name, [2]any{component, replay})
}

func (f *fake) ListStreams(context.Context) ([]api.StreamInfo, error) {
	return []api.StreamInfo{}, f.rec("ListStreams", "", nil)
}
func (f *fake) CreateStream(_ context.Context, req api.CreateStreamRequest) (api.StreamInfo, error) {
	return api.StreamInfo{Name: req.Name}, f.rec("CreateStream", req.Name, req)
}
func (f *fake) StreamInfo(_ context.Context, name string) (api.StreamInfo, error) {
	return api.StreamInfo{Name: name}, f.rec("StreamInfo", name, nil)
}
func (f *fake) DeleteStream(_ context.Context, name string) error {
	return f.rec("DeleteStream", name, nil)
}
func (f *fake) Publish(_ context.Context, name string, msgs []string) (api.PublishResult, error) {
	return api.PublishResult{Published: len(msgs)}, f.rec("Publish", name, msgs)
}
func (f *fake) ReadStream(_ context.Context, name string, from uint64, limit int) (api.StreamRead, error) {
	return api.StreamRead{Stream: name, Messages: []api.StreamMessage{}}, f.rec("ReadStream", name, [2]any{from, limit})
}

func (f *fake) ListKV(context.Context) ([]api.KVInfo, error) {
	return []api.KVInfo{}, f.rec("ListKV", "", nil)
}
func (f *fake) CreateKV(_ context.Context, req api.CreateKVRequest) (api.KVInfo, error) {
	return api.KVInfo{Name: req.Name}, f.rec("CreateKV", req.Name, req)
}
func (f *fake) KVInfo(_ context.Context, name string) (api.KVInfo, error) {
	return api.KVInfo{Name: name}, f.rec("KVInfo", name, nil)
}
func (f *fake) DeleteKV(_ context.Context, name string) error {
	return f.rec("DeleteKV", name, nil)
}
func (f *fake) KVKeys(_ context.Context, name, filter string, limit int) (api.KVKeys, error) {
	return api.KVKeys{Bucket: name, Keys: []string{}}, f.rec("KVKeys", name, [2]any{filter, limit})
}
func (f *fake) GetKV(_ context.Context, name, key string) (api.KVEntry, error) {
	return api.KVEntry{Bucket: name, Key: key, Value: "v"}, f.rec("GetKV", name, key)
}
func (f *fake) PutKV(_ context.Context, name, key, value string) (api.KVEntry, error) {
	return api.KVEntry{Bucket: name, Key: key, Revision: 1}, f.rec("PutKV", name, [2]string{key, value})
}
func (f *fake) DeleteKVKey(_ context.Context, name, key string, purge bool) error {
	return f.rec("DeleteKVKey", name, [2]any{key, purge})
}
