package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
)

// Tenant KV buckets: a tenant's own JetStream key-value buckets, for its
// topologies' input and output (builtin:kv, connectors/tenantkv.go). As
// tenant streams (streams.go) they live in the tenant's NATS account,
// made by the daemon's connection for the tenant (space.nc), so a request
// acts on its principal's tenant's buckets only (another tenant's bucket
// of the name is not found, as a missing one); each bucket's size is
// bounded when it is made and the account's jetstream_disk limit bounds
// them all. A topology's hosts reach the buckets it names and no other
// (natsauth.HostPermissions).

// api.MaxKVHistory, what clients are told, is JetStream's limit (package
// api links no NATS): this fails to compile if they differ.
var _ = [1]struct{}{}[api.MaxKVHistory-jetstream.KeyValueMaxHistory]

// topologyKV are the tenant KV buckets top's builtin:kv components name:
// its hosts' credential reaches those.
func topologyKV(top *ardea.Topology) []string {
	var out []string
	for _, c := range top.Components {
		if c.Module == ardea.BuiltinPrefix+"kv" && c.Config["bucket"] != "" && !slices.Contains(out, c.Config["bucket"]) {
			out = append(out, c.Config["bucket"])
		}
	}
	return out
}

// checkKV refuses a topology whose builtin:kv components name a bucket
// its tenant does not have: its hosts may not make one (checkStreams'
// counterpart). Without NATS accounts (`ardea run`, in process) the
// built-in makes a missing bucket itself.
func (d *Daemon) checkKV(ctx context.Context, sp *tenancy.Space, top *ardea.Topology) error {
	if d.ten.Accounts() == nil {
		return nil
	}
	var js jetstream.JetStream
	for _, c := range top.Components {
		name := c.Config["bucket"]
		if c.Module != ardea.BuiltinPrefix+"kv" || connectors.ValidKVName(name) != nil {
			continue // not one, or its config's error is reported by validation
		}
		if js == nil {
			var err error
			if js, err = jetstream.New(sp.Conn()); err != nil {
				return err
			}
		}
		bucket, _, _ := names.TenantKV(name)
		cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
		_, err := js.KeyValue(cctx, bucket)
		cancel()
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return newErr(ErrBadRequest, "component %s: tenant %s has no KV bucket %s: create it first (ardea kv create %s)", c.Name, sp.Tenant(), name, name)
		}
		if err != nil {
			return fmt.Errorf("component %s: KV bucket %s: %w", c.Name, name, err)
		}
	}
	return nil
}

// tenantKV binds to the caller's tenant KV bucket name.
func (d *Daemon) tenantKV(ctx context.Context, name string) (jetstream.KeyValue, error) {
	if err := connectors.ValidKVName(name); err != nil {
		return nil, newErr(ErrBadRequest, "%v", err)
	}
	js, sp, err := d.tenantJS(ctx)
	if err != nil {
		return nil, err
	}
	bucket, _, _ := names.TenantKV(name)
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	kv, err := js.KeyValue(cctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, newErr(ErrNotFound, "tenant %s has no KV bucket %s (ardea kv ls)", sp.Tenant(), name)
	}
	if err != nil {
		return nil, fmt.Errorf("KV bucket %s: %w", name, err)
	}
	return kv, nil
}

func kvInfo(name string, in *jetstream.StreamInfo) api.KVInfo {
	return api.KVInfo{Name: name, Values: in.State.Msgs, Bytes: in.State.Bytes, MaxBytes: in.Config.MaxBytes,
		History: in.Config.MaxMsgsPerSubject, Created: in.Created}
}

// bucketInfo is kv's info now.
func bucketInfo(ctx context.Context, name string, kv jetstream.KeyValue) (api.KVInfo, error) {
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	st, err := kv.Status(cctx)
	if err != nil {
		return api.KVInfo{}, fmt.Errorf("KV bucket %s: %w", name, err)
	}
	s, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return api.KVInfo{Name: name, Values: st.Values(), Bytes: st.Bytes(), History: st.History()}, nil
	}
	return kvInfo(name, s.StreamInfo()), nil
}

