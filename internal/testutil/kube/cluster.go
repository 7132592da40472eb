// Package kube runs a real Kubernetes control plane on the test's
// machine, for testing what Ardea does against Kubernetes end to end:
// Debian's etcd, kube-apiserver and kube-controller-manager of one pinned
// release (Release, built from the k8s.io/kubernetes module by the
// wrapper module in kubebin/) run as local processes on 127.0.0.1, and a
// test kubelet in the test's process (RunKubelet) stands for the nodes:
// it registers a Node, runs each Pod bound to it as local processes and
// reports their status back. No container runtime, image, network or
// kube-scheduler is involved: see README.md for what is real and what is
// emulated.
//
// A test:
//
//	c := kube.Start(t, kube.Options{})
//	c.RunKubelet(ctx, t, "node-a", kube.KubeletOptions{Images: map[string]string{"ardea:test": bin}})
//	c.Client.AppsV1().StatefulSets("default").Create(...)
//
// Every process stops when the test ends; the fast tier (-short) skips.
// A package whose tests can share one control plane (each in namespaces
// and on kubelets of its own) calls Shared instead of Start, and
// StopShared from its TestMain.
package kube

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// DefaultControllers are the kube-controller-manager controllers a
// cluster runs unless Options.Controllers says otherwise: what takes a
// StatefulSet (or a Deployment) to Pods and back, the garbage collector
// that deletes what an owner leaves (a StatefulSet's Pods when it is
// deleted), the namespace controller (deleting a namespace empties it)
// and the service account controller (each namespace's "default"
// ServiceAccount; Start also waits for it as the sign that the
// controllers run), and the cluster role aggregation that fills the
// admin, edit and view ClusterRoles (empty without it, so a test binding
// a user to one would grant nothing). Node lifecycle, scheduling, volumes, endpoints and
// the rest are off: nothing here needs them, and each costs start time.
var DefaultControllers = []string{
	"statefulset-controller",
	"replicaset-controller",
	"deployment-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"clusterrole-aggregation-controller",
}

// Options tunes Start. The zero value is a cluster with
// DefaultControllers in which the test kubelets bind unscheduled Pods.
type Options struct {
	// Controllers is kube-controller-manager's --controllers (names
	// as kube-controller-manager --help lists them); nil is
	// DefaultControllers.
	Controllers []string
	// APIServerFlags and ControllerManagerFlags are appended to the
	// flags Start gives (a later flag wins: --feature-gates=..., -v=4).
	APIServerFlags, ControllerManagerFlags []string
	// NoBinder leaves Pods without a node alone: for a test that binds
	// them itself (a scheduler under test). Otherwise the cluster binds
	// each Pod of the default scheduler to a running test kubelet (see
	// binder.go), as kube-scheduler would.
	NoBinder bool
}

// Cluster is a running control plane. Its fields are for the test to
// read; the processes stop in t.Cleanup (Start) or in StopShared
// (Shared).
type Cluster struct {
	// Config is an admin's client configuration (a client certificate
	// in system:masters): clients made from it may do everything.
	Config *rest.Config
	// Client is a clientset from Config.
	Client kubernetes.Interface
	// Kubeconfig is a kubeconfig file with the same admin credentials,
	// for a program the test starts.
	Kubeconfig string
	// Dir holds the cluster's files: credentials, etcd's data, the
	// control plane's logs (etcd.log, kube-apiserver.log,
	// kube-controller-manager.log), the kubelets' pods. It is removed
	// when the test ends (Start) or by StopShared (Shared).
	Dir string

	opts  Options
	pki   *pki
	procs []*proc // started, in order

	mu       sync.Mutex
	kubelets map[string]*Kubelet // running ones, by node name
	binder   *binder
}

// Start starts etcd, kube-apiserver and kube-controller-manager for t
// and returns once the API server is ready and the controllers run
// (a few seconds once Binaries are built). It skips t in the fast tier
// and where the harness cannot run (not Linux, no etcd: install Debian's
// etcd-server), failing instead when ARDEA_REQUIRE_TOOLCHAINS=1.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bins := prerequisites(t)
	c := newCluster(opts, t.TempDir())
	// Registered after TempDir's removal, so it runs before it: every
	// process is gone before its files are.
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			c.logTails(t)
		}
	})
	if err := c.run(bins, t.Logf); err != nil {
		t.Fatal(err)
	}
	return c
}

