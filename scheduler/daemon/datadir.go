package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dataDirMode is the mode of the data dir and of every folder the daemon
// and its hosts make in it; their files are 0600. Everything there is the
// owner's only: container logs hold tenants' guest output, exceptions and
// failed tuples; creds, nats-auth and tls hold keys; nats holds every
// tenant's JetStream data.
const dataDirMode fs.FileMode = 0o700

// The data dir's folders the daemon makes (others: nats-auth, creds and
// tls, made by their packages 0700 too).
const (
	natsDir  = "nats"
	logsDir  = "logs"
	cacheSub = "wazero"
)

// secureDataDir makes the data dir and the daemon's folders in it (and the
// compilation cache's) mode 0700, and tightens what an older version made
// looser: the data dir itself, and under the daemon's own folders every
// directory to 0700 and file to 0600 at most. Other files a user keeps
// in the data dir are left as they are (the data dir's mode already keeps
// other users out).
func secureDataDir(dataDir, cacheDir string) error {
	if err := os.MkdirAll(dataDir, dataDirMode); err != nil {
		return fmt.Errorf("local: data dir: %w", err)
	}
	if err := tighten(dataDir); err != nil {
		return fmt.Errorf("local: data dir: %w", err)
	}
	cache := filepath.Join(cacheDir, cacheSub)
	for _, dir := range []string{filepath.Join(dataDir, natsDir), filepath.Join(dataDir, logsDir), cache} {
		if err := os.MkdirAll(dir, dataDirMode); err != nil {
			return fmt.Errorf("local: data dir: %w", err)
		}
	}
	for _, name := range []string{natsDir, logsDir, "creds", "nats-auth", "tls", cacheSub} {
		if err := tightenTree(filepath.Join(dataDir, name)); err != nil {
			return fmt.Errorf("local: data dir: %w", err)
		}
	}
	if filepath.Clean(cacheDir) != filepath.Clean(dataDir) {
		// A cache dir of the user's (--cache-dir) may be shared with other
		// runs: tightened as far as it can be.
		_ = tightenTree(cache)
	}
	return nil
}

// tightenTree tightens dir and everything under it; an entry removed
// meanwhile is skipped.
func tightenTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = tighten(path)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
}

// tighten removes the group's and others' permission bits of path (a
// directory or regular file; a symbolic link is left alone).
func tighten(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return os.Chmod(path, fi.Mode().Perm()&^0o077)
}

// logDir holds the containers' log files.
func (d *Daemon) logDir() string { return filepath.Join(d.o.DataDir, logsDir) }
