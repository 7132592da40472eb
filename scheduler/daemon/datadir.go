package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Everything the daemon and its hosts create under the data dir is the
// owner's only: container logs hold tenants' guest output, exceptions and
// failed tuples; creds, nats-auth and tls hold keys; nats holds every
// tenant's JetStream data.
const (
	dataDirMode  fs.FileMode = 0o700
	dataFileMode fs.FileMode = 0o600
)

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
	own := []string{filepath.Join(dataDir, natsDir), filepath.Join(dataDir, logsDir), filepath.Join(cacheDir, cacheSub)}
	for _, dir := range own {
		if err := os.MkdirAll(dir, dataDirMode); err != nil {
			return fmt.Errorf("local: data dir: %w", err)
		}
	}
	for _, name := range []string{"creds", "nats-auth", "tls", cacheSub} {
		own = append(own, filepath.Join(dataDir, name))
	}
	for _, dir := range own {
		err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return tighten(path)
		})
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("local: data dir: %w", err)
		}
	}
	return nil
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