// The cluster of Shared: one per test binary, started by the first test
// that asks for it and stopped by StopShared.
var shared struct {
	mu   sync.Mutex
	c    *Cluster
	opts Options
	err  error // a failed start: every later test fails with it too
}

// Shared is Start for the tests of a package that share one control
// plane: each starting one of its own (several CPU-seconds, 3 to 6 s)
// would cost more than the test itself. The first call starts it; the
// later ones return it. It outlives the test that started it: the
// package's TestMain calls StopShared after m.Run. Each test keeps its
// objects apart in namespaces of its own (EnsureNamespace) and runs
// kubelets of its own, with node names, and labels its Pods select,
// that no other test uses: the binder binds a Pod to any running
// kubelet it fits. Every call skips or fails as Start does, and must
// pass the same opts.
func Shared(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bins := prerequisites(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil && shared.err == nil {
		dir, err := os.MkdirTemp("", "ardea-kube-")
		if err != nil {
			t.Fatal(err)
		}
		shared.c, shared.opts = newCluster(opts, dir), opts
		shared.err = shared.c.run(bins, t.Logf)
	}
	if shared.err != nil {
		t.Fatalf("kube: the shared cluster: %v", shared.err)
	}
	if !reflect.DeepEqual(opts, shared.opts) {
		t.Fatalf("kube: Shared with options %+v, but the shared cluster runs with %+v", opts, shared.opts)
	}
	c := shared.c
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
	})
	return c
}

// StopShared stops the cluster of Shared, if a test started one (what
// Start's cleanup does: the kubelets still running, then the control
// plane), and removes its files. A package's TestMain calls it after
// m.Run.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		return
	}
	shared.c.stop()
	_ = os.RemoveAll(shared.c.Dir)
	shared.c, shared.err = nil, nil
}

// binaries are the programs a cluster runs.
type binaries struct{ etcd, apiserver, controllerManager string }

// prerequisites skips t where a cluster cannot start (or fails it under
// ARDEA_REQUIRE_TOOLCHAINS=1) and returns the programs to run, building
// the Kubernetes ones the first time on a machine.
func prerequisites(t testing.TB) binaries {
	t.Helper()
	testutil.StartsProcesses(t, "etcd, kube-apiserver and kube-controller-manager")
	if runtime.GOOS != "linux" {
		t.Skipf("kube: the Kubernetes harness runs etcd, kube-apiserver and kube-controller-manager as local processes on Linux only, not on %s", runtime.GOOS)
	}
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		err = fmt.Errorf("kube: no etcd in PATH (install Debian's etcd-server package: apt-get install etcd-server)")
	}
	testutil.NeedToolchain(t, err)
	apiserver, controllerManager := Binaries(t)
	return binaries{etcd, apiserver, controllerManager}
}

func newCluster(opts Options, dir string) *Cluster {
	return &Cluster{opts: opts, Dir: dir, kubelets: map[string]*Kubelet{}}
}

// run starts the control plane in c.Dir; what it started is in c.procs,
// for stop, even when it fails. logf reports its progress.
func (c *Cluster) run(bins binaries, logf func(string, ...any)) error {
	begin := time.Now()
	p, err := newPKI(c.Dir)
	if err != nil {
		return fmt.Errorf("kube: credentials: %v", err)
	}
	c.pki = p
	etcdURL, err := c.startEtcd(bins.etcd, logf)
	if err != nil {
		return err
	}
	port, err := c.startAPIServer(bins.apiserver, etcdURL, p, logf)
	if err != nil {
		return err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	c.Config = &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: p.admin.cert,
			KeyData:  p.admin.key,
		},
		// A test's bursts (a kubelet's status updates, a watch per
		// informer) should not wait on the client's default 5 QPS.
		QPS:   200,
		Burst: 400,
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return fmt.Errorf("kube: client: %v", err)
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, host, p.caPEM, adminUser, p.admin); err != nil {
		return err
	}
	if err := c.awaitAPIServer(); err != nil {
		return err
	}
	if err := c.startControllerManager(bins.controllerManager, host, p); err != nil {
		return err
	}
	logf("kube: control plane %s at %s ready in %v (files in %s)", Release, host, time.Since(begin).Round(time.Millisecond), c.Dir)
	return nil
}

