package packing

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ardea-dev/ardea"
)

func TestRequestFromConfig(t *testing.T) {
	cfg := map[string]string{
		keyAlgorithm:             "first_fit_decreasing",
		keyFFDSort:               "cpu",
		KeyContainers:            "3",
		keyMaxCPU:                "6",
		keyMaxRAM:                "8GiB",
		keyMaxDisk:               "20 GB",
		keyMaxInstances:          "5",
		keyPaddingPercent:        "20%",
		keyPaddingRAM:            "256MiB",
		keyPaddingDisk:           "0",
		keyInstanceCPU:           "500m",
		keyInstanceRAM:           "1.5GiB",
		"topology.max.keygroups": "128", // not ours: ignored
	}
	specs := []componentSpec{
		{Name: "lines", Parallelism: 1, Config: map[string]string{"path": "x"}},
		{Name: "count", Parallelism: 4, Config: map[string]string{keyCPU: "2", keyRAM: "512MiB", keyDisk: "1048576"}},
	}
	got, err := requestFromConfig("wc", cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	want := Request{
		Topology: "wc",
		Components: []Component{
			{Name: "lines", Parallelism: 1},
			{Name: "count", Parallelism: 4, Resources: Resources{CPU: 2, RAM: 512 * miB, Disk: miB}},
		},
		Settings: Settings{
			Algorithm: firstFitDecreasing, Sort: sortCPU, Containers: 3,
			Instance:     Resources{CPU: 0.5, RAM: 1536 * miB},
			MaxContainer: Resources{CPU: 6, RAM: 8 * giB, Disk: 20e9},
			MaxInstances: 5,
			Padding:      &Padding{Percent: 20, Min: Resources{CPU: 1, RAM: 256 * miB}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v %+v\nwant %+v %+v", got, *got.Settings.Padding, want, *want.Settings.Padding)
	}

	// Nothing set: Heron's defaults, round robin into one container.
	got, err = requestFromConfig("wc", nil, []componentSpec{{Name: "a", Parallelism: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Pack(got)
	if err != nil {
		t.Fatal(err)
	}
	if p.Algorithm != roundRobin || len(p.Containers) != 1 || p.Containers[0].Resources != (Resources{CPU: 3, RAM: 3 * giB, Disk: 3 * giB}) {
		t.Fatalf("default plan %+v", p)
	}
}

func TestRequestFromConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  map[string]string
		comp map[string]string
		want string
	}{
		{map[string]string{keyAlgorithm: "roundrobin"}, nil,
			`topology wc: topology.packing.algorithm: unknown algorithm "roundrobin" (want round_robin, first_fit_decreasing or resource_compliant_round_robin)`},
		{map[string]string{keyFFDSort: "disk"}, nil, `topology wc: topology.packing.ffd.sort: unknown sort "disk" (want ram or cpu)`},
		{map[string]string{KeyContainers: "0"}, nil, `topology wc: topology.packing.containers: "0": want an integer in 1..2147483647`},
		{map[string]string{KeyContainers: "two"}, nil, `topology wc: topology.packing.containers: "two": want an integer in 1..2147483647`},
		{map[string]string{keyMaxInstances: "0"}, nil, `topology wc: topology.container.max.instances: "0": want an integer in 1..2147483647`},
		{map[string]string{keyPaddingPercent: "150"}, nil, `topology wc: topology.container.padding.percentage: "150": want an integer in 0..100`},
		{map[string]string{keyMaxRAM: "8 gigs"}, nil, `topology wc: topology.container.max.ram: "8 gigs": want a size > 0 such as 512MiB or 2GiB`},
		{map[string]string{keyMaxCPU: "0"}, nil, `topology wc: topology.container.max.cpu: "0": want a number of cores > 0 such as 0.5, 2 or 500m`},
		{map[string]string{keyInstanceRAM: "-1GiB"}, nil, `topology wc: topology.resources.ram: "-1GiB": want a size > 0 such as 512MiB or 2GiB`},
		{map[string]string{"topology.container.max.rams": "1GiB"}, nil, `topology wc: topology.container.max.rams: unknown packing setting (see docs/packing.md)`},
		{map[string]string{"topology.packing.algoritm": "round_robin"}, nil, `topology wc: topology.packing.algoritm: unknown packing setting (see docs/packing.md)`},
		{nil, map[string]string{keyCPU: "0"}, `topology wc: component count: resources.cpu: "0": want a number of cores > 0 such as 0.5, 2 or 500m`},
		{nil, map[string]string{keyRAM: "0MiB"}, `topology wc: component count: resources.ram: "0MiB": want a size > 0 such as 512MiB or 2GiB`},
		{nil, map[string]string{keyDisk: "2PB"}, `topology wc: component count: resources.disk: "2PB": want a size > 0 such as 512MiB or 2GiB`},
		{nil, map[string]string{"resources.memory": "1GiB"}, `topology wc: component count: resources.memory: unknown resource (want resources.cpu, resources.ram or resources.disk)`},
	}
	for _, tc := range tests {
		_, err := requestFromConfig("wc", tc.cfg, []componentSpec{{Name: "count", Parallelism: 1, Config: tc.comp}})
		if err == nil || !errors.Is(err, errInvalid) || err.Error() != tc.want {
			t.Errorf("%v %v:\n got %v\nwant %s", tc.cfg, tc.comp, err, tc.want)
		}
	}
}

func TestFromTopology(t *testing.T) {
	top := &ardea.Topology{
		Name:   "wc",
		Config: map[string]string{keyAlgorithm: "resource_compliant_round_robin", KeyContainers: "2"},
		Components: []*ardea.Component{
			{Name: "lines", Kind: ardea.Spout, Parallelism: 1},
			{Name: "count", Kind: ardea.Bolt, Parallelism: 3, Config: map[string]string{keyRAM: "2GiB"}},
		},
	}
	req, err := FromTopology(top)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Pack(req)
	if err != nil {
		t.Fatal(err)
	}
	// Default limit 5 giB with 1 giB padding: 4 giB of instances.
	if got, want := shape(p), []string{"lines/0 count/1", "count/0 count/2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseBytes(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1048576": miB, "512MiB": 512 * miB, "512 mib": 512 * miB, "1.5GiB": 1536 * miB, "2GB": 2e9,
		"1kB": 1000, "1KiB": kiB, "3 TiB": 3 * tiB, "100b": 100, " 2GiB ": 2 * giB,
	}
	for in, want := range good {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1.2.3MiB", "1 gig", "-5", "2PiB", "1e3", "5M"} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseCPUAndFormat(t *testing.T) {
	for in, want := range map[string]float64{"2": 2, "0.5": 0.5, "500m": 0.5, "1500m": 1.5, " 0.25 ": 0.25} {
		if got, err := ParseCPU(in); err != nil || got != want {
			t.Errorf("ParseCPU(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "two", "NaN", "1e9"} {
		if _, err := ParseCPU(in); err == nil {
			t.Errorf("ParseCPU(%q) succeeded", in)
		}
	}
	for in, want := range map[int64]string{100: "100 B", kiB: "1 KiB", 512 * miB: "512 MiB", 1536 * miB: "1.5 GiB", 5 * giB: "5 GiB", 20e9: "18.63 GiB", 2 * tiB: "2 TiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
	if got := FormatCPU(0.1 + 0.2); got != "0.3" {
		t.Errorf("FormatCPU(0.1+0.2) = %q", got)
	}
}