// KVInfo is the caller's tenant KV bucket name's info.
func (d *Daemon) KVInfo(ctx context.Context, name string) (api.KVInfo, error) {
	kv, err := d.tenantKV(ctx, name)
	if err != nil {
		return api.KVInfo{}, err
	}
	return bucketInfo(ctx, name, kv)
}

// CreateKV makes the caller's tenant KV bucket req.Name, bounded by the
// tenant's JetStream disk quota.
func (d *Daemon) CreateKV(ctx context.Context, req api.CreateKVRequest) (api.KVInfo, error) {
	if err := connectors.ValidKVName(req.Name); err != nil {
		return api.KVInfo{}, newErr(ErrBadRequest, "%v", err)
	}
	if req.MaxBytes < 0 {
		return api.KVInfo{}, newErr(ErrBadRequest, "KV bucket %s: max_bytes %d: want a positive size (0: the default)", req.Name, req.MaxBytes)
	}
	if req.History < 0 || req.History > api.MaxKVHistory {
		return api.KVInfo{}, newErr(ErrBadRequest, "KV bucket %s: history %d: want 1 to %d revisions per key (0: 1)", req.Name, req.History, api.MaxKVHistory)
	}
	js, sp, err := d.tenantJS(ctx)
	if err != nil {
		return api.KVInfo{}, err
	}
	size := req.MaxBytes
	if size == 0 {
		size = connectors.TenantKVDefaultMaxBytes
	}
	if disk := d.ten.JetStreamLimits(ctx, sp.Tenant()).DiskBytes; disk > 0 {
		if req.MaxBytes > disk {
			return api.KVInfo{}, newErr(ErrForbidden, "KV bucket %s: max_bytes %d is over tenant %s's quota jetstream_disk (%d bytes)", req.Name, req.MaxBytes, sp.Tenant(), disk)
		}
		size = min(size, disk)
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	// CreateKeyValue answers an existing bucket of the same configuration
	// as a success: ask first.
	bucket, _, _ := names.TenantKV(req.Name)
	if _, err := js.KeyValue(cctx, bucket); err == nil {
		return api.KVInfo{}, newErr(ErrExists, "tenant %s already has a KV bucket %s", sp.Tenant(), req.Name)
	}
	cfg := connectors.TenantKVConfig(req.Name, req.History, size)
	cfg.Replicas = d.node.Replicas()
	kv, err := js.CreateKeyValue(cctx, cfg)
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrBucketExists), errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
		return api.KVInfo{}, newErr(ErrExists, "tenant %s already has a KV bucket %s", sp.Tenant(), req.Name)
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrStorageExceeded || apiErr.ErrorCode == jsErrInsufficientResources):
		return api.KVInfo{}, newErr(ErrForbidden, "KV bucket %s (%d bytes): over tenant %s's quota jetstream_disk: %s", req.Name, size, sp.Tenant(), apiErr.Description)
	case err != nil:
		return api.KVInfo{}, fmt.Errorf("KV bucket %s: %w", req.Name, err)
	}
	return bucketInfo(ctx, req.Name, kv)
}

