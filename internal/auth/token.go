package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
)

// A token as presented is
//
//	ardea_<id>_<secret>
//
// id is 12 lower-case hex characters (6 random bytes): the key the store
// looks the token up by, shown in lists and logs, not secret. secret is 32
// random bytes in unpadded base64url (43 characters): shown once, when the
// token is created, and stored only as its hash. The fixed prefix lets
// secret scanners (and people) recognise a leaked token.
const (
	TokenPrefix = "ardea_"
	idBytes     = 6
	secretBytes = 32
	idLen       = 2 * idBytes
	secretLen   = 43 // base64.RawURLEncoding.EncodedLen(secretBytes)
	tokenLen    = len(TokenPrefix) + idLen + 1 + secretLen
)

// errMalformed is why a presented token did not parse; callers wrap it in
// ErrUnauthenticated and log it at debug only.
var errMalformed = errors.New("malformed token")

// parseToken splits a presented token into its id and secret bytes. It
// checks the whole shape, so that anything it accepts could have been
// minted by newToken.
func parseToken(tok string) (id string, secret []byte, err error) {
	if len(tok) != tokenLen || !strings.HasPrefix(tok, TokenPrefix) {
		return "", nil, errMalformed
	}
	rest := tok[len(TokenPrefix):]
	id, sep, enc := rest[:idLen], rest[idLen], rest[idLen+1:]
	if sep != '_' || !validID(id) {
		return "", nil, errMalformed
	}
	secret, err = base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(secret) != secretBytes {
		return "", nil, errMalformed
	}
	return id, secret, nil
}

// validID reports whether id is a token id: idLen lower-case hex digits.
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidTokenFormat reports whether tok has a token's shape
// (ardea_<id>_<secret>), for a client's check before it sends or saves
// one; only the server can say whether it is valid.
func ValidTokenFormat(tok string) bool {
	_, _, err := parseToken(tok)
	return err == nil
}

// ValidTokenID reports whether id has the shape of a token id (12 hex
// digits), for the API's and the CLI's argument checks.
func ValidTokenID(id string) bool { return validID(id) }

// newToken draws a fresh id and secret and formats the token.
func newToken() (id string, secret []byte, token string, err error) {
	var b [idBytes + secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, "", fmt.Errorf("auth: random token: %w", err)
	}
	id = hex.EncodeToString(b[:idBytes])
	secret = b[idBytes:]
	return id, secret, TokenPrefix + id + "_" + encodeSecret(secret), nil
}

func encodeSecret(secret []byte) string { return base64.RawURLEncoding.EncodeToString(secret) }

// hashSecret is what the store keeps of a token's secret: BLAKE2b-256 of
// a version tag, the id and the secret.
//
// A fast hash is the right one here. A slow password KDF (bcrypt, scrypt,
// argon2) exists to make guessing a low-entropy password expensive; a
// token's secret is 256 bits from crypto/rand, which no guessing reaches,
// so stretching would add only latency to every API call. A preimage of
// BLAKE2b-256 is as hard as guessing the secret. The id in the input ties
// a hash to its record, so a hash copied to another record does not
// verify. Compare hashes with hashEqual (constant time).
func hashSecret(id string, secret []byte) []byte {
	h, _ := blake2b.New256(nil) // no key: cannot fail
	h.Write([]byte("ardea-token-v1\x00"))
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(secret)
	return h.Sum(nil)
}

// hashEqual compares two hashes in constant time.
func hashEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// ParseExpiry parses a token lifetime: a Go duration ("720h", "90m") or a
// number of days ("30d"). "" and "0" mean the token never expires (0).
// A negative lifetime is refused.
func ParseExpiry(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseUint(n, 10, 32)
		if err != nil || days > 100*365 {
			return 0, fmt.Errorf("expiry %q: want a number of days (30d) or a duration (720h)", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("expiry %q: want a number of days (30d) or a duration (720h)", s)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("expiry %q: must not be negative", s)
	}
	return d, nil
}

// MaxTokenNameLen bounds a token's description.
const MaxTokenNameLen = 128

// checkTokenName accepts a token's description: printable text without
// control characters, at most MaxTokenNameLen bytes ("ci", "alice@example.com").
// It reaches logs and the audit log, so nothing that could forge a line.
func checkTokenName(s string) error {
	if len(s) > MaxTokenNameLen {
		return fmt.Errorf("token name is %d bytes long; at most %d", len(s), MaxTokenNameLen)
	}
	if !utf8.ValidString(s) {
		return errors.New("token name is not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("token name %q: only printable characters", s)
		}
	}
	return nil
}

// BearerToken returns the token of a request's "Authorization: Bearer
// <token>" header (the scheme's case does not matter), and whether it had
// one. It reads no cookie and no query parameter.
func BearerToken(h http.Header) (string, bool) {
	v := h.Get("Authorization")
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
