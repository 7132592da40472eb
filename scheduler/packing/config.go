package packing

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea"
)

// Topology-level config keys (docs/packing.md).
const (
	keyAlgorithm      = "topology.packing.algorithm"
	keyFFDSort        = "topology.packing.ffd.sort"
	KeyContainers     = "topology.packing.containers"
	keyMaxCPU         = "topology.container.max.cpu"
	keyMaxRAM         = "topology.container.max.ram"
	keyMaxDisk        = "topology.container.max.disk"
	keyMaxInstances   = "topology.container.max.instances"
	keyPaddingPercent = "topology.container.padding.percentage"
	keyPaddingCPU     = "topology.container.padding.cpu"
	keyPaddingRAM     = "topology.container.padding.ram"
	keyPaddingDisk    = "topology.container.padding.disk"
	// Default per-instance resources; a component's resources.* overrides.
	keyInstanceCPU  = "topology.resources.cpu"
	keyInstanceRAM  = "topology.resources.ram"
	keyInstanceDisk = "topology.resources.disk"
)

// Component config keys.
const (
	keyCPU  = "resources.cpu"
	keyRAM  = "resources.ram"
	keyDisk = "resources.disk"
)

var (
	maxKeys       = [3]string{keyMaxCPU, keyMaxRAM, keyMaxDisk}
	paddingKeys   = [3]string{keyPaddingCPU, keyPaddingRAM, keyPaddingDisk}
	instanceKeys  = [3]string{keyInstanceCPU, keyInstanceRAM, keyInstanceDisk}
	componentKeys = [3]string{keyCPU, keyRAM, keyDisk}
)

// topologyKeys is every topology-level key this package reads; other keys
// under its prefixes are typos and rejected.
var topologyKeys = []string{
	keyAlgorithm, keyFFDSort, KeyContainers, keyMaxCPU, keyMaxRAM, keyMaxDisk, keyMaxInstances,
	keyPaddingPercent, keyPaddingCPU, keyPaddingRAM, keyPaddingDisk, keyInstanceCPU, keyInstanceRAM, keyInstanceDisk,
}

var topologyPrefixes = []string{"topology.packing.", "topology.container.", "topology.resources."}

// componentSpec is what requestFromConfig needs of a component.
type componentSpec struct {
	Name        string
	Parallelism int
	// Config is the component's config; resources.cpu, resources.ram and
	// resources.disk are read from it, other keys are ignored.
	Config map[string]string
}

// FromTopology builds the Request of a topology from its config and its
// components' configs (see requestFromConfig).
func FromTopology(t *ardea.Topology) (Request, error) {
	specs := make([]componentSpec, len(t.Components))
	for i, c := range t.Components {
		specs[i] = componentSpec{Name: c.Name, Parallelism: c.Parallelism, Config: c.Config}
	}
	return requestFromConfig(t.Name, t.Config, specs)
}

// requestFromConfig reads the packing keys from a topology's config and its
// components' configs (in topology order). Values are checked here, with an
// error naming the key and the value; Pack checks how they combine. Unknown
// keys under topology.packing., topology.container., topology.resources. and
// a component's resources. are errors (they are typos).
func requestFromConfig(topology string, config map[string]string, components []componentSpec) (Request, error) {
	r := Request{Topology: topology}
	bad := func(component, key, format string, args ...any) error {
		return &packingError{Topology: topology, Component: component, Field: key, Msg: fmt.Sprintf(format, args...), Kind: errInvalid}
	}
	for _, k := range sortedKeys(config) {
		for _, p := range topologyPrefixes {
			if strings.HasPrefix(k, p) && !slices.Contains(topologyKeys, k) {
				return r, bad("", k, "unknown packing setting (see docs/packing.md)")
			}
		}
	}
	st := &r.Settings
	if v, ok := config[keyAlgorithm]; ok {
		st.Algorithm = Algorithm(strings.TrimSpace(v))
		if !slices.Contains(algorithms, st.Algorithm) {
			return r, bad("", keyAlgorithm, "unknown algorithm %q (want round_robin, first_fit_decreasing or resource_compliant_round_robin)", v)
		}
	}
	if v, ok := config[keyFFDSort]; ok {
		st.Sort = SortBy(strings.TrimSpace(v))
		if st.Sort != sortRAM && st.Sort != sortCPU {
			return r, bad("", keyFFDSort, "unknown sort %q (want ram or cpu)", v)
		}
	}
	var err error
	if st.Containers, err = intKey(config, KeyContainers, 1, math.MaxInt32, bad); err != nil {
		return r, err
	}
	if st.MaxInstances, err = intKey(config, keyMaxInstances, 1, math.MaxInt32, bad); err != nil {
		return r, err
	}
	if st.MaxContainer, err = resourceKeys("", config, maxKeys, false, bad); err != nil {
		return r, err
	}
	if st.Instance, err = resourceKeys("", config, instanceKeys, false, bad); err != nil {
		return r, err
	}
	pad := Padding{Percent: defaultPaddingPercent, Min: defaultPaddingMin}
	if _, ok := config[keyPaddingPercent]; ok {
		if pad.Percent, err = intKey(config, keyPaddingPercent, 0, 100, bad); err != nil {
			return r, err
		}
	}
	setMin, err := resourceKeys("", config, paddingKeys, true, bad)
	if err != nil {
		return r, err
	}
	for d, k := range paddingKeys {
		if _, ok := config[k]; ok {
			switch d {
			case dimCPU:
				pad.Min.CPU = setMin.CPU
			case dimRAM:
				pad.Min.RAM = setMin.RAM
			case dimDisk:
				pad.Min.Disk = setMin.Disk
			}
		}
	}
	st.Padding = &pad

	for _, c := range components {
		for _, k := range sortedKeys(c.Config) {
			if strings.HasPrefix(k, "resources.") && !slices.Contains(componentKeys[:], k) {
				return r, bad(c.Name, k, "unknown resource (want resources.cpu, resources.ram or resources.disk)")
			}
		}
		res, err := resourceKeys(c.Name, c.Config, componentKeys, false, bad)
		if err != nil {
			return r, err
		}
		r.Components = append(r.Components, Component{Name: c.Name, Parallelism: c.Parallelism, Resources: res})
	}
	return r, nil
}