// ListKV lists the caller's tenant KV buckets.
func (d *Daemon) ListKV(ctx context.Context) ([]api.KVInfo, error) {
	js, _, err := d.tenantJS(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	out := []api.KVInfo{}
	l := js.ListStreams(cctx)
	for in := range l.Info() {
		if name, ok := strings.CutPrefix(in.Config.Name, "KV_"+names.TenantKVPrefix); ok {
			out = append(out, kvInfo(name, in))
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("KV buckets: %w", err)
	}
	slices.SortFunc(out, func(a, b api.KVInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteKV removes the caller's tenant KV bucket name and its keys.
func (d *Daemon) DeleteKV(ctx context.Context, name string) error {
	if _, err := d.tenantKV(ctx, name); err != nil {
		return err
	}
	js, _, err := d.tenantJS(ctx)
	if err != nil {
		return err
	}
	bucket, _, _ := names.TenantKV(name)
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	if err := js.DeleteKeyValue(cctx, bucket); err != nil {
		return fmt.Errorf("KV bucket %s: %w", name, err)
	}
	return nil
}

// kvKey checks key for bucket name.
func kvKey(name, key string) error {
	if err := connectors.ValidKVKey(key); err != nil {
		return newErr(ErrBadRequest, "KV bucket %s: %v", name, err)
	}
	return nil
}

// PutKV puts value under key in the caller's tenant KV bucket name.
func (d *Daemon) PutKV(ctx context.Context, name, key, value string) (api.KVEntry, error) {
	if err := kvKey(name, key); err != nil {
		return api.KVEntry{}, err
	}
	kv, err := d.tenantKV(ctx, name)
	if err != nil {
		return api.KVEntry{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	rev, err := kv.PutString(cctx, key, value)
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrStorageExceeded || apiErr.ErrorCode == jsErrInsufficientResources):
		return api.KVEntry{}, newErr(ErrForbidden, "KV bucket %s: key %s: %s (the bucket's max_bytes or the quota jetstream_disk)", name, key, apiErr.Description)
	case err != nil:
		return api.KVEntry{}, fmt.Errorf("KV bucket %s: key %s: %w", name, key, err)
	}
	return api.KVEntry{Bucket: name, Key: key, Revision: rev}, nil
}

// GetKV returns key's value in the caller's tenant KV bucket name.
func (d *Daemon) GetKV(ctx context.Context, name, key string) (api.KVEntry, error) {
	if err := kvKey(name, key); err != nil {
		return api.KVEntry{}, err
	}
	kv, err := d.tenantKV(ctx, name)
	if err != nil {
		return api.KVEntry{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	e, err := kv.Get(cctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return api.KVEntry{}, newErr(ErrNotFound, "KV bucket %s has no key %s", name, key)
	}
	if err != nil {
		return api.KVEntry{}, fmt.Errorf("KV bucket %s: key %s: %w", name, key, err)
	}
	return api.KVEntry{Bucket: name, Key: key, Value: string(e.Value()), Revision: e.Revision(), Created: e.Created()}, nil
}

// DeleteKVKey deletes key from the caller's tenant KV bucket name: a
// delete marker (its history kept), or with purge its history too.
func (d *Daemon) DeleteKVKey(ctx context.Context, name, key string, purge bool) error {
	if err := kvKey(name, key); err != nil {
		return err
	}
	kv, err := d.tenantKV(ctx, name)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	if purge {
		err = kv.Purge(cctx, key)
	} else {
		err = kv.Delete(cctx, key)
	}
	if err != nil {
		return fmt.Errorf("KV bucket %s: key %s: %w", name, key, err)
	}
	return nil
}

// KVKeys lists the keys of the caller's tenant KV bucket name that match
// filter ("" or ">": all), sorted, at most limit (and 4 MiB of keys).
func (d *Daemon) KVKeys(ctx context.Context, name, filter string, limit int) (api.KVKeys, error) {
	if limit <= 0 || limit > api.MaxKVKeys {
		return api.KVKeys{}, newErr(ErrBadRequest, "limit %d: want 1 to %d keys", limit, api.MaxKVKeys)
	}
	if filter == "" {
		filter = ">"
	}
	if err := connectors.ValidKVKeyFilter(filter); err != nil {
		return api.KVKeys{}, newErr(ErrBadRequest, "KV bucket %s: %v", name, err)
	}
	kv, err := d.tenantKV(ctx, name)
	if err != nil {
		return api.KVKeys{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, streamOpTimeout)
	defer cancel()
	l, err := kv.ListKeysFiltered(cctx, filter)
	if err != nil {
		return api.KVKeys{}, fmt.Errorf("KV bucket %s: keys: %w", name, err)
	}
	out := api.KVKeys{Bucket: name, Keys: []string{}}
	seen := map[string]bool{}
	size := 0
	for k := range l.Keys() {
		if seen[k] {
			continue
		}
		if len(out.Keys) == limit || size+len(k) > maxStreamReadBytes {
			out.Truncated = true
			break
		}
		seen[k] = true
		out.Keys = append(out.Keys, k)
		size += len(k)
	}
	// Stop the lister's watch and let its goroutine end: it may be
	// blocked handing over a key the loop above no longer takes.
	l.Stop()
	err = cctx.Err()
	cancel()
	for range l.Keys() {
	}
	if err != nil {
		return out, fmt.Errorf("KV bucket %s: keys: %w", name, err)
	}
	slices.Sort(out.Keys)
	return out, nil
}
