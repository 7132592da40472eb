package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// HistoryEntry is one line of a benchmark history file
// (docs/bench-history.jsonl): what ran, where, on which commit, and its
// figures, so a regression shows against the lines before it.
type HistoryEntry struct {
	Date    string   `json:"date"`
	Commit  string   `json:"commit,omitempty"`
	Dirty   bool     `json:"dirty,omitempty"` // built from a tree with changes not committed
	Machine Machine  `json:"machine"`
	Bench   string   `json:"bench"`
	Args    []string `json:"args,omitempty"`
	Result  any      `json:"result"`
}

// Machine is where a benchmark ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	MemBytes  int64  `json:"mem_bytes,omitempty"`
	OS        string `json:"os"`
	GoVersion string `json:"go_version"`
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemBytes = kb * 1024
		}
	}
	return m
}

// buildCommit is the commit the binary was built from (the Go
// toolchain's VCS stamp), else the working directory's checkout's HEAD.
func buildCommit() (string, bool) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, dirty
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), len(bytes.TrimSpace(st)) > 0
}

// Record appends an entry for bench's result to the history file at
// path (created if missing).
func Record(path, bench string, args []string, result any) error {
	commit, dirty := buildCommit()
	e := HistoryEntry{Date: time.Now().UTC().Format(time.RFC3339), Commit: commit, Dirty: dirty,
		Machine: ThisMachine(), Bench: bench, Args: args, Result: result}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("bench history: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("bench history %s: %w", path, err)
	}
	return f.Close()
}
