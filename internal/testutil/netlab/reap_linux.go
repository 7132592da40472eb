package netlab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockDir holds one lock file per subnet in use, XXXX.lock: a lab holds
// an exclusive flock(2) on its file for as long as it lives, and the
// kernel drops the lock when its process dies, however it dies. So a
// subnet whose lock can be taken belongs to no live lab, and namespaces
// named after it are leftovers of a test binary that was killed (a test
// timeout exits without running cleanups).
const lockDir = "/run/ardea-netlab"

// tryLock takes the lock of subnet id: the open, locked file, or nil if a
// live lab holds it.
func tryLock(id string) (*os.File, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("netlab: %v", err)
	}
	path := filepath.Join(lockDir, id+".lock")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("netlab: %v", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("netlab: locking %s: %v", path, err)
		}
		// The holder before us may have removed the file between our
		// open and our lock (unlock removes it): then the lock is on a
		// file nobody else will open, and we start again.
		var held, named unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &named) != nil ||
			held.Dev != named.Dev || held.Ino != named.Ino {
			f.Close()
			continue
		}
		f.Truncate(0)
		fmt.Fprintf(f, "%d\n", os.Getpid())
		return f, nil
	}
}

// unlock removes the lock file, then drops the lock (in that order: see
// tryLock).
func unlock(f *os.File) {
	os.Remove(f.Name())
	f.Close()
}

var labName = regexp.MustCompile(`^` + namePrefix + `([0-9a-f]{4})-(hub|n[0-9]+)$`)

// labNamespaces lists the namespaces of subnet id, or of every subnet
// for "".
func labNamespaces(id string) []string {
	entries, _ := os.ReadDir(netnsDir)
	var names []string
	for _, e := range entries {
		if m := labName.FindStringSubmatch(e.Name()); m != nil && (id == "" || m[1] == id) {
			names = append(names, e.Name())
		}
	}
	return names
}

// reapStale removes the namespaces of every subnet no live lab holds and
// returns their names.
func reapStale(ipPath string) []string {
	byID := map[string][]string{}
	for _, name := range labNamespaces("") {
		id := labName.FindStringSubmatch(name)[1]
		byID[id] = append(byID[id], name)
	}
	var reaped []string
	for id, names := range byID {
		lock, err := tryLock(id)
		if err != nil || lock == nil {
			continue
		}
		if removeNamespaces(ipPath, names) == nil {
			reaped = append(reaped, names...)
		}
		unlock(lock)
	}
	slices.Sort(reaped)
	return reaped
}

// nsID identifies a namespace: the device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

func statNS(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// pidsIn returns the processes (but this one) whose network namespace is
// one of want. A zombie has left its namespaces: it is not listed.
func pidsIn(want map[nsID]bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if id, err := statNS("/proc/" + e.Name() + "/ns/net"); err == nil && want[id] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeNamespaces kills every process in the named namespaces, waits
// for them to be gone, and deletes the namespaces; once nothing refers to
// a namespace any more (no process, no open socket, no bind mount) the
// kernel frees it with its interfaces.
func removeNamespaces(ipPath string, names []string) error {
	want := map[nsID]bool{}
	var present []string
	for _, name := range names {
		if id, err := statNS(netnsDir + "/" + name); err == nil {
			want[id] = true
			present = append(present, name)
		}
	}
	if len(present) == 0 {
		return nil
	}
	var errs []error
	deadline := time.Now().Add(killWait)
	for {
		pids := pidsIn(want)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("processes %v are still in the lab's namespaces after SIGKILL and %v", pids, killWait))
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond) // polling for the kills to take effect
	}
	var script bytes.Buffer
	for _, name := range present {
		fmt.Fprintf(&script, "netns del %s\n", name)
	}
	cmd := exec.Command(ipPath, "-force", "-batch", "-")
	cmd.Stdin = &script
	if out, err := cmd.CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("ip netns del: %v: %s", err, strings.TrimSpace(string(out))))
	}
	for _, name := range present {
		if _, err := os.Lstat(netnsDir + "/" + name); err == nil {
			errs = append(errs, fmt.Errorf("namespace %s is still there", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("netlab: removing %s: %w", strings.Join(present, " "), err)
	}
	return nil
}
