package natsauth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// The environment that hands a credential to a process (never its command
// line): EnvCreds is the path of a creds file (WriteCreds), EnvCredsData
// the creds file's content instead, EnvInbox the inbox prefix the
// credential allows (a host's; empty: the default _INBOX).
const (
	EnvCreds     = "ARDEA_NATS_CREDS"
	EnvCredsData = "ARDEA_NATS_CREDS_DATA"
	EnvInbox     = "ARDEA_NATS_INBOX"
)

// Creds is a user credential: its JWT, its seed (the secret), its public
// key, and the inbox prefix its permissions allow ("" for the default).
type Creds struct {
	JWT         string
	Seed        string
	User        string
	InboxPrefix string
}

// String hides the secret (a Creds printed in a log line shows only the
// user's public key).
func (c Creds) String() string { return "natsauth.Creds{User: " + c.User + "}" }

// Bytes is the standard NATS creds file content (the JWT and the seed).
func (c Creds) Bytes() ([]byte, error) {
	b, err := jwt.FormatUserConfig(c.JWT, []byte(c.Seed))
	if err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	return b, nil
}

// Options are the nats.Options to connect with this credential.
func (c Creds) Options() []nats.Option {
	o := []nats.Option{nats.UserJWTAndSeed(c.JWT, c.Seed)}
	if c.InboxPrefix != "" {
		o = append(o, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	return o
}

// WriteCreds writes c's creds file at path with mode 0600 (its directory,
// created if missing, 0700), replacing any file there.
func WriteCreds(path string, c Creds) error {
	b, err := c.Bytes()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("natsauth: %w", err)
	}
	if err := auth.WriteSecretFile(path, b); err != nil {
		return fmt.Errorf("natsauth: %w", err)
	}
	return nil
}

// Env is what a process started with c needs in its environment: the creds
// file's path (written by WriteCreds) and the inbox prefix.
func Env(path string, c Creds) []string {
	env := []string{EnvCreds + "=" + path}
	if c.InboxPrefix != "" {
		env = append(env, EnvInbox+"="+c.InboxPrefix)
	}
	return env
}

// ParseCreds reads a creds file's content (and the inbox prefix to use).
func ParseCreds(b []byte, inbox string) (Creds, error) {
	token, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return Creds{}, fmt.Errorf("natsauth: creds: %w", err)
	}
	kp, err := jwt.ParseDecoratedUserNKey(b)
	if err != nil {
		return Creds{}, fmt.Errorf("natsauth: creds: %w", err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return Creds{}, fmt.Errorf("natsauth: creds: %w", err)
	}
	if uc.Subject != pub {
		return Creds{}, errors.New("natsauth: creds: the seed is not the JWT's user")
	}
	return Creds{JWT: token, Seed: string(seed), User: pub, InboxPrefix: inbox}, nil
}

// ReadCreds reads a creds file.
func ReadCreds(path, inbox string) (Creds, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Creds{}, fmt.Errorf("natsauth: %w", err)
	}
	return ParseCreds(b, inbox)
}

// ClientOptionsFromEnv returns the nats.Options of the credential in the
// environment (EnvCreds or EnvCredsData, and EnvInbox), read once, and
// nil when neither is set (a server without operator mode). It removes
// EnvCredsData from the process's environment once read.
func ClientOptionsFromEnv() ([]nats.Option, error) {
	inbox := os.Getenv(EnvInbox)
	if path := os.Getenv(EnvCreds); path != "" {
		c, err := ReadCreds(path, inbox)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvCreds, err)
		}
		return c.Options(), nil
	}
	if data := os.Getenv(EnvCredsData); data != "" {
		os.Unsetenv(EnvCredsData)
		c, err := ParseCreds([]byte(data), inbox)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvCredsData, err)
		}
		return c.Options(), nil
	}
	return nil, nil
}
