package runtime

// The one definition of a container's id: how the runtimes name a
// topology's containers, and the names of their log and credentials
// files. The topology manager (scheduler/internal/manager) and the daemon build
// and read ids only here. An id is "<topology>/container-<n>" in the
// default tenant and "<tenant>.<topology>/container-<n>" in another ('.'
// is in no name, so an id parses back: Parse).

import (
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
)

// ID names container c of tenant's topology for the runtime (and its log
// and creds files: File).
func ID(tenant, topology string, c int) string {
	return Prefix(tenant, topology) + strconv.Itoa(c)
}

// Prefix is the ID of a topology's containers without the number.
func Prefix(tenant, topology string) string {
	id := topology + "/container-"
	if tenant != names.DefaultTenant {
		id = tenant + "." + id
	}
	return id
}

// File makes an ID (or its prefix) a file name, as the launcher names its
// log files.
func File(id string) string { return launcher.FileName(id) }

// Parse splits an ID.
func Parse(id string) (tenant, topology, container string, ok bool) {
	top, num, ok := strings.Cut(id, Prefix(names.DefaultTenant, ""))
	if !ok {
		return "", "", "", false
	}
	tenant = names.DefaultTenant
	if t, rest, dot := strings.Cut(top, "."); dot {
		tenant, top = t, rest
	}
	return tenant, top, num, true
}

// Number is container's number in a topology whose containers' IDs start
// with prefix (Prefix), and whether id is one of them.
func Number(prefix, id string) (int, bool) {
	s, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return 0, false
	}
	c, err := strconv.Atoi(s)
	return c, err == nil
}
