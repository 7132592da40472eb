package tenantdata

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
)

// OpTimeout bounds each JetStream call on a tenant's stream or bucket.
const OpTimeout = 10 * time.Second

// maxReadBytes bounds one read's data (a stream's messages, a bucket's
// keys).
const maxReadBytes = 4 << 20

// The JetStream server's errors for a stream over its account's limits
// (nats.go names neither).
const (
	jsErrInsufficientResources jetstream.ErrorCode = 10023
	jsErrStorageExceeded       jetstream.ErrorCode = 10047
)

// OverQuota returns the JetStream server's error if err is its refusal of
// a stream, bucket or message over the account's limits (its quota
// jetstream_disk), nil if err is another or nil.
func OverQuota(err error) *jetstream.APIError {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrStorageExceeded || apiErr.ErrorCode == jsErrInsufficientResources) {
		return apiErr
	}
	return nil
}

// Service is the tenants' streams and KV buckets, each call acting in the
// tenant of its context's principal.
type Service struct {
	ten      *tenancy.Tenants
	replicas int
}

// New returns the service over ten's spaces; each stream or bucket it
// makes keeps replicas copies (1 for a daemon alone).
func New(ten *tenancy.Tenants, replicas int) *Service {
	return &Service{ten: ten, replicas: replicas}
}

// tenantJS is JetStream in the account of the tenant ctx acts for.
func (svc *Service) tenantJS(ctx context.Context) (jetstream.JetStream, *tenancy.Space, error) {
	sp, err := svc.ten.SpaceOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(sp.Conn())
	if err != nil {
		return nil, nil, err
	}
	return js, sp, nil
}
