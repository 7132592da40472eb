package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/names"
)

// What reaches the machine (docs/security.md, "Settings that reach the
// machine"). A host process runs with the daemon's user: a setting that
// names a file, a listen address, a URL or brokers makes it act on the
// machine's files and network. Every such setting, at every level, is
// listed by MachineReach, from two typed sources and nowhere else:
//
//   - the settings keys the host acts on (machineKeys), read topology-wide
//     and in every component's config, a tenant's own wasm components'
//     included;
//   - the built-in plugins' fields that say so (plugin.Field.Reaches),
//     with their defaults (builtin:http listens without a listen key).
//
// A MachinePolicy decides which of them a topology may use: the daemon
// checks it at submit and apply, and the host process again when it loads
// the topology and when it opens a bolt's dead letters.

// KeyDeadLetter is the setting naming a bolt's dead-letter file.
const KeyDeadLetter = "topology.bolt.dead_letter"

// machineKeys are the settings keys whose value reaches the machine.
var machineKeys = map[string]plugin.Reach{KeyDeadLetter: plugin.ReachPath}

// Reach is one setting of a topology that reaches the machine.
type Reach struct {
	// Component is "" for a topology-wide setting.
	Component string       `json:"component,omitempty"`
	Module    string       `json:"module,omitempty"`
	Field     string       `json:"field"`
	Kind      plugin.Reach `json:"kind"`
	// Value is as the topology has it (a built-in's default if unset),
	// with any password in a URL left out.
	Value string `json:"value"`
	// Resolved is a path resolved against the topology's directory.
	Resolved string `json:"-"`
}

// Where names the setting for an error: its component (or the topology)
// and its field.
func (r Reach) Where() string {
	if r.Component == "" {
		return fmt.Sprintf("topology setting %q", r.Field)
	}
	return fmt.Sprintf("component %s (%s): config %q", r.Component, r.Module, r.Field)
}

// MachineReach lists every setting of t that reaches the machine, in a
// stable order: the topology's settings, then each component's.
func MachineReach(t *ardea.Topology, env *plugin.Environment) []Reach {
	var out []Reach
	add := func(r Reach, v string) {
		if v == "" {
			return
		}
		r.Value, r.Resolved = redactURL(v), v
		if r.Kind == plugin.ReachPath {
			r.Resolved = t.Path(v)
		}
		out = append(out, r)
	}
	for _, k := range sortedKeys(machineKeys) {
		add(Reach{Field: k, Kind: machineKeys[k]}, t.Config[k])
	}
	for _, c := range t.Components {
		for _, k := range sortedKeys(machineKeys) {
			add(Reach{Component: c.Name, Module: c.Module, Field: k, Kind: machineKeys[k]}, c.Config[k])
		}
		name, ok := strings.CutPrefix(c.Module, ardea.BuiltinPrefix)
		if !ok || env == nil {
			continue
		}
		spec, ok := env.Lookup(plugin.Kind(c.Kind), name)
		if !ok {
			continue
		}
		for _, f := range spec.Fields {
			if f.Reaches() == plugin.ReachNone {
				continue
			}
			v, set := c.Config[f.Name]
			if !set {
				v = f.Default
			}
			add(Reach{Component: c.Name, Module: c.Module, Field: f.Name, Kind: f.Reaches()}, v)
		}
	}
	return out
}

