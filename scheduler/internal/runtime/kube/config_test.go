package kube_test

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/scheduler/internal/runtime/kube"
)

// TestParseSection: the deployment file's scheduler: and kubernetes:,
// each bad value refused naming its field.
func TestParseSection(t *testing.T) {
	parse := func(doc string) (*kube.Config, error) {
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
			t.Fatal(err)
		}
		var sched, k *yaml.Node
		if len(root.Content) > 0 {
			m := root.Content[0]
			for i := 0; i+1 < len(m.Content); i += 2 {
				switch m.Content[i].Value {
				case "scheduler":
					sched = m.Content[i+1]
				case "kubernetes":
					k = m.Content[i+1]
				}
			}
		}
		return kube.ParseSection("deploy.yaml", sched, k)
	}
	for _, doc := range []string{"", "scheduler: processes"} {
		if c, err := parse(doc); c != nil || err != nil {
			t.Errorf("%q: %+v, %v; want processes", doc, c, err)
		}
	}
	c, err := parse(`scheduler: kubernetes
kubernetes:
  namespace: streams
  image: ardea-dev/ardea:0.1
  image_pull_policy: IfNotPresent
  nats_url: nats://ardea.streams.svc.cluster.local:4222
  service_account: hosts
  resources: {cpu: 250m, memory: 1Gi}
  node_selector: {pool: streams}
`)
	if err != nil || c.Namespace != "streams" || c.Image != "ardea-dev/ardea:0.1" || c.NATSURL != "nats://ardea.streams.svc.cluster.local:4222" ||
		c.Resources.Memory != "1Gi" || c.NodeSelector["pool"] != "streams" {
		t.Fatalf("%+v, %v", c, err)
	}
	for doc, want := range map[string]string{
		"scheduler: yarn":                                              `line 1: scheduler: want processes or kubernetes, got "yarn"`,
		"scheduler: [kubernetes]":                                      "scheduler: want processes or kubernetes, got a list",
		"kubernetes: {image: x}":                                       "kubernetes: set, but the scheduler is processes",
		"scheduler: kubernetes":                                        "needs a kubernetes: section",
		"scheduler: kubernetes\nkubernetes: {image: x}":                "kubernetes.nats_url: required",
		"scheduler: kubernetes\nkubernetes: {nats_url: nats://n:4222}": "kubernetes.image: required",
		"scheduler: kubernetes\nkubernetes: {image: x, nats_url: nats://n:4222, namespace: Bad_NS}":            `kubernetes.namespace "Bad_NS"`,
		"scheduler: kubernetes\nkubernetes: {image: x, nats_url: http://n:4222}":                               `kubernetes.nats_url "http://n:4222"`,
		"scheduler: kubernetes\nkubernetes: {image: x, nats_url: nats://n:4222, image_pull_policy: Sometimes}": `kubernetes.image_pull_policy "Sometimes"`,
		"scheduler: kubernetes\nkubernetes: {image: x, nats_url: nats://n:4222, resources: {cpu: lots}}":       `kubernetes.resources.cpu "lots"`,
		"scheduler: kubernetes\nkubernetes: {image: x, nats_url: nats://n:4222, resources: {memory: -1Gi}}":    `kubernetes.resources.memory "-1Gi"`,
		"scheduler: kubernetes\nkubernetes: {image: x, nats_url: nats://n:4222, replicas: 3}":                  "field replicas not found",
	} {
		_, err := parse(doc)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "deploy.yaml: ") {
			t.Errorf("%q: %v, want an error with %q", doc, err, want)
		}
	}
}

// TestName: a StatefulSet's name is a DNS label of at most 52
// characters, one per tenant and topology.
func TestName(t *testing.T) {
	long := strings.Repeat("Topology_", 14)
	seen := map[string]bool{}
	for _, tt := range [][2]string{{"default", "wc"}, {"default", "WC"}, {"acme", long}, {"acme", long + "x"}, {"-a-", "_b_"}} {
		n := kube.Name(tt[0], tt[1])
		if len(n) > 52 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasPrefix(n, "-") {
			t.Errorf("Name(%q, %q) = %q", tt[0], tt[1], n)
		}
		if seen[n] {
			t.Errorf("Name(%q, %q) = %q twice", tt[0], tt[1], n)
		}
		seen[n] = true
	}
}
