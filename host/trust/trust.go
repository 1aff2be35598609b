package trust

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Alg is the one signature algorithm: ed25519 (Go's standard library).
const Alg = "ed25519"

// SigSuffix names a file's detached signature: plugins/publish.wasm is
// signed by plugins/publish.wasm.sig.
const SigSuffix = ".sig"

// MaxSig bounds a signature file: a signature is a few hundred bytes; a
// larger file is refused unread.
const MaxSig = 4096

// idPattern is what a key id may be: what an operator types and revokes.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Key is a signer's private key and its id.
type Key struct {
	ID  string
	Pub ed25519.PublicKey
	key ed25519.PrivateKey
}

// PublicKey is a key the operator trusts: its id and its public half.
type PublicKey struct {
	ID  string
	Pub ed25519.PublicKey
}

// String is the public key as the config writes it:
// ed25519:<id>:<base64 of the 32 bytes>.
func (p PublicKey) String() string {
	return Alg + ":" + p.ID + ":" + base64.StdEncoding.EncodeToString(p.Pub)
}

// ParsePublicKey reads a public key as PublicKey.String writes it.
func ParsePublicKey(s string) (PublicKey, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 || parts[0] != Alg {
		return PublicKey{}, fmt.Errorf("trust: a public key is %s:<id>:<base64>, not %q", Alg, s)
	}
	if !idPattern.MatchString(parts[1]) {
		return PublicKey{}, fmt.Errorf("trust: key id %q: lower-case letters, digits, . _ -, at most 64", parts[1])
	}
	b, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(b) != ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("trust: key %s: not %d bytes of base64", parts[1], ed25519.PublicKeySize)
	}
	return PublicKey{ID: parts[1], Pub: ed25519.PublicKey(b)}, nil
}

// Generate makes a new key with id ("" for one named by its public key's
// hash), reading randomness from r (nil: crypto/rand).
func Generate(id string, r io.Reader) (*Key, error) {
	if r == nil {
		r = rand.Reader
	}
	pub, priv, err := ed25519.GenerateKey(r)
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	if id == "" {
		sum := sha256.Sum256(pub)
		id = hex.EncodeToString(sum[:6])
	}
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("trust: key id %q: lower-case letters, digits, . _ -, at most 64", id)
	}
	return &Key{ID: id, Pub: pub, key: priv}, nil
}

// Public is the key's public half, to trust in a config.
func (k *Key) Public() PublicKey { return PublicKey{ID: k.ID, Pub: k.Pub} }

// keyFile is a private key file: JSON, kept 0600 by whoever writes it.
type keyFile struct {
	Alg  string `json:"alg"`
	ID   string `json:"id"`
	Seed string `json:"seed"` // base64 of the ed25519 seed
}

// MarshalKey is a private key file's bytes.
func MarshalKey(k *Key) []byte {
	b, _ := json.MarshalIndent(keyFile{Alg: Alg, ID: k.ID, Seed: base64.StdEncoding.EncodeToString(k.key.Seed())}, "", "  ")
	return append(b, '\n')
}