func sortedKeys(m map[string]plugin.Reach) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// redactURL leaves a URL's password out (it is recorded and printed).
func redactURL(v string) string {
	if !strings.Contains(v, "@") || !strings.Contains(v, "://") {
		return v
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// MachinePolicy is what a topology's settings may reach. The zero value
// allows everything: `ardea run`, and the daemon's default tenant (the
// operator's own). A confined policy (another tenant under the daemon)
// allows only what the admin allowed that tenant in the deployment file.
type MachinePolicy struct {
	Confined bool   `json:"confined,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	// Paths: absolute files or directories (everything under them).
	Paths []string `json:"paths,omitempty"`
	// Addresses: host:port patterns (path.Match: "*.corp.example:9092",
	// "10.0.0.7:*") for listen addresses, brokers and URLs' hosts.
	Addresses []string `json:"addresses,omitempty"`
	// Builtins: built-ins allowed whole (security.tenant_builtins).
	Builtins []string `json:"builtins,omitempty"`
	// DeadLetterStream: the JetStream stream of the tenant's NATS account
	// a confined topology's bolts' dead letters go to (the daemon makes it,
	// names.DeadLetterStream; they count against the tenant's JetStream
	// disk quota). It takes precedence over DeadLetterDir.
	DeadLetterStream string `json:"dead_letter_stream,omitempty"`
	// DeadLetterDir: without a stream (a daemon without NATS accounts, a
	// host started without a policy), the directory a confined topology's
	// bolts' dead letters go to (the daemon's choice, in the tenant's
	// space); both "": none.
	DeadLetterDir string `json:"dead_letter_dir,omitempty"`
}

// MachinePolicyEnv is the variable of a host process's environment that
// hands it its tenant's policy (MachinePolicy.Env, JSON). The environment
// is its owner's to read (/proc/<pid>/environ is 0400), the command line
// every local user's (/proc/<pid>/cmdline): the policy is no secret, but
// it names the paths and addresses the admin allowed a tenant, so it is
// never a flag.
const MachinePolicyEnv = "ARDEA_MACHINE_POLICY"

// Env is p as an entry of a host process's environment
// (MachinePolicyEnv=JSON).
func (p MachinePolicy) Env() (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("machine policy: %w", err)
	}
	return MachinePolicyEnv + "=" + string(b), nil
}

// ErrMachine marks a setting the machine policy refuses.
var ErrMachine = errors.New("reaches the daemon's machine")

// Check refuses the first of rs the policy does not allow, naming its
// component, its field and what allows it.
func (p MachinePolicy) Check(rs []Reach) error {
	for _, r := range rs {
		if p.Allows(r) {
			continue
		}
		how := "security.tenant_allow." + p.Tenant + ".addresses"
		if r.Kind == plugin.ReachPath {
			how = "security.tenant_allow." + p.Tenant + ".paths"
		}
		if b, ok := strings.CutPrefix(r.Module, ardea.BuiltinPrefix); ok && r.Component != "" && !strings.HasPrefix(r.Field, "topology.") {
			how += fmt.Sprintf(" allows it or security.tenant_builtins lists %q", b)
		} else {
			how += " allows it"
		}
		return fmt.Errorf("%s = %q (%s) %w; tenant %s may use it only if the deployment file's %s",
			r.Where(), r.Value, reachNames[r.Kind], ErrMachine, p.Tenant, how)
	}
	return nil
}

// reachNames say what a value of each kind is, in an error.
var reachNames = map[plugin.Reach]string{plugin.ReachPath: "a path", plugin.ReachListen: "an address to listen on",
	plugin.ReachURL: "a URL", plugin.ReachBrokers: "brokers", plugin.ReachAddress: "an address"}

// Allows says whether the policy allows r.
func (p MachinePolicy) Allows(r Reach) bool {
	if !p.Confined {
		return true
	}
	if b, ok := strings.CutPrefix(r.Module, ardea.BuiltinPrefix); ok && r.Component != "" &&
		!strings.HasPrefix(r.Field, "topology.") && slices.Contains(p.Builtins, b) {
		return true
	}
	switch r.Kind {
	case plugin.ReachPath:
		return p.allowsPath(r.Resolved)
	case plugin.ReachListen, plugin.ReachAddress:
		return p.allowsAddr(r.Resolved)
	case plugin.ReachBrokers:
		return p.allowsEach(r.Resolved, func(s string) string { return s })
	case plugin.ReachURL:
		return p.allowsEach(r.Resolved, urlAddr)
	}
	return false
}

// allowsPath: an absolute path equal to or under an allowed one (after
// cleaning: "/srv/a/../b" is "/srv/b"). A relative path is refused: the
// daemon's working directory is not the tenant's.
func (p MachinePolicy) allowsPath(v string) bool {
	if !filepath.IsAbs(v) {
		return false
	}
	v = filepath.Clean(v)
	for _, a := range p.Paths {
		a = filepath.Clean(a)
		if v == a || strings.HasPrefix(v, strings.TrimSuffix(a, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (p MachinePolicy) allowsAddr(hostport string) bool {
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return false
	}
	for _, pat := range p.Addresses {
		if ok, _ := path.Match(pat, hostport); ok {
			return true
		}
	}
	return false
}

// allowsEach: every comma-separated item, as addr makes it host:port.
func (p MachinePolicy) allowsEach(v string, addr func(string) string) bool {
	items := strings.Split(v, ",")
	for _, it := range items {
		if !p.allowsAddr(addr(strings.TrimSpace(it))) {
			return false
		}
	}
	return len(items) > 0
}

// defaultPorts are the ports of URLs that name none.
var defaultPorts = map[string]string{"nats": "4222", "tls": "4222", "pulsar": "6650", "pulsar+ssl": "6651", "http": "80", "https": "443"}

// urlAddr is a URL's host:port ("" if it has no host).
func urlAddr(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), defaultPorts[u.Scheme])
	}
	return u.Host
}

// CheckPattern checks an allowed address pattern (host:port, with
// path.Match wildcards).
func CheckPattern(pat string) error {
	if _, err := path.Match(pat, ""); err != nil {
		return fmt.Errorf("%q: %w", pat, err)
	}
	if _, _, err := net.SplitHostPort(pat); err != nil {
		return fmt.Errorf("%q: want host:port (wildcards allowed: *.example.com:9092, 10.0.0.7:*)", pat)
	}
	return nil
}

// DeadLetterPlace is where a bolt's given-up tuples go: a JSON-lines
// file, or a subject of a JetStream stream in the tenant's account (one
// message per tuple, on Subject.<hash>). The zero value: none.
type DeadLetterPlace struct {
	File    string
	Stream  string
	Subject string // names.DeadLetterSubject without the hash
}

// None says the bolt keeps no dead letters.
func (d DeadLetterPlace) None() bool { return d.File == "" && d.Stream == "" }

// String names the place in a message.
func (d DeadLetterPlace) String() string {
	if d.Stream != "" {
		return "stream " + d.Stream + " subject " + d.Subject + ".<hash>"
	}
	return d.File
}

// BoltDeadLetter is where component c's given-up tuples go (None: it
// keeps none). Unconfined, it is the file topology.bolt.dead_letter
// (relative to the topology file). Confined, it is that file only if the
// policy allows its path, else the daemon's place in the tenant's space:
// its stream (DeadLetterStream, names.DeadLetterSubject), or without one
// the file DeadLetterDir/<topology>/<component>.jsonl. Never a path the
// tenant names without the admin's leave.
func (p MachinePolicy) BoltDeadLetter(t *ardea.Topology, c *ardea.Component) (DeadLetterPlace, error) {
	v, where, ok := Lookup(t, c, KeyDeadLetter)
	named := ok && v != ""
	if !p.Confined {
		if named {
			return DeadLetterPlace{File: t.Path(v)}, nil
		}
		return DeadLetterPlace{}, nil
	}
	if named {
		r := Reach{Component: c.Name, Module: c.Module, Field: KeyDeadLetter, Kind: plugin.ReachPath, Value: v, Resolved: t.Path(v)}
		if strings.HasPrefix(where, "topology ") {
			r.Component, r.Module = "", ""
		}
		if err := p.Check([]Reach{r}); err != nil {
			return DeadLetterPlace{}, err
		}
		return DeadLetterPlace{File: r.Resolved}, nil
	}
	if p.DeadLetterStream != "" {
		return DeadLetterPlace{Stream: p.DeadLetterStream, Subject: names.DeadLetterSubject(p.Tenant, t.Name, c.Name)}, nil
	}
	if p.DeadLetterDir == "" {
		return DeadLetterPlace{}, nil
	}
	return DeadLetterPlace{File: filepath.Join(p.TopologyDeadLetters(t.Name), fileName(c.Name)+".jsonl")}, nil
}

// TopologyDeadLetters is the directory of the daemon's place that holds
// topology's bolts' dead letters ("" if the policy has none).
func (p MachinePolicy) TopologyDeadLetters(topology string) string {
	if p.DeadLetterDir == "" {
		return ""
	}
	return filepath.Join(p.DeadLetterDir, fileName(topology))
}

// fileName makes a name one path element (names are checked elsewhere;
// this holds whatever they are).
func fileName(s string) string {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
		return fmt.Sprintf("%x", s)
	}
	return s
}
