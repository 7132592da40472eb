package auth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AdminTokenFile is the name of the bootstrap admin token's file in the
// daemon's data directory.
const AdminTokenFile = "admin.token"

// Bootstrapped is what Bootstrap did.
type Bootstrapped struct {
	// Token is the admin token ("ardea_<id>_<secret>").
	Token string
	// Path is the file holding it, mode 0600.
	Path string
	// Minted is true when Bootstrap made a new token (first start, or the
	// file's token was no longer valid), false when it reused the file's.
	Minted bool
	// Tenant is true when Bootstrap created the default tenant.
	Tenant bool
}

// Bootstrap makes sure an operator can reach a daemon from its first
// start: it creates the default tenant if it is missing, and returns an
// admin token written to <dataDir>/admin.token (mode 0600; dataDir is
// created mode 0700 if missing). On a later start it reuses the file's
// token while it still authenticates with scope admin; otherwise (the
// file is missing, unreadable, or its token was revoked, expired or
// belongs to a bucket that was wiped) it mints a new one (named
// "bootstrap", never expiring) and replaces the file. A file with a
// looser mode is tightened to 0600.
func (s *Store) Bootstrap(ctx context.Context, dataDir string) (Bootstrapped, error) {
	return s.bootstrap(ctx, dataDir, false)
}

// BootstrapShared is Bootstrap for a node of a cluster, whose nodes share
// the store: the node that creates the default tenant mints the admin
// token and writes it to its data dir, as a daemon alone does; another
// node reuses a token file of its own if it has one, and mints none
// otherwise (Token is then empty: the first node's file holds the
// cluster's admin token, and every node accepts it). A cluster whose
// store holds no bootstrap token at all (the first node died before it
// minted) gets one from the next node that starts.
func (s *Store) BootstrapShared(ctx context.Context, dataDir string) (Bootstrapped, error) {
	return s.bootstrap(ctx, dataDir, true)
}

func (s *Store) bootstrap(ctx context.Context, dataDir string, shared bool) (Bootstrapped, error) {
	out := Bootstrapped{Path: filepath.Join(dataDir, AdminTokenFile)}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return out, fmt.Errorf("auth: bootstrap: %w", err)
	}
	if _, err := s.CreateTenant(ctx, AdminTenant, "bootstrap"); err == nil {
		out.Tenant = true
	} else if !errors.Is(err, ErrExists) {
		return out, fmt.Errorf("auth: bootstrap: %w", err)
	}
	b, err := os.ReadFile(out.Path)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		p, aerr := s.Authenticate(ctx, tok)
		if aerr == nil && p.Scope == ScopeAdmin {
			if err := os.Chmod(out.Path, 0o600); err != nil {
				return out, fmt.Errorf("auth: bootstrap: %w", err)
			}
			out.Token = tok
			return out, nil
		}
		if aerr != nil && !errors.Is(aerr, ErrUnauthenticated) {
			return out, fmt.Errorf("auth: bootstrap: check %s: %w", out.Path, aerr)
		}
		s.log.Info("the admin token file's token is no longer valid; minting a new one", "path", out.Path)
	case errors.Is(err, fs.ErrNotExist):
	default:
		return out, fmt.Errorf("auth: bootstrap: %w", err)
	}
	if shared && !out.Tenant {
		// Another node made the default tenant and mints the token right
		// after: wait for it (sharedMintWait at most; one that died
		// before minting leaves none, and this node mints it then).
		deadline := time.Now().Add(sharedMintWait)
		for {
			minted, err := s.hasBootstrapToken(ctx)
			if err != nil {
				return out, fmt.Errorf("auth: bootstrap: %w", err)
			}
			if minted {
				// Another node's: its data dir holds it.
				out.Path = ""
				return out, nil
			}
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return out, fmt.Errorf("auth: bootstrap: %w", ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	_, tok, err := s.CreateToken(ctx, TokenSpec{Tenant: AdminTenant, Scope: ScopeAdmin, Name: "bootstrap", By: "bootstrap"})
	if err != nil {
		return out, fmt.Errorf("auth: bootstrap: %w", err)
	}
	if err := WriteSecretFile(out.Path, []byte(tok+"\n")); err != nil {
		return out, fmt.Errorf("auth: bootstrap: %w", err)
	}
	out.Token, out.Minted = tok, true
	return out, nil
}

// WriteSecretFile writes data to path with mode 0600, atomically: a
// temporary file in the same directory (created 0600, so the secret is
// never readable by others, not even briefly), synced, then renamed over
// path.
func WriteSecretFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// sharedMintWait is how long a cluster's node that did not make the
// default tenant waits for the node that did to mint the admin token.
const sharedMintWait = 15 * time.Second

// hasBootstrapToken reports whether an unrevoked bootstrap admin token
// exists.
func (s *Store) hasBootstrapToken(ctx context.Context) (bool, error) {
	toks, err := s.Tokens(ctx, AdminTenant)
	if errors.Is(err, ErrNotFound) {
		// The tenant another node made does not show here yet.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, t := range toks {
		if t.Name == "bootstrap" && t.Scope == ScopeAdmin && t.Revoked.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
