// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are the argon2id cost parameters of a password hash.
type PasswordParams struct {
	// Memory is the memory cost in KiB.
	Memory uint32
	// Time is the number of passes over the memory.
	Time uint32
	// Threads is the degree of parallelism.
	Threads uint8
	// KeyLen is the length of the derived key in bytes.
	KeyLen uint32
	// SaltLen is the length of the random salt in bytes.
	SaltLen int
}

// DefaultPasswordParams are the parameters of new password hashes: OWASP's minimum
// recommended argon2id configuration (19 MiB of memory, 2 passes, 1 thread), a 32-byte
// key and a 16-byte salt. Hashes made with other parameters are reported as needing a
// rehash by VerifyPassword.
var DefaultPasswordParams = PasswordParams{Memory: 19456, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}

// Bounds on the parameters of a hash, so that a tampered hash cannot make verification
// exhaust the console's memory or CPU.
const (
	maxPasswordMemory  = 1 << 20 // KiB, that is 1 GiB
	maxPasswordTime    = 10
	maxPasswordThreads = 16
	minPasswordKeyLen  = 16
	maxPasswordKeyLen  = 64
	minPasswordSaltLen = 8
	maxPasswordSaltLen = 64
)

// ErrInvalidPasswordHash is wrapped by the errors of VerifyPassword for a stored hash that
// is malformed, uses another algorithm or version, or has parameters out of bounds.
var ErrInvalidPasswordHash = errors.New("invalid password hash")

// ErrInvalidPasswordParams is wrapped by the error of HashPasswordWith for parameters out
// of bounds.
var ErrInvalidPasswordParams = errors.New("invalid password parameters")

const (
	phcAlgorithm = "argon2id"
	phcVersion   = "v=19"
)

var phcBase64 = base64.RawStdEncoding.Strict()

// HashPassword hashes password with DefaultPasswordParams and a fresh random salt, and
// returns the hash as a PHC string.
func HashPassword(password string) (string, error) {
	return HashPasswordWith(DefaultPasswordParams, password)
}

// HashPasswordWith hashes password with p and a fresh random salt, and returns the hash as
// a PHC string: $argon2id$v=19$m=<memory>,t=<time>,p=<threads>$<salt>$<key>, salt and key
// in unpadded standard base64.
func HashPasswordWith(p PasswordParams, password string) (string, error) {
	if err := p.check(); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: read salt: %w", err)
	}
	key := p.derive(password, salt)
	return encodePHC(p, salt, key), nil
}

// VerifyPassword reports whether password matches the PHC string encoded, and, when it
// does, whether the hash should be replaced by one made with DefaultPasswordParams
// (needsRehash). It returns an error wrapping ErrInvalidPasswordHash, and ok false, when
// encoded is not an argon2id v19 hash with parameters within bounds.
func VerifyPassword(encoded, password string) (ok, needsRehash bool, err error) {
	p, salt, key, err := decodePHC(encoded)
	if err != nil {
		return false, false, fmt.Errorf("verify password: %w", err)
	}
	ok = subtle.ConstantTimeCompare(p.derive(password, salt), key) == 1
	return ok, ok && p != DefaultPasswordParams, nil
}

// derive computes the argon2id key of password and salt.
func (p PasswordParams) derive(password string, salt []byte) []byte {
	return argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
}

// check returns an error wrapping ErrInvalidPasswordParams when p is out of bounds.
func (p PasswordParams) check() error {
	if err := p.checkCost(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPasswordParams, err)
	}
	if p.SaltLen < minPasswordSaltLen || p.SaltLen > maxPasswordSaltLen {
		return fmt.Errorf("%w: salt length %d not in %d..%d",
			ErrInvalidPasswordParams, p.SaltLen, minPasswordSaltLen, maxPasswordSaltLen)
	}
	return nil
}

// checkCost returns an error when the memory, time, threads or key length of p are out of
// bounds.
func (p PasswordParams) checkCost() error {
	switch {
	case p.Threads < 1 || p.Threads > maxPasswordThreads:
		return fmt.Errorf("threads %d not in 1..%d", p.Threads, maxPasswordThreads)
	case p.Memory < 8*uint32(p.Threads) || p.Memory > maxPasswordMemory:
		return fmt.Errorf("memory %d KiB not in %d..%d", p.Memory, 8*uint32(p.Threads), maxPasswordMemory)
	case p.Time < 1 || p.Time > maxPasswordTime:
		return fmt.Errorf("time %d not in 1..%d", p.Time, maxPasswordTime)
	case p.KeyLen < minPasswordKeyLen || p.KeyLen > maxPasswordKeyLen:
		return fmt.Errorf("key length %d not in %d..%d", p.KeyLen, minPasswordKeyLen, maxPasswordKeyLen)
	}
	return nil
}

