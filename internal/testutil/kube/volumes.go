package kube

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// materialise makes each of the pod's volumes a local directory and
// returns them by volume name:
//   - emptyDir: an empty directory of the pod's (volumes/NAME);
//   - secret and configMap: a directory of the pod's with a file per
//     key (or per item, at its path and mode), written once: a later
//     change of the object does not reach a running pod;
//   - persistentVolumeClaim: a directory of the cluster's per claim
//     (pvcs/NAMESPACE/CLAIM), so that a StatefulSet's pod finds its
//     data again after a restart on any node; the claim itself is not
//     bound (no volume controller runs) and nothing is provisioned;
//   - hostPath: the path itself.
//
// Any other kind is an error: the pod's containers wait, reporting it.
func (w *podWorker) materialise() (map[string]string, error) {
	for _, c := range w.pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			// Running the pod without its sidecar would hide it.
			return nil, fmt.Errorf("init container %s is a sidecar (restartPolicy Always), which the test kubelet does not run", c.Name)
		}
	}
	vols := map[string]string{}
	for _, v := range w.pod.Spec.Volumes {
		dir := filepath.Join(w.dir, "volumes", v.Name)
		var err error
		switch {
		case v.EmptyDir != nil:
			err = os.MkdirAll(dir, 0o777)
		case v.Secret != nil:
			var data map[string][]byte
			if data, err = w.secret(w.k.ctx, v.Secret.SecretName, optional(v.Secret.Optional)); err == nil {
				err = writeKeys(dir, data, v.Secret.Items, v.Secret.DefaultMode)
			}
		case v.ConfigMap != nil:
			var data map[string]string
			if data, err = w.configMap(w.k.ctx, v.ConfigMap.Name, optional(v.ConfigMap.Optional)); err == nil {
				b := make(map[string][]byte, len(data))
				for k, s := range data {
					b[k] = []byte(s)
				}
				err = writeKeys(dir, b, v.ConfigMap.Items, v.ConfigMap.DefaultMode)
			}
		case v.PersistentVolumeClaim != nil:
			dir = filepath.Join(w.k.c.Dir, "pvcs", w.pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			err = os.MkdirAll(dir, 0o777)
		case v.HostPath != nil:
			dir = v.HostPath.Path
			if t := v.HostPath.Type; t != nil && *t == corev1.HostPathDirectoryOrCreate {
				err = os.MkdirAll(dir, 0o755)
			}
		default:
			err = fmt.Errorf("its kind is not one the test kubelet makes (emptyDir, secret, configMap, persistentVolumeClaim, hostPath)")
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		vols[v.Name] = dir
	}
	return vols, nil
}

// writeKeys writes a Secret's or ConfigMap's keys into dir: every key
// as a file of its name, or only the items listed, each at its path;
// mode as the volume says (0644 by default, as Kubernetes').
func writeKeys(dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode)
	}
	if items == nil {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("no key %s", it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)
		}
		p := filepath.Join(dir, filepath.FromSlash(it.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, m); err != nil {
			return err
		}
		if err := os.Chmod(p, m); err != nil { // WriteFile's mode is masked by the umask
			return err
		}
	}
	return nil
}
