package deployment

import (
	"strings"
	"testing"
)

// FuzzParse: whatever the file, Parse neither panics nor counts more
// nodes than its bound; a file it takes has every section, and every
// error it returns names the file.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		all,
		"",
		"metrics: {interval: 5s, graphite: {address: a:1}}\n",
		"quotas:\n  default: &d {cpu: 1}\n  tenants: {acme: {<<: *d, instances: 2}}\n",
		"security:\n  tenant_allow: {acme: {paths: [/srv/acme], addresses: [\"*.acme:9092\"]}}\n",
		"metric: {}\n",
		"a: &a [*a]\n",
		"security: &a {hosts: [*a]}\n",
		"quotas: {<<: [*x]}\n",
		"metrics: {<<: {file: {path: /x}}}\n",
		"--- {}\n--- {}\n",
		"metrics: [\n",
		mergeBomb(3),
		aliasBomb(2),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxNodes = 5000
		file, nodes, err := parse("f.yaml", data, maxNodes, 1<<20)
		if nodes > maxNodes+1 {
			t.Fatalf("counted %d nodes, bound %d", nodes, maxNodes)
		}
		if err != nil {
			if file != nil {
				t.Fatalf("a file and an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "f.yaml: ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if file == nil || file.Metrics == nil || file.Quotas == nil {
			t.Fatalf("no error and no file, or a section missing: %+v", file)
		}
	})
}