// encodePHC formats a hash as a PHC string.
func encodePHC(p PasswordParams, salt, key []byte) string {
	return fmt.Sprintf("$%s$%s$m=%d,t=%d,p=%d$%s$%s", phcAlgorithm, phcVersion,
		p.Memory, p.Time, p.Threads, phcBase64.EncodeToString(salt), phcBase64.EncodeToString(key))
}

// decodePHC parses a PHC string strictly: it must be exactly what encodePHC would write
// for the parameters, salt and key it holds, and those must be within bounds.
func decodePHC(encoded string) (PasswordParams, []byte, []byte, error) {
	p, salt, key, err := splitPHC(encoded)
	if err != nil {
		return PasswordParams{}, nil, nil, fmt.Errorf("%w: %w", ErrInvalidPasswordHash, err)
	}
	if err := p.check(); err != nil {
		return PasswordParams{}, nil, nil, fmt.Errorf("%w: %w", ErrInvalidPasswordHash, err)
	}
	if encodePHC(p, salt, key) != encoded {
		return PasswordParams{}, nil, nil, fmt.Errorf("%w: not in canonical form", ErrInvalidPasswordHash)
	}
	return p, salt, key, nil
}

// splitPHC splits a PHC string into its parameters, salt and key.
func splitPHC(encoded string) (PasswordParams, []byte, []byte, error) {
	fields := strings.Split(encoded, "$")
	if len(fields) != 6 || fields[0] != "" {
		return PasswordParams{}, nil, nil, errors.New("want 5 fields separated by $")
	}
	if fields[1] != phcAlgorithm {
		return PasswordParams{}, nil, nil, errors.New("algorithm is not argon2id")
	}
	if fields[2] != phcVersion {
		return PasswordParams{}, nil, nil, errors.New("version is not 19")
	}
	p, err := parsePHCParams(fields[3])
	if err != nil {
		return PasswordParams{}, nil, nil, err
	}
	salt, key, err := decodeSaltAndKey(fields[4], fields[5])
	if err != nil {
		return PasswordParams{}, nil, nil, err
	}
	p.SaltLen, p.KeyLen = len(salt), uint32(len(key))
	return p, salt, key, nil
}

// parsePHCParams parses "m=<memory>,t=<time>,p=<threads>", in that order.
func parsePHCParams(s string) (PasswordParams, error) {
	var values [3]uint64
	names := [3]string{"m", "t", "p"}
	parts := strings.Split(s, ",")
	if len(parts) != len(names) {
		return PasswordParams{}, errors.New("want parameters m, t and p")
	}
	for i, part := range parts {
		v, err := parsePHCParam(part, names[i])
		if err != nil {
			return PasswordParams{}, err
		}
		values[i] = v
	}
	if values[0] > maxPasswordMemory || values[1] > maxPasswordTime || values[2] > maxPasswordThreads {
		return PasswordParams{}, errors.New("parameters out of bounds")
	}
	return PasswordParams{Memory: uint32(values[0]), Time: uint32(values[1]), Threads: uint8(values[2])}, nil
}

// parsePHCParam parses "<name>=<decimal>".
func parsePHCParam(s, name string) (uint64, error) {
	digits, ok := strings.CutPrefix(s, name+"=")
	if !ok {
		return 0, fmt.Errorf("want parameter %s", name)
	}
	v, err := strconv.ParseUint(digits, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parameter %s: %w", name, err)
	}
	return v, nil
}

// decodeSaltAndKey decodes the unpadded base64 salt and key of a PHC string.
func decodeSaltAndKey(salt64, key64 string) ([]byte, []byte, error) {
	salt, err := phcBase64.DecodeString(salt64)
	if err != nil {
		return nil, nil, fmt.Errorf("salt: %w", err)
	}
	key, err := phcBase64.DecodeString(key64)
	if err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	return salt, key, nil
}