// startEtcd starts etcd on two free loopback ports and returns its
// client URL once it answers healthy. Its data is in the cluster's dir
// and never fsynced: it lives as long as one test (or one test binary:
// Shared).
func (c *Cluster) startEtcd(bin string, logf func(string, ...any)) (string, error) {
	var url string
	err := c.startRetrying("etcd", 2, logf, func(ports []int) []string {
		url = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		return []string{bin,
			"--name=default",
			"--data-dir=" + filepath.Join(c.Dir, "etcd"),
			"--listen-client-urls=" + url,
			"--advertise-client-urls=" + url,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=default=" + peer,
			"--unsafe-no-fsync",
			"--logger=zap",
			"--log-outputs=stderr",
			"--log-level=warn",
		}
	}, func(*proc) error {
		resp, err := http.Get(url + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd /health: %s", resp.Status)
		}
		return nil
	})
	return url, err
}

// startAPIServer starts kube-apiserver on a free loopback port and
// returns the port once it serves (awaitAPIServer then waits for
// readiness). What it is given, and why:
//   - the serving certificate of the cluster's CA for 127.0.0.1, and the
//     CA as --client-ca-file: clients authenticate by certificate;
//   - RBAC, under which the two system:masters identities may do all;
//   - --endpoint-reconciler-type=none: it would otherwise publish its
//     address as the "kubernetes" Service's endpoints and keep them;
//   - no ServiceAccount admission: Pods get no token volume to mount
//     (the test kubelet has none to give) and need no ServiceAccount;
//   - a service account key pair and issuer, which it requires;
//   - a service IP range: it allocates the ClusterIPs of Services from
//     it, addresses nothing ever routes to here.
//   - the kubelets' InternalIP first: a Pod's log is read from its
//     kubelet (logserver.go) there, not at the Node's Hostname address,
//     which resolves nowhere.
func (c *Cluster) startAPIServer(bin, etcdURL string, p *pki, logf func(string, ...any)) (int, error) {
	var port int
	err := c.startRetrying("kube-apiserver", 1, logf, func(ports []int) []string {
		port = ports[0]
		return append([]string{bin,
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--tls-cert-file=" + p.servingCert,
			"--tls-private-key-file=" + p.servingKey,
			"--client-ca-file=" + p.caCert,
			"--authorization-mode=RBAC",
			"--endpoint-reconciler-type=none",
			"--disable-admission-plugins=ServiceAccount",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + p.saPublic,
			"--service-account-signing-key-file=" + p.saPrivate,
			"--service-cluster-ip-range=10.0.0.0/24",
			"--kubelet-preferred-address-types=InternalIP",
			"--allow-privileged=true",
			"--profiling=false",
		}, c.opts.APIServerFlags...)
	}, func(*proc) error {
		// Listening is enough here: a start that lost its port
		// ends with "address already in use" before it listens.
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	return port, err
}

// awaitAPIServer polls /readyz as the admin until every readiness check
// passes (etcd, the RBAC bootstrap roles, the default namespace...).
func (c *Cluster) awaitAPIServer() error {
	apiserver := c.procs[len(c.procs)-1]
	var failed error
	err := testutil.Await(testutil.DefaultLimit, "kube-apiserver ready", func() (bool, string) {
		if done, _ := apiserver.exited(); done {
			failed = apiserver.failure()
			return true, ""
		}
		body, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err != nil {
			return false, fmt.Sprintf("%v %s", err, body)
		}
		return true, ""
	})
	return cmp.Or(failed, err)
}

// startControllerManager starts kube-controller-manager with its own
// kubeconfig, and returns once its service account controller has made
// the "default" ServiceAccount of namespace default: the controllers
// have started and reach the API server. It serves no HTTPS port
// (--secure-port=0: nothing scrapes it) and elects no leader (it is
// alone); a start interval of 0 starts every controller at once.
func (c *Cluster) startControllerManager(bin, host string, p *pki) error {
	kubeconfig := filepath.Join(c.Dir, "kube-controller-manager.kubeconfig")
	if err := writeKubeconfig(kubeconfig, host, p.caPEM, controllerManagerUser, p.controllerManager); err != nil {
		return err
	}
	controllers := c.opts.Controllers
	if controllers == nil {
		controllers = DefaultControllers
	}
	argv := append([]string{bin,
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--secure-port=0",
		"--controller-start-interval=0",
		"--concurrent-statefulset-syncs=5",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}, c.opts.ControllerManagerFlags...)
	kcm, err := c.start("kube-controller-manager", argv)
	if err != nil {
		return err
	}
	if !slices.Contains(controllers, "serviceaccount-controller") {
		return nil
	}
	var failed error
	err = testutil.Await(testutil.DefaultLimit, "kube-controller-manager running (the default ServiceAccount made)", func() (bool, string) {
		if done, _ := kcm.exited(); done {
			failed = kcm.failure()
			return true, ""
		}
		_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, "no ServiceAccount default/default yet"
			}
			return false, err.Error()
		}
		return true, ""
	})
	return cmp.Or(failed, err)
}

