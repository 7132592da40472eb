package daemon

import "context"

// StoredModules counts tenant's stored modules and their bytes (its
// object store), for the tests of what a refused request leaves behind.
func (d *Daemon) StoredModules(ctx context.Context, tenant string) (int, int64, error) {
	sp, err := d.ten.Space(ctx, tenant)
	if err != nil {
		return 0, 0, err
	}
	as, err := sp.Store().ListArtifacts(ctx)
	if err != nil {
		return 0, 0, err
	}
	var n int64
	for _, a := range as {
		n += int64(a.Size)
	}
	return len(as), n, nil
}
