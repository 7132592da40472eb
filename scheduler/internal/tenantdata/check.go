package tenantdata

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
)

// named is a kind of tenant data a built-in names in its config.
type named struct {
	module, key string // builtin:module names one in its config's key
	what, cmd   string // what errors call it; `ardea cmd create` makes one
	valid       func(name string) error
	// exists says whether js has name (false, nil: it does not).
	exists func(ctx context.Context, js jetstream.JetStream, name string) (bool, error)
}

var (
	namedStream = named{module: "stream", key: "stream", what: "stream", cmd: "stream", valid: connectors.ValidStreamName,
		exists: func(ctx context.Context, js jetstream.JetStream, name string) (bool, error) {
			st, _ := names.TenantStream(name)
			_, err := js.Stream(ctx, st)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return false, nil
			}
			return err == nil, err
		}}
	namedBucket = named{module: "kv", key: "bucket", what: "KV bucket", cmd: "kv", valid: connectors.ValidKVName,
		exists: func(ctx context.Context, js jetstream.JetStream, name string) (bool, error) {
			bucket, _, _ := names.TenantKV(name)
			_, err := js.KeyValue(ctx, bucket)
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				return false, nil
			}
			return err == nil, err
		}}
)

// Check refuses a topology whose builtin:stream or builtin:kv components
// name a stream or bucket sp's tenant does not have: its hosts may not
// make one. Without NATS accounts (`ardea run`, in process) the built-ins
// make a missing one themselves.
func (svc *Service) Check(ctx context.Context, sp *tenancy.Space, top *ardea.Topology) error {
	if svc.ten.Accounts() == nil {
		return nil
	}
	if err := checkNamed(ctx, sp, top, namedStream); err != nil {
		return err
	}
	return checkNamed(ctx, sp, top, namedBucket)
}

// checkNamed refuses top if one of its components of n's built-in names
// one sp's tenant does not have.
func checkNamed(ctx context.Context, sp *tenancy.Space, top *ardea.Topology, n named) error {
	var js jetstream.JetStream
	for _, c := range top.Components {
		name := c.Config[n.key]
		if c.Module != ardea.BuiltinPrefix+n.module || n.valid(name) != nil {
			continue // not one, or its config's error is reported by validation
		}
		if js == nil {
			var err error
			if js, err = jetstream.New(sp.Conn()); err != nil {
				return err
			}
		}
		cctx, cancel := context.WithTimeout(ctx, OpTimeout)
		ok, err := n.exists(cctx, js, name)
		cancel()
		if err != nil {
			return fmt.Errorf("component %s: %s %s: %w", c.Name, n.what, name, err)
		}
		if !ok {
			return api.Errorf(api.ErrBadRequest, "component %s: tenant %s has no %s %s: create it first (ardea %s create %s)", c.Name, sp.Tenant(), n.what, name, n.cmd, name)
		}
	}
	return nil
}
