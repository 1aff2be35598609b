package trust

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// seeded is a deterministic randomness source for keys in tests.
func seeded(b byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{b}, 64)) }

func TestVerify(t *testing.T) {
	old, err := Generate("ops-2026", seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	next, _ := Generate("ops-2027", seeded(2))
	stranger, _ := Generate("stranger", seeded(3))
	gone, _ := Generate("laptop", seeded(4))
	ring, err := NewKeyring([]PublicKey{old.Public(), next.Public(), gone.Public()}, []string{"laptop"})
	if err != nil {
		t.Fatal(err)
	}
	mod := []byte("\x00asm module bytes")
	sig := func(k *Key, name string, content []byte) []byte { return k.Sign(name, content).Marshal() }
	flip := func(b []byte, at string) []byte {
		s := Signature{}
		s, _ = ParseSignature(b)
		switch at {
		case "sig":
			raw := []byte(s.Sig)
			raw[3] ^= 1
			s.Sig = string(raw)
		case "sha":
			s.SHA256 = strings.Repeat("0", 64)
		}
		return s.Marshal()
	}
	for _, c := range []struct {
		name    string
		path    string
		content []byte
		sig     []byte
		key     string
		reason  string
	}{
		{"signed by the current key", "plugins/publish.wasm", mod, sig(old, "publish.wasm", mod), "ops-2026", ""},
		{"signed by the next key (rotation)", "plugins/publish.wasm", mod, sig(next, "publish.wasm", mod), "ops-2027", ""},
		{"the path's directory is not signed", "/etc/ruled/plugins/publish.wasm", mod, sig(old, "other/dir/publish.wasm", mod), "ops-2026", ""},
		{"unsigned", "plugins/publish.wasm", mod, nil, "", ReasonUnsigned},
		{"tampered after signing", "plugins/publish.wasm", append(bytes.Clone(mod), 'x'), sig(old, "publish.wasm", mod), "ops-2026", ReasonTampered},
		{"renamed", "plugins/log.wasm", mod, sig(old, "publish.wasm", mod), "ops-2026", ReasonRenamed},
		{"an unknown key", "plugins/publish.wasm", mod, sig(stranger, "publish.wasm", mod), "stranger", ReasonUnknown},
		{"a revoked key", "plugins/publish.wasm", mod, sig(gone, "publish.wasm", mod), "laptop", ReasonRevoked},
		{"a signature edited", "plugins/publish.wasm", mod, flip(sig(old, "publish.wasm", mod), "sig"), "ops-2026", ReasonBad},
		{"a digest edited to the tampered file's", "plugins/publish.wasm", mod, flip(sig(old, "publish.wasm", mod), "sha"), "ops-2026", ReasonTampered},
		{"not JSON", "plugins/publish.wasm", mod, []byte("hello"), "", ReasonMalformed},
		{"an unknown field", "plugins/publish.wasm", mod, []byte(`{"alg":"ed25519","extra":1}`), "", ReasonMalformed},
		{"another algorithm", "plugins/publish.wasm", mod, []byte(`{"alg":"rsa","key":"ops-2026","name":"publish.wasm","sha256":"","sig":""}`), "", ReasonMalformed},
		{"a huge signature file", "plugins/publish.wasm", mod, bytes.Repeat([]byte(" "), MaxSig+1), "", ReasonMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, err := ring.Verify(c.path, c.content, c.sig)
			var te *Error
			switch {
			case c.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.reason != "" && (!errors.As(err, &te) || te.Reason != c.reason):
				t.Fatalf("err %v; want reason %q", err, c.reason)
			case key != c.key:
				t.Fatalf("key %q; want %q", key, c.key)
			}
			if err != nil && !strings.HasPrefix(err.Error(), c.path+": ") {
				t.Errorf("the error does not name the file first: %v", err)
			}
		})
	}
}

func TestKeysRoundTrip(t *testing.T) {
	k, err := Generate("", seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	if len(k.ID) != 12 {
		t.Errorf("a key named by its hash: %q", k.ID)
	}
	back, err := ParseKey(MarshalKey(k))
	if err != nil || back.ID != k.ID || !back.Pub.Equal(k.Pub) {
		t.Fatalf("key file round trip: %v %+v", err, back)
	}
	pub, err := ParsePublicKey(k.Public().String())
	if err != nil || pub.ID != k.ID || !pub.Pub.Equal(k.Pub) {
		t.Fatalf("public key round trip: %v", err)
	}
	for _, bad := range []string{"", "rsa:x:AAAA", "ed25519:Bad Id:AAAA", "ed25519:ok:not-base64!", "ed25519:ok:AAAA"} {
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", bad)
		}
	}
	if _, err := ParseKey([]byte(`{"alg":"ed25519","id":"x","seed":"AAAA"}`)); err == nil {
		t.Error("a short seed accepted")
	}
	if _, err := NewKeyring([]PublicKey{k.Public(), k.Public()}, nil); err == nil {
		t.Error("a key trusted twice accepted")
	}
}

func FuzzParseSignature(f *testing.F) {
	k, _ := Generate("f", seeded(5))
	f.Add(k.Sign("a.wasm", []byte("a")).Marshal())
	f.Add([]byte(`{"alg":"ed25519"}`))
	f.Add([]byte(`{`))
	ring, _ := NewKeyring([]PublicKey{k.Public()}, nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSignature(b)
		if err == nil && s.Alg != Alg {
			t.Fatalf("accepted alg %q", s.Alg)
		}
		// Verify never accepts what the key did not sign.
		if _, err := ring.Verify("a.wasm", []byte("b"), b); err == nil {
			t.Fatalf("verified a file the key never signed with %q", b)
		}
	})
}
