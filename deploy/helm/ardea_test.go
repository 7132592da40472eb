// Package helm_test renders the Helm chart under deploy/helm/ardea with
// Helm's Go module (no helm binary), compares the output with golden
// files and checks what a cluster of `ardea server` nodes depends on.
package helm_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ardea-dev/ardea/internal/deployment"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

const (
	chartDir  = "ardea"
	release   = "ardea"
	namespace = "streams"
)

// generatedPlaceholder stands for the Secret's random value in the golden
// files (randAlphaNum differs on every render).
const generatedPlaceholder = "GENERATED-RANDOM-SECRET"

// rendered is one render of the chart: its manifests in the order of
// their file names, and the objects decoded from them.
type rendered struct {
	text    []byte
	docs    []doc
	secrets []*corev1.Secret
}

type doc struct {
	source string
	kind   string
	name   string
	raw    []byte
}

// render renders the chart as `helm install ardea deploy/helm/ardea -n
// streams` with vals over values.yaml would.
func render(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := chartcommon.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	slices.Sort(names)

	var r rendered
	var buf bytes.Buffer
	for _, n := range names {
		body := strings.TrimSpace(out[n])
		if body == "" {
			continue
		}
		if strings.HasSuffix(n, "NOTES.txt") {
			fmt.Fprintf(&buf, "# Source: %s\n%s\n", n, body)
			continue
		}
		for part := range strings.SplitSeq(body, "\n---") {
			part = strings.TrimSpace(strings.TrimPrefix(part, "---"))
			if part == "" {
				continue
			}
			var meta struct {
				metav1.TypeMeta   `json:",inline"`
				metav1.ObjectMeta `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(part), &meta); err != nil {
				t.Fatalf("%s: %v\n%s", n, err, part)
			}
			if meta.Kind == "" || meta.Name == "" {
				t.Fatalf("%s: a document without kind or name:\n%s", n, part)
			}
			if meta.Namespace != namespace {
				t.Errorf("%s %s: namespace %q, want %q", meta.Kind, meta.Name, meta.Namespace, namespace)
			}
			if meta.Kind == "Secret" {
				var s corev1.Secret
				decode(t, []byte(part), &s)
				r.secrets = append(r.secrets, &s)
				for k, v := range s.Data {
					// The random value is checked here and left out of the golden.
					if len(v) < 32 {
						t.Errorf("Secret %s: %s is %d characters, want at least 32", s.Name, k, len(v))
					}
					for _, c := range v {
						if c < 0x21 || c > 0x7e {
							t.Errorf("Secret %s: %s has a character %q that is not printable ASCII", s.Name, k, c)
						}
					}
					part = strings.ReplaceAll(part, base64.StdEncoding.EncodeToString(v), generatedPlaceholder)
				}
			}
			r.docs = append(r.docs, doc{source: n, kind: meta.Kind, name: meta.Name, raw: []byte(part)})
			fmt.Fprintf(&buf, "---\n# Source: %s\n%s\n", n, part)
		}
	}
	r.text = buf.Bytes()
	return r
}

func decode(t *testing.T, raw []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
}

func (r rendered) kinds(kind string) []doc {
	var ds []doc
	for _, d := range r.docs {
		if d.kind == kind {
			ds = append(ds, d)
		}
	}
	return ds
}

func (r rendered) one(t *testing.T, kind string, into any) {
	t.Helper()
	ds := r.kinds(kind)
	if len(ds) != 1 {
		t.Fatalf("%d %s objects rendered, want 1", len(ds), kind)
	}
	decode(t, ds[0].raw, into)
}

// flagValue is the argument after flag in args ("" and false if absent).
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

func wantRoutes(n int) string {
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("nats://ardea-%d.ardea-headless.streams.svc.cluster.local:6222", i))
	}
	return strings.Join(urls, ",")
}

// checkStatefulSet checks what a working cluster of n nodes with
// jsReplicas copies depends on.
func checkStatefulSet(t *testing.T, r rendered, n, jsReplicas int, secretName string) *appsv1.StatefulSet {
	t.Helper()
	var sts appsv1.StatefulSet
	r.one(t, "StatefulSet", &sts)
	if sts.Spec.Replicas == nil || int(*sts.Spec.Replicas) != n {
		t.Errorf("replicas %v, want %d", sts.Spec.Replicas, n)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q, want Parallel", sts.Spec.PodManagementPolicy)
	}
	if sts.Spec.ServiceName != "ardea-headless" {
		t.Errorf("serviceName %q, want ardea-headless", sts.Spec.ServiceName)
	}
	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	args := append(slices.Clone(c.Command), c.Args...)
	if i := slices.Index(args, "server"); i < 0 || !slices.Equal(args[:i], []string{"ardea", "--log-format", "json", "--log-level", "info"}) {
		t.Errorf("command %q: want ardea --log-format json --log-level info server ...", args)
	}
	routes, ok := flagValue(args, "--routes")
	if !ok {
		t.Fatalf("no --routes in %q", args)
	}
	if got := strings.Split(routes, ","); len(got) != n {
		t.Errorf("--routes lists %d URLs, want %d: %s", len(got), n, routes)
	}
	if routes != wantRoutes(n) {
		t.Errorf("--routes %s\nwant %s", routes, wantRoutes(n))
	}
	if v, _ := flagValue(args, "--replicas"); v != fmt.Sprint(jsReplicas) {
		t.Errorf("--replicas %q, want %d", v, jsReplicas)
	}
	for flag, want := range map[string]string{
		"--name":                "$(POD_NAME)",
		"--data-dir":            "/var/lib/ardea",
		"--listen":              "0.0.0.0:7780",
		"--nats-listen":         "0.0.0.0:4222",
		"--cluster-listen":      "0.0.0.0:6222",
		"--cluster-secret-file": "/etc/ardea/secret/cluster.secret",
	} {
		if v, _ := flagValue(args, flag); v != want {
			t.Errorf("%s %q, want %q", flag, v, want)
		}
	}

	// The secret volume: mode 0400, from the right Secret.
	var found bool
	for _, v := range pod.Volumes {
		if v.Secret == nil || v.Name != "cluster-secret-src" {
			continue
		}
		found = true
		if v.Secret.SecretName != secretName {
			t.Errorf("secret volume from %q, want %q", v.Secret.SecretName, secretName)
		}
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o400 {
			t.Errorf("secret volume defaultMode %v, want 0400 (256)", v.Secret.DefaultMode)
		}
	}
	if !found {
		t.Error("no cluster secret volume")
	}

	// Probes on /healthz, port api.
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "api" {
			t.Errorf("%s probe %+v, want GET /healthz on port api", name, p)
		}
	}

	// No container privileged, every one non-root without capabilities.
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s: no securityContext", c.Name)
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s runs privileged", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s may escalate privileges", c.Name)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("container %s: capabilities %+v, want drop ALL", c.Name, sc.Capabilities)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: root file system writable", c.Name)
		}
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext: runAsNonRoot not set")
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("volumeClaimTemplates %+v, want one named data", sts.Spec.VolumeClaimTemplates)
	}
	return &sts
}

func checkCommon(t *testing.T, r rendered) {
	t.Helper()
	var pdb policyv1.PodDisruptionBudget
	r.one(t, "PodDisruptionBudget", &pdb)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	var headless *corev1.Service
	for _, d := range r.kinds("Service") {
		var s corev1.Service
		decode(t, d.raw, &s)
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = &s
		}
	}
	if headless == nil {
		t.Fatal("no headless Service")
	}
	if headless.Name != "ardea-headless" || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service %s: publishNotReadyAddresses %v, want ardea-headless with true", headless.Name, headless.Spec.PublishNotReadyAddresses)
	}
}

func TestChartDefaults(t *testing.T) {
	r := render(t, nil)
	checkStatefulSet(t, r, 3, 3, "ardea-cluster-secret")
	checkCommon(t, r)
	if len(r.secrets) != 1 || r.secrets[0].Name != "ardea-cluster-secret" || len(r.secrets[0].Data["cluster.secret"]) != 48 {
		t.Errorf("want one generated Secret ardea-cluster-secret with a 48-character cluster.secret, got %d", len(r.secrets))
	}
	if len(r.kinds("Role")) != 1 || len(r.kinds("RoleBinding")) != 1 || len(r.kinds("ServiceAccount")) != 1 {
		t.Error("rbac.create: want a ServiceAccount, a Role and a RoleBinding")
	}
	if len(r.kinds("ConfigMap")) != 0 {
		t.Error("a ConfigMap without config")
	}
	testutil.Golden(t, "default.golden", r.text)
}

// fiveNodesConfig is a deployment file (docs/deploy.md) for the second
// value set: the API reached by the client Service's DNS name too.
const fiveNodesConfig = `metrics:
  interval: 10s
quotas:
  default:
    topologies: 10
security:
  hosts: [ardea.streams.svc, ardea.streams.svc.cluster.local]
`

func TestChartFiveNodesExistingSecret(t *testing.T) {
	vals := map[string]any{
		"replicas":      5,
		"clusterSecret": map[string]any{"existingSecret": "my-ardea-secret"},
		"config":        fiveNodesConfig,
		"rbac":          map[string]any{"create": false},
	}
	r := render(t, vals)
	sts := checkStatefulSet(t, r, 5, 3, "my-ardea-secret")
	checkCommon(t, r)
	if len(r.secrets) != 0 {
		t.Errorf("%d Secrets rendered with existingSecret, want 0", len(r.secrets))
	}
	for _, k := range []string{"Role", "RoleBinding", "ServiceAccount"} {
		if n := len(r.kinds(k)); n != 0 {
			t.Errorf("rbac.create false: %d %s rendered", n, k)
		}
	}
	if sa := sts.Spec.Template.Spec.ServiceAccountName; sa != "default" {
		t.Errorf("serviceAccountName %q without rbac.create, want default", sa)
	}
	var cm corev1.ConfigMap
	r.one(t, "ConfigMap", &cm)
	if strings.TrimSpace(cm.Data["ardea.yaml"]) != strings.TrimSpace(fiveNodesConfig) {
		t.Errorf("ConfigMap ardea.yaml %q", cm.Data["ardea.yaml"])
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if v, _ := flagValue(c.Args, "--config"); v != "/etc/ardea/config/ardea.yaml" {
		t.Errorf("--config %q, want /etc/ardea/config/ardea.yaml", v)
	}
	testutil.Golden(t, "five-nodes.golden", r.text)
}

// TestChartKubernetesScheduler: scheduler kubernetes writes the
// deployment file's scheduler: and kubernetes: sections after config,
// which ardea reads as it is (internal/deployment), and mounts the
// service account's token the runtime calls the API with.
func TestChartKubernetesScheduler(t *testing.T) {
	vals := map[string]any{
		"scheduler": "kubernetes",
		"config":    "metrics:\n  interval: 10s\n",
		"kubernetes": map[string]any{"resources": map[string]any{"cpu": "250m", "memory": "1Gi"}, "nodeSelector": map[string]any{"pool": "streams"},
			"compileCache": "/var/cache/ardea"},
	}
	r := render(t, vals)
	sts := checkStatefulSet(t, r, 3, 3, "ardea-cluster-secret")
	checkCommon(t, r)
	var cm corev1.ConfigMap
	r.one(t, "ConfigMap", &cm)
	f, err := deployment.Parse("ardea.yaml", []byte(cm.Data["ardea.yaml"]))
	if err != nil {
		t.Fatalf("the rendered deployment file: %v\n%s", err, cm.Data["ardea.yaml"])
	}
	k := f.Kubernetes
	if k == nil || k.Namespace != namespace || k.Image != "ardea-dev/ardea:0.1.0" || k.NATSURL != "nats://ardea."+namespace+".svc.cluster.local:4222" ||
		k.Resources.CPU != "250m" || k.Resources.Memory != "1Gi" || k.NodeSelector["pool"] != "streams" || k.CompileCache != "/var/cache/ardea" || f.Metrics.Interval == 0 {
		t.Errorf("deployment file %+v, kubernetes %+v", f, k)
	}
	ps := sts.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || !*ps.AutomountServiceAccountToken || ps.ServiceAccountName != "ardea" {
		t.Errorf("the nodes' service account: %s, automount %v", ps.ServiceAccountName, ps.AutomountServiceAccountToken)
	}
	if v, _ := flagValue(ps.Containers[0].Args, "--config"); v != "/etc/ardea/config/ardea.yaml" {
		t.Errorf("--config %q", v)
	}
	// The chart's Role grants what the runtime uses.
	var role rbacv1.Role
	r.one(t, "Role", &role)
	for _, need := range daemon.KubernetesRules() {
		for _, res := range need.Resources {
			for _, verb := range need.Verbs {
				ok := false
				for _, rule := range role.Rules {
					ok = ok || slices.Contains(rule.APIGroups, need.APIGroups[0]) && slices.Contains(rule.Resources, res) && slices.Contains(rule.Verbs, verb)
				}
				if !ok {
					t.Errorf("the chart's Role does not grant %s on %s (group %q), which scheduler: kubernetes uses", verb, res, need.APIGroups[0])
				}
			}
		}
	}
	testutil.Golden(t, "kubernetes-scheduler.golden", r.text)
}

// TestChartRefusesImpossibleValues: values no cluster can run with fail
// the render, saying why.
func TestChartRefusesImpossibleValues(t *testing.T) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		vals map[string]any
		want string
	}{
		"more copies than nodes":  {map[string]any{"replicas": 2}, "cannot exceed replicas"},
		"six copies":              {map[string]any{"replicas": 7, "jetstreamReplicas": 6}, "1 to 5"},
		"no secret":               {map[string]any{"clusterSecret": map[string]any{"generate": false}}, "existingSecret or generate"},
		"unknown scheduler":       {map[string]any{"scheduler": "yarn"}, "scheduler must be processes or kubernetes"},
		"kubernetes without rbac": {map[string]any{"scheduler": "kubernetes", "rbac": map[string]any{"create": false}}, "scheduler kubernetes needs rbac.create"},
	} {
		rv, err := chartutil.ToRenderValues(ch, tc.vals, chartcommon.ReleaseOptions{Name: release, Namespace: namespace}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Render(ch, rv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: render error %v, want one with %q", name, err, tc.want)
		}
	}
}

// TestChartLint runs `helm lint`'s rules (Helm's Go module) on the chart
// with both value sets.
func TestChartLint(t *testing.T) {
	dir, err := filepath.Abs(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, vals := range []map[string]any{
		nil,
		{"replicas": 5, "clusterSecret": map[string]any{"existingSecret": "s"}, "config": "metrics: {}\n", "rbac": map[string]any{"create": false}},
	} {
		l := lint.RunAll(dir, vals, namespace)
		for _, m := range l.Messages {
			// INFO is advice (an icon); anything above fails.
			if m.Severity > support.InfoSev {
				t.Errorf("lint: %v", m)
			} else {
				t.Logf("lint: %v", m)
			}
		}
	}
}
