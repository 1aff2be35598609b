package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignAndVerify: keys made with ruled keygen sign a module and a rule
// file (ruled sign); ruled verify trusts them against the public keys
// given, through a rotation (two keys trusted), and refuses — exit 1,
// naming the file, the key and why — a tampered file, an unsigned one, a
// revoked key and an unknown one. A key file is never written over.
func TestSignAndVerify(t *testing.T) {
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n) }
	keygen := func(file, id string) string {
		t.Helper()
		code, out, errs := runCLI(t, "", "keygen", "--out", at(file), "--id", id)
		if code != exitOK {
			t.Fatalf("keygen: %d %s", code, errs)
		}
		if info, err := os.Stat(at(file)); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("key file %v %v", info, err)
		}
		return strings.TrimSpace(out)
	}
	old, next := keygen("old.key", "ops-2026"), keygen("next.key", "ops-2027")
	if code, _, errs := runCLI(t, "", "keygen", "--out", at("old.key")); code != exitFailed || !strings.Contains(errs, "exists") {
		t.Errorf("keygen over a key file: %d %s", code, errs)
	}
	os.WriteFile(at("m.wasm"), []byte("\x00asm module"), 0o644)
	os.WriteFile(at("rules.yaml"), []byte("- id: r\n  on: t\n"), 0o644)
	os.WriteFile(at("loose.yaml"), []byte("- id: l\n  on: t\n"), 0o644)
	if code, out, errs := runCLI(t, "", "sign", "--key", at("old.key"), at("m.wasm")); code != exitOK || !strings.Contains(out, "signed by ops-2026") {
		t.Fatalf("sign: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "sign", "--key", at("next.key"), at("rules.yaml")); code != exitOK {
		t.Fatalf("sign: %d %s", code, errs)
	}
	verify := func(args ...string) (int, string) {
		code, out, _ := runCLI(t, "", append([]string{"verify"}, args...)...)
		return code, out
	}
	if code, out := verify("--trust", old, "--trust", next, at("m.wasm"), at("rules.yaml")); code != exitOK ||
		!strings.Contains(out, "m.wasm: signed by ops-2026") || !strings.Contains(out, "rules.yaml: signed by ops-2027") {
		t.Errorf("verify through a rotation: %d %s", code, out)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown key", []string{"--trust", old, at("rules.yaml")}, "rules.yaml: unknown key (key ops-2027)"},
		{"a revoked key", []string{"--trust", old, "--trust", next, "--revoke", "ops-2027", at("rules.yaml")}, "rules.yaml: revoked key (key ops-2027)"},
		{"unsigned", []string{"--trust", old, at("loose.yaml")}, "loose.yaml: unsigned"},
	} {
		if code, out := verify(c.args...); code != exitFailed || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d %q; want %q", c.name, code, out, c.want)
		}
	}
	os.WriteFile(at("m.wasm"), []byte("\x00asm module, changed"), 0o644)
	if code, out := verify("--trust", old, at("m.wasm")); code != exitFailed || !strings.Contains(out, "m.wasm: tampered (key ops-2026)") {
		t.Errorf("tampered: %d %s", code, out)
	}
	if code, _, _ := runCLI(t, "", "verify", "--trust", "ed25519:x:nope", at("m.wasm")); code != exitMisuse {
		t.Errorf("a bad trusted key: exit %d", code)
	}
}
