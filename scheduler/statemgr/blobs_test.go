package statemgr

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

func TestArtifacts(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	wasm := []byte("\x00asm\x01\x00\x00\x00 count")
	sum := sha256.Sum256(wasm)
	want := hex.EncodeToString(sum[:])

	sha, err := s.PutArtifact(ctx, "count.wasm", wasm)
	if err != nil {
		t.Fatal(err)
	}
	if sha != want {
		t.Fatalf("key %s, want sha256 %s", sha, want)
	}
	info1, err := s.artifacts.GetInfo(ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	// Same bytes under another name: same key, not written again.
	sha2, err := s.PutArtifact(ctx, "copy.wasm", wasm)
	if err != nil || sha2 != sha {
		t.Fatalf("second put: %s, %v; want %s", sha2, err, sha)
	}
	if info2, _ := s.artifacts.GetInfo(ctx, sha); info2.NUID != info1.NUID {
		t.Errorf("identical content was stored again (nuid %s -> %s)", info1.NUID, info2.NUID)
	}
	// A multi-chunk artifact (object store chunks are 128 KiB).
	big := bytes.Repeat([]byte("0123456789abcdef"), 40_000) // 640 KB
	bigSHA, err := s.PutArtifact(ctx, "big.wasm", big)
	if err != nil {
		t.Fatal(err)
	}
	for sha, data := range map[string][]byte{sha: wasm, bigSHA: big} {
		got, err := s.GetArtifact(ctx, sha)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("get %s: %d bytes, %v; want %d bytes", sha, len(got), err, len(data))
		}
	}
	list, err := s.ListArtifacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("listed %+v, want 2 artifacts", list)
	}
	for _, a := range list {
		switch a.SHA256 {
		case sha:
			if a.Name != "count.wasm" || a.Size != uint64(len(wasm)) {
				t.Errorf("listed %+v, want count.wasm of %d bytes", a, len(wasm))
			}
		case bigSHA:
			if a.Name != "big.wasm" || a.Size != uint64(len(big)) {
				t.Errorf("listed %+v, want big.wasm of %d bytes", a, len(big))
			}
		default:
			t.Errorf("unexpected artifact %+v", a)
		}
	}

	if err := s.DeleteArtifact(ctx, sha); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetArtifact(ctx, sha); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), sha) {
		t.Errorf("get after delete: %v, want ErrNotFound naming the digest", err)
	}
	if err := s.DeleteArtifact(ctx, sha); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	// Put again after delete stores it again.
	if _, err := s.PutArtifact(ctx, "count.wasm", wasm); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetArtifact(ctx, sha); err != nil || !bytes.Equal(got, wasm) {
		t.Errorf("get after re-put: %v", err)
	}
	for _, bad := range []string{"", "abc", strings.ToUpper(sha), strings.Repeat("g", 64)} {
		if _, err := s.GetArtifact(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("get %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestArtifactDigestVerifiedOnRead(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	sum := sha256.Sum256([]byte("the real module"))
	sha := hex.EncodeToString(sum[:])
	// Content stored under a key that is not its digest (corruption, or a
	// writer that bypassed PutArtifact).
	if _, err := s.artifacts.PutBytes(ctx, sha, []byte("something else")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetArtifact(ctx, sha); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("get of mismatching content: %v, want a digest error", err)
	}
}

func TestKeyGroupStateHandoff(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	blob := func(kg int, epoch uint64) []byte { return []byte(fmt.Sprintf("state kg=%d epoch=%d", kg, epoch)) }
	if err := s.PutKeyGroupState(ctx, "wc", "count", 0, 1, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("state for a missing topology: %v, want ErrNotFound", err)
	}
	createTopo(t, s, "wc")
	createTopo(t, s, "wc2")
	for kg := range 4 {
		if err := s.PutKeyGroupState(ctx, "wc", "count", kg, 1, blob(kg, 1)); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte{7}, 3<<20) // 3 MiB, many chunks
	if err := s.PutKeyGroupState(ctx, "wc", "count", 0, 2, big); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKeyGroupState(ctx, "wc", "split", 0, 1, blob(0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKeyGroupState(ctx, "wc2", "count", 0, 1, blob(0, 1)); err != nil {
		t.Fatal(err)
	}
	for kg := range 4 {
		got, err := s.GetKeyGroupState(ctx, "wc", "count", kg, 1)
		if err != nil || !bytes.Equal(got, blob(kg, 1)) {
			t.Errorf("kg %d epoch 1: %q, %v", kg, got, err)
		}
	}
	if got, err := s.GetKeyGroupState(ctx, "wc", "count", 0, 2); err != nil || !bytes.Equal(got, big) {
		t.Errorf("3 MiB blob: %d bytes, %v", len(got), err)
	}
	if _, err := s.GetKeyGroupState(ctx, "wc", "count", 9, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent key group: %v, want ErrNotFound", err)
	}

	if err := s.DeleteKeyGroupStates(ctx, "wc", "count", 1); err != nil {
		t.Fatal(err)
	}
	for kg := range 4 {
		if _, err := s.GetKeyGroupState(ctx, "wc", "count", kg, 1); !errors.Is(err, ErrNotFound) {
			t.Errorf("kg %d epoch 1 after delete: %v, want ErrNotFound", kg, err)
		}
	}
	// Other epochs, components and topologies are untouched.
	for _, k := range []struct {
		topology, component string
		epoch               uint64
	}{{"wc", "count", 2}, {"wc", "split", 1}, {"wc2", "count", 1}} {
		if _, err := s.GetKeyGroupState(ctx, k.topology, k.component, 0, k.epoch); err != nil {
			t.Errorf("%+v: %v", k, err)
		}
	}
	for _, tc := range []struct {
		topology, component string
		kg                  int
	}{{"wc", "a/b", 0}, {"w/c", "count", 0}, {"wc", "count", -1}, {"wc", "", 0}} {
		if err := s.PutKeyGroupState(ctx, tc.topology, tc.component, tc.kg, 1, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("put %+v: %v, want ErrInvalid", tc, err)
		}
	}
}

func TestDeleteTopologyRemovesEverything(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	for _, name := range []string{"wc", "keep"} {
		createTopo(t, s, name)
		if _, err := s.SetState(ctx, name, ExecState{State: api.StateRunning}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutPackingPlan(ctx, name, []byte("pp")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutPhysicalPlan(ctx, name, []byte("phys")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcquireTMLock(ctx, name, "tm-"+name, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.PutKeyGroupState(ctx, name, "count", 3, 7, []byte("s")); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := s.PutArtifact(ctx, "m.wasm", []byte("module"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopology(ctx, "wc"); err != nil {
		t.Fatal(err)
	}
	check := func(topology string, gone bool) {
		t.Helper()
		errs := map[string]error{}
		_, errs["definition"] = s.GetTopology(ctx, topology)
		_, errs["state"] = s.GetState(ctx, topology)
		_, _, errs["packing plan"] = s.GetPackingPlan(ctx, topology)
		_, _, errs["physical plan"] = s.GetPhysicalPlan(ctx, topology)
		_, errs["TM lock"] = s.TMLocation(ctx, topology)
		_, errs["handoff blob"] = s.GetKeyGroupState(ctx, topology, "count", 3, 7)
		for what, err := range errs {
			if gone && !errors.Is(err, ErrNotFound) {
				t.Errorf("%s of %s: %v, want ErrNotFound", what, topology, err)
			}
			if !gone && err != nil {
				t.Errorf("%s of %s: %v", what, topology, err)
			}
		}
	}
	check("wc", true)
	check("keep", false)
	if _, err := s.GetArtifact(ctx, sha); err != nil {
		t.Errorf("artifact deleted with a topology: %v", err)
	}
	if err := s.DeleteTopology(ctx, "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	// The name can be submitted again and starts clean.
	createTopo(t, s, "wc")
	check("keep", false)
	if _, err := s.GetState(ctx, "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("state of re-created topology: %v, want ErrNotFound", err)
	}
}
