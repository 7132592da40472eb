package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// The labels and annotations of every object the runtime makes.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	// LabelTopologyID is a digest of tenant and topology: the
	// StatefulSet's selector, and how a pod finds its topology (the
	// names themselves may not fit a label value).
	LabelTopologyID = "ardea.dev/topology-id"
	// LabelTenant and LabelTopology carry the names when they fit a
	// label value; AnnotationTenant and AnnotationTopology always do.
	LabelTenant        = "ardea.dev/tenant"
	LabelTopology      = "ardea.dev/topology"
	AnnotationTenant   = "ardea.dev/tenant"
	AnnotationTopology = "ardea.dev/topology"

	managedBy = "ardea"
	component = "host"
	// hostContainer is the pod's one container.
	hostContainer = "host"
)

// Where a host pod's volumes are mounted (paths no host file uses: the
// test kubelet rewrites them in args and env).
const (
	MountCreds = "/ardea/nats" // the Secret: a creds file per container, mode 0400
	MountData  = "/ardea/data" // emptyDir: --data-dir (the compilation cache)
	MountTmp   = "/ardea/tmp"  // emptyDir: TMPDIR (the root file system is read-only)
)

// Selector is the label selector of every pod the runtime makes.
func Selector() string {
	return LabelManagedBy + "=" + managedBy + "," + LabelComponent + "=" + component
}

// Name is the StatefulSet (and Secret) of tenant's topology: a DNS label
// made of both names, cut short, and a digest of them that keeps two
// topologies apart whatever their names (ardea-<tenant>-<topology>-<hash>,
// at most 52 characters, so that its pods' names and the controller's
// revision label fit 63).
func Name(tenant, topology string) string {
	id := topologyID(tenant, topology)
	base := "ardea-" + dnsPart(tenant) + "-" + dnsPart(topology)
	if limit := 52 - 1 - len(id[:10]); len(base) > limit {
		base = strings.TrimRight(base[:limit], "-")
	}
	return base + "-" + id[:10]
}

// topologyID is the digest LabelTopologyID carries.
func topologyID(tenant, topology string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + topology))
	return hex.EncodeToString(sum[:])[:40]
}

// dnsPart keeps of a name what a DNS label may hold, lowercased.
func dnsPart(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		out = "x"
	}
	return out
}

// labels are the labels of tenant's topology's objects and pods.
func labels(tenant, topology string) map[string]string {
	l := map[string]string{LabelName: "ardea", LabelManagedBy: managedBy, LabelComponent: component,
		LabelTopologyID: topologyID(tenant, topology)}
	if len(validation.IsValidLabelValue(tenant)) == 0 {
		l[LabelTenant] = tenant
	}
	if len(validation.IsValidLabelValue(topology)) == 0 {
		l[LabelTopology] = topology
	}
	return l
}

func annotations(tenant, topology string) map[string]string {
	return map[string]string{AnnotationTenant: tenant, AnnotationTopology: topology}
}

// PodName is container c's pod of StatefulSet sts.
func PodName(sts string, c int) string { return sts + "-" + strconv.Itoa(c-1) }

// secret is the topology's Secret: the hosts' credentials (a key per
// container) and the environment kept secret.
func (r *Runtime[T]) secret(tenant, topology string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: Name(tenant, topology), Namespace: r.ns,
			Labels: labels(tenant, topology), Annotations: annotations(tenant, topology)},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// statefulSet is the topology's StatefulSet of replicas pods, each
// running pod's command line.
func (r *Runtime[T]) statefulSet(tenant, topology string, replicas int, pod Pod) *appsv1.StatefulSet {
	name := Name(tenant, topology)
	l := labels(tenant, topology)
	n := int32(replicas)
	env := []corev1.EnvVar{
		{Name: process.PodNameEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: process.CredsDirEnv, Value: MountCreds},
		{Name: "TMPDIR", Value: MountTmp},
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: pod.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(pod.SecretEnv)) {
		env = append(env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: k}}})
	}
	res := r.resources(pod.Resources)
	f, t, nonRoot := false, true, int64(65532)
	mode := int32(0o400)
	grace := int64(30)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns, Labels: l, Annotations: annotations(tenant, topology)},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelTopologyID: l[LabelTopologyID],
				LabelManagedBy: managedBy, LabelComponent: component}},
			// Every container starts at once, as the processes do; no
			// Service: the hosts talk over NATS only.
			PodManagementPolicy: appsv1.ParallelPodManagement,
			// The runtime replaces the pods itself (a restart, an
			// adoption): a changed template rolls none on its own.
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: annotations(tenant, topology)},
				Spec: corev1.PodSpec{
					ServiceAccountName:            r.cfg.ServiceAccount,
					AutomountServiceAccountToken:  &f,
					TerminationGracePeriodSeconds: &grace,
					NodeSelector:                  maps.Clone(r.cfg.NodeSelector),
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &t, RunAsUser: &nonRoot, RunAsGroup: &nonRoot,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:            hostContainer,
						Image:           r.cfg.Image,
						ImagePullPolicy: corev1.PullPolicy(r.cfg.ImagePullPolicy),
						Command:         []string{"ardea"},
						Args:            pod.Args,
						Env:             env,
						Resources:       res,
						// A host that fails leaves its last log lines as its
						// termination message: the container's LastError.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "nats-creds", MountPath: MountCreds, ReadOnly: true},
							{Name: "data", MountPath: MountData},
							{Name: "tmp", MountPath: MountTmp},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "nats-creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: name, DefaultMode: &mode}}},
						{Name: "data", VolumeSource: r.dataVolume()},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					},
				},
			},
		},
	}
}

// dataVolume is the hosts' data dir: the node's compile cache, or an
// emptyDir.
func (r *Runtime[T]) dataVolume() corev1.VolumeSource {
	if r.cfg.CompileCache == "" {
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	t := corev1.HostPathDirectoryOrCreate
	return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: r.cfg.CompileCache, Type: &t}}
}

// resources are a pod's requests and limits (the same: as Heron's
// Kubernetes scheduler, a container gets what its plan packed for it):
// the packing plan's container size, or the configured defaults where
// it gives none.
func (r *Runtime[T]) resources(p packing.Resources) corev1.ResourceRequirements {
	cpu, mem := r.cfg.cpu, r.cfg.memory
	if p.CPU > 0 {
		cpu = *resource.NewMilliQuantity(int64(p.CPU*1000+0.5), resource.DecimalSI)
	}
	if p.RAM > 0 {
		mem = *resource.NewQuantity(p.RAM, resource.BinarySI)
	}
	l := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	return corev1.ResourceRequirements{Requests: l, Limits: maps.Clone(l)}
}

// Rules are the permissions the runtime uses in its namespace, as a
// Role's rules: the Helm chart's Role must grant them (deploy/helm's test
// checks it, and TestRuntime runs under exactly these).
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"create", "get", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "get", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
		// A pod's log (Runtime.Logs: `ardea logs`).
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}
}