// ParseKey reads a private key file.
func ParseKey(b []byte) (*Key, error) {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("trust: a key file is JSON: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(f.Seed)
	if f.Alg != Alg || err != nil || len(seed) != ed25519.SeedSize || !idPattern.MatchString(f.ID) {
		return nil, errors.New("trust: not a ruled ed25519 key file (alg, id, a 32-byte seed)")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return &Key{ID: f.ID, Pub: priv.Public().(ed25519.PublicKey), key: priv}, nil
}

// Signature is a file's detached signature: who signed (Key), the file's
// name as signed (its base name: a signed publish.wasm renamed log.wasm
// is not log.wasm's), its sha256, and the signature over both.
type Signature struct {
	Alg    string `json:"alg"`
	Key    string `json:"key"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Sig    string `json:"sig"`
}

// message is what a signature signs: a domain, the name, the digest.
func message(name, digest string) []byte {
	return []byte("ruled-signature-v1\n" + name + "\n" + digest + "\n")
}

// Sign signs content as the file named name (its base name is signed).
func (k *Key) Sign(name string, content []byte) Signature {
	sum := sha256.Sum256(content)
	d := hex.EncodeToString(sum[:])
	base := filepath.Base(name)
	return Signature{Alg: Alg, Key: k.ID, Name: base, SHA256: d,
		Sig: base64.StdEncoding.EncodeToString(ed25519.Sign(k.key, message(base, d)))}
}

// Marshal is the signature file's bytes.
func (s Signature) Marshal() []byte {
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

// ParseSignature reads a signature file.
func ParseSignature(b []byte) (Signature, error) {
	var s Signature
	if len(b) > MaxSig {
		return s, fmt.Errorf("trust: a signature file of %d bytes (at most %d)", len(b), MaxSig)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Signature{}, fmt.Errorf("trust: a signature file is JSON with alg, key, name, sha256, sig: %w", err)
	}
	if s.Alg != Alg {
		return Signature{}, fmt.Errorf("trust: signature algorithm %q (want %s)", s.Alg, Alg)
	}
	return s, nil
}

// Keyring is the keys the operator trusts and the ids revoked.
type Keyring struct {
	keys    map[string]PublicKey
	revoked map[string]bool
}

// NewKeyring trusts keys (several: a rotation signs with the new key
// while the old one is still trusted), except the ids revoked.
func NewKeyring(keys []PublicKey, revoked []string) (*Keyring, error) {
	r := &Keyring{keys: map[string]PublicKey{}, revoked: map[string]bool{}}
	for _, k := range keys {
		if _, dup := r.keys[k.ID]; dup {
			return nil, fmt.Errorf("trust: key id %s trusted twice", k.ID)
		}
		r.keys[k.ID] = k
	}
	for _, id := range revoked {
		r.revoked[id] = true
	}
	return r, nil
}

// IDs are the trusted keys' ids, sorted (revoked ones included, marked
// by Revoked).
func (r *Keyring) IDs() []string {
	out := make([]string, 0, len(r.keys))
	for id := range r.keys {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// trusted are the ids trusted and not revoked, sorted.
func (r *Keyring) trusted() []string {
	var out []string
	for _, id := range r.IDs() {
		if !r.revoked[id] {
			out = append(out, id)
		}
	}
	return out
}

// Revoked reports whether id is revoked.
func (r *Keyring) Revoked(id string) bool { return r.revoked[id] }

// Reasons a file is refused, for counting and showing (Error.Reason).
const (
	ReasonUnsigned  = "unsigned"
	ReasonMalformed = "malformed"
	ReasonUnknown   = "unknown key"
	ReasonRevoked   = "revoked key"
	ReasonTampered  = "tampered"
	ReasonRenamed   = "renamed"
	ReasonBad       = "bad signature"
)

// Error is why a file is not trusted: which file, which key, the reason.
type Error struct {
	File, Key, Reason string
	Detail            string
}

func (e *Error) Error() string {
	s := e.File + ": " + e.Reason
	if e.Key != "" {
		s += " (key " + e.Key + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Verify checks content, the file at path, against its signature file's
// bytes sig (nil: none was found). It returns the key that signed it, or
// an *Error saying why the file is not trusted.
func (r *Keyring) Verify(path string, content, sig []byte) (string, error) {
	return r.verify(filepath.Base(path), path, content, sig)
}

// verify is Verify of content signed as name, named path in its errors.
func (r *Keyring) verify(base, path string, content, sig []byte) (string, error) {
	if sig == nil {
		return "", &Error{File: path, Reason: ReasonUnsigned, Detail: "no " + base + SigSuffix + " beside it"}
	}
	s, err := ParseSignature(sig)
	if err != nil {
		return "", &Error{File: path, Reason: ReasonMalformed, Detail: err.Error()}
	}
	if r.revoked[s.Key] {
		return s.Key, &Error{File: path, Key: s.Key, Reason: ReasonRevoked}
	}
	k, ok := r.keys[s.Key]
	if !ok {
		return s.Key, &Error{File: path, Key: s.Key, Reason: ReasonUnknown, Detail: "trusted: " + strings.Join(r.trusted(), ", ")}
	}
	if s.Name != base {
		return s.Key, &Error{File: path, Key: s.Key, Reason: ReasonRenamed, Detail: fmt.Sprintf("signed as %q", s.Name)}
	}
	sum := sha256.Sum256(content)
	d := hex.EncodeToString(sum[:])
	if d != s.SHA256 {
		return s.Key, &Error{File: path, Key: s.Key, Reason: ReasonTampered, Detail: "its sha256 is " + d[:12] + "…, signed " + short(s.SHA256)}
	}
	raw, err := base64.StdEncoding.DecodeString(s.Sig)
	if err != nil || len(raw) != ed25519.SignatureSize || !ed25519.Verify(k.Pub, message(base, d), raw) {
		return s.Key, &Error{File: path, Key: s.Key, Reason: ReasonBad}
	}
	return s.Key, nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
