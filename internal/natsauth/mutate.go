package natsauth

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// mutate changes tenant's state with f and applies the result to the
// accounts the server sees. f gets a copy of the current state (nil: the
// tenant has none) and returns the next one (nil: the tenant is
// forgotten). Where the state is kept:
//
//   - alone (Open): in the state file, under m.mu, before the server sees
//     it;
//   - shared (Share): in the cluster's accounts bucket with a
//     compare-and-set on the tenant's key; when another node changed it
//     first, f runs again on what that node wrote. Every node, this one
//     included, applies what the bucket holds (apply), in revision order.
func (m *Manager) mutate(tenant string, f func(*tenantState) (*tenantState, error)) error {
	m.mu.Lock()
	sh := m.shared
	m.mu.Unlock()
	if sh != nil {
		return sh.mutate(m, tenant, f)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := f(m.st.Tenants[tenant].clone())
	if err != nil {
		return err
	}
	if next == nil {
		delete(m.st.Tenants, tenant)
		delete(m.tenants, tenant)
		return m.save()
	}
	kp, err := keyFrom(next.Seed, "tenant "+tenant)
	if err != nil {
		return err
	}
	m.st.Tenants[tenant] = next
	m.tenants[tenant] = kp
	if err := m.save(); err != nil {
		return err
	}
	return m.store(m.tenantClaims(tenant))
}

// apply makes ts (nil: none) tenant's state as of bucket revision rev,
// unless a later revision was applied already. A tenant that goes away
// has every user revoked first, so its connections to this node drop.
func (m *Manager) apply(tenant string, ts *tenantState, rev uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev <= m.revs[tenant] {
		return nil
	}
	m.revs[tenant] = rev
	if ts == nil {
		cur := m.st.Tenants[tenant]
		if cur == nil {
			return nil
		}
		if cur.Revoked[jwt.All] == 0 {
			cur.Revoked = maps.Clone(cur.Revoked)
			if cur.Revoked == nil {
				cur.Revoked = map[string]int64{}
			}
			cur.Revoked[jwt.All] = nowPlusSecond()
			if err := m.store(m.tenantClaims(tenant)); err != nil {
				return err
			}
		}
		delete(m.st.Tenants, tenant)
		delete(m.tenants, tenant)
		return nil
	}
	var kp nkeys.KeyPair
	if cur := m.st.Tenants[tenant]; cur != nil && cur.Seed == ts.Seed {
		kp = m.tenants[tenant]
	} else {
		var err error
		if kp, err = keyFrom(ts.Seed, "tenant "+tenant); err != nil {
			return err
		}
	}
	m.st.Tenants[tenant] = ts
	m.tenants[tenant] = kp
	return m.store(m.tenantClaims(tenant))
}

// clone is a deep copy (nil for nil).
func (ts *tenantState) clone() *tenantState {
	if ts == nil {
		return nil
	}
	c := *ts
	c.Revoked = maps.Clone(ts.Revoked)
	if ts.Hosts != nil {
		c.Hosts = make(map[string][]string, len(ts.Hosts))
		for k, v := range ts.Hosts {
			c.Hosts[k] = append([]string(nil), v...)
		}
	}
	return &c
}

func encodeTenant(ts *tenantState) ([]byte, error) {
	b, err := json.Marshal(ts)
	if err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	return b, nil
}

func decodeTenant(tenant string, b []byte) (*tenantState, error) {
	var ts tenantState
	if err := json.Unmarshal(b, &ts); err != nil {
		return nil, fmt.Errorf("natsauth: tenant %s's account in the shared bucket: %w", tenant, err)
	}
	return &ts, nil
}