// start starts one process of the control plane, to be stopped in the
// cluster's cleanup.
func (c *Cluster) start(name string, argv []string) (*proc, error) {
	p, err := startProc(name, filepath.Join(c.Dir, name+".log"), argv)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// startRetrying starts a process on nports free ports and polls ready
// until it holds, picking new ports (up to three times) when the process
// ended because another program took one; any other end is an error.
func (c *Cluster) startRetrying(name string, nports int, logf func(string, ...any), argv func(ports []int) []string, ready func(*proc) error) error {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(nports)
		if err != nil {
			return err
		}
		p, err := c.start(name, argv(ports))
		if err != nil {
			return err
		}
		var lost bool
		var failed error
		err = testutil.Await(testutil.DefaultLimit, name+" serving", func() (bool, string) {
			if done, _ := p.exited(); done {
				if p.addrInUse() && attempt < 3 {
					lost = true
				} else {
					failed = p.failure()
				}
				return true, ""
			}
			if err := ready(p); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		if err := cmp.Or(failed, err); err != nil {
			return err
		}
		if !lost {
			return nil
		}
		logf("kube: %s lost a port to another program; starting it again on others", name)
		c.procs = c.procs[:len(c.procs)-1]
	}
}

// stop ends the test kubelets, then the control plane in reverse order
// of start (the controller manager before the API server before etcd,
// so none logs the loss of the one below it).
func (c *Cluster) stop() {
	c.mu.Lock()
	kubelets := make([]*Kubelet, 0, len(c.kubelets))
	for _, k := range c.kubelets {
		kubelets = append(kubelets, k)
	}
	b := c.binder
	c.mu.Unlock()
	for _, k := range kubelets {
		k.Stop()
	}
	if b != nil {
		b.stop()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(10 * time.Second)
	}
}

// logTails logs the end of each control-plane process's log to a failed
// test: the logs go with the cluster's dir.
func (c *Cluster) logTails(t testing.TB) {
	for _, p := range c.procs {
		t.Logf("kube: the end of %s:\n%s", p.log, p.tail(20))
	}
}

// UserConfig is a client configuration authenticated as user in groups
// (a client certificate of the cluster's CA), for a test of what an
// identity other than the admin may do under RBAC: a scheduler under
// test with only the roles its manifests bind.
func (c *Cluster) UserConfig(user string, groups ...string) (*rest.Config, error) {
	kp, err := c.pki.clientCert(user, groups...)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.CertData, cfg.KeyData = kp.cert, kp.key
	return cfg, nil
}

// UserKubeconfig is UserConfig as a kubeconfig file in the cluster's
// dir, for a program the test starts.
func (c *Cluster) UserKubeconfig(user string, groups ...string) (string, error) {
	kp, err := c.pki.clientCert(user, groups...)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(c.Dir, "user-*.kubeconfig")
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), writeKubeconfig(f.Name(), c.Config.Host, c.pki.caPEM, user, kp)
}

// LogPath is the log file of a control-plane process: "etcd",
// "kube-apiserver" or "kube-controller-manager".
func (c *Cluster) LogPath(component string) string {
	return filepath.Join(c.Dir, component+".log")
}

// EnsureNamespace creates namespace ns unless it exists: for a test
// that keeps its objects apart from another's.
func (c *Cluster) EnsureNamespace(ctx context.Context, ns string) error {
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