type badFunc func(component, key, format string, args ...any) error

func intKey(config map[string]string, key string, lo, hi int, bad badFunc) (int, error) {
	v, ok := config[key]
	if !ok {
		return 0, nil
	}
	s := strings.TrimSpace(v)
	if key == keyPaddingPercent {
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, bad("", key, "%q: want an integer in %d..%d", v, lo, hi)
	}
	return n, nil
}

// resourceKeys reads CPU, RAM and disk from keys; absent keys give zero.
func resourceKeys(component string, config map[string]string, keys [3]string, zeroOK bool, bad badFunc) (Resources, error) {
	var r Resources
	for d, k := range keys {
		v, ok := config[k]
		if !ok {
			continue
		}
		if d == dimCPU {
			c, err := ParseCPU(v)
			if err != nil || (c == 0 && !zeroOK) {
				return r, bad(component, k, "%q: want a number of cores > 0 such as 0.5, 2 or 500m", v)
			}
			r.CPU = c
			continue
		}
		b, err := ParseBytes(v)
		if err != nil || (b == 0 && !zeroOK) {
			return r, bad(component, k, "%q: want a size > 0 such as 512MiB or 2GiB", v)
		}
		if d == dimRAM {
			r.RAM = b
		} else {
			r.Disk = b
		}
	}
	return r, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// byteUnits maps a unit (lower case) to its size: IEC units are powers of
// 1024, SI units powers of 1000.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kib": kiB, "mib": miB, "gib": giB, "tib": tiB,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// ParseBytes parses a size: a number of bytes, or a number (decimals
// allowed) with a unit: kiB, miB, giB, tiB (powers of 1024) or kB, MB, GB,
// TB (powers of 1000), case-insensitive, spaces allowed: "512MiB",
// "1.5 GiB", "2GB", "1048576". The result is rounded to whole bytes and at
// most 1 PiB.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult, ok := byteUnits[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit KiB, MiB, GiB, TiB, kB, MB, GB or TB", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	b := math.Round(f * float64(mult))
	if b > maxBytes {
		return 0, fmt.Errorf("size %q: more than 1 PiB", s)
	}
	return int64(b), nil
}

// ParseCPU parses a number of cores: "2", "0.5", or millicores "500m".
func ParseCPU(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(t, "m") {
		t, div = strings.TrimSpace(strings.TrimSuffix(t, "m")), 1000
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f/div > maxCPU {
		return 0, fmt.Errorf("cpu %q: want a number of cores such as 0.5, 2 or 500m", s)
	}
	return f / div, nil
}

// FormatBytes prints a size in the largest binary unit it reaches, with at
// most two decimals: "512 MiB", "1.5 GiB", "100 B".
func FormatBytes(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"TiB", tiB}, {"GiB", giB}, {"MiB", miB}, {"KiB", kiB}}
	for _, u := range units {
		if n >= u.size || -n >= u.size {
			return strconv.FormatFloat(math.Round(float64(n)/float64(u.size)*100)/100, 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}

// FormatCPU prints a number of cores: "1", "0.5", "2.25".
func FormatCPU(c float64) string {
	return strconv.FormatFloat(math.Round(c*1000)/1000, 'f', -1, 64)
}
