package daemon

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/trust"
)

// keys are the signers of the trust tests: ops and next (a rotation),
// old (revoked), stranger (never trusted).
type keys struct{ ops, next, old, stranger *trust.Key }

func newKeys(t testing.TB) keys {
	t.Helper()
	var k keys
	for _, p := range []struct {
		k  **trust.Key
		id string
	}{{&k.ops, "ops"}, {&k.next, "next"}, {&k.old, "old"}, {&k.stranger, "stranger"}} {
		key, err := trust.Generate(p.id, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		*p.k = key
	}
	return k
}

// signatures requires signatures everywhere, trusting ops, next and old,
// with old revoked when revoke is set.
func (k keys) signatures(revoke bool) Signatures {
	s := Signatures{Require: []string{"true"},
		Trusted: []string{k.ops.Public().String(), k.next.Public().String(), k.old.Public().String()}}
	if revoke {
		s.Revoked = []string{"old"}
	}
	return s
}

// sign writes path's signature by key the way a deployer does.
func sign(t testing.TB, key *trust.Key, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	deploy(t, path+trust.SigSuffix, key.Sign(filepath.Base(path), b).Marshal())
}

// refused is the reason the gate refuses file for now ("" for none).
func refused(td *testDaemon, file string) string {
	if r := td.Status().Signatures; r != nil {
		for _, f := range r.Refused {
			if filepath.Base(f.File) == file {
				return f.Reason
			}
		}
	}
	return ""
}

// TestSignaturesRequired: with require-signatures, the plugins and rule
// files that a trusted key signed load, and the others are refused at
// start and at hot reload with the file and the reason — unsigned,
// tampered, revoked, unknown key — counted and shown, while the last good
// version keeps serving; a signature written after its file lets the file
// load at once; a rotation to a second trusted key loads.
func TestSignaturesRequired(t *testing.T) {
	k := newKeys(t)
	dir := t.TempDir()
	plugins, rulesDir := pluginsDir(t), filepath.Join(dir, "rules")
	v1, v2 := readTestWasm(t, "host/wasm/testdata/reload/v1.wasm"), readTestWasm(t, "host/wasm/testdata/reload/v2.wasm")
	versioned := filepath.Join(plugins, "versioned.wasm")
	deploy(t, versioned, v1)
	sign(t, k.ops, versioned)
	sign(t, k.ops, filepath.Join(plugins, "publish.wasm"))
	sign(t, k.old, filepath.Join(plugins, "fire.wasm"))             // revoked
	sign(t, k.stranger, filepath.Join(plugins, "expr.wasm"))        // unknown key
	sign(t, k.ops, filepath.Join(plugins, "scooter.wasm"))          // then changed: tampered
	os.WriteFile(filepath.Join(plugins, "scooter.wasm"), v2, 0o644) // log.wasm: unsigned
	writeRules(t, rulesDir, versionRules)
	rulesFile := filepath.Join(rulesDir, "rules.yaml")
	sign(t, k.ops, rulesFile)
	other := filepath.Join(rulesDir, "other.yaml")
	os.WriteFile(other, []byte(strings.Replace(versionRules, "id: ver", "id: unsigned", 1)), 0o644)

	cfg := Config{RulesDir: rulesDir, PluginsDir: plugins, DataDir: filepath.Join(dir, "data"), Watch: true,
		ReloadDebounce: 20 * time.Millisecond, ReloadBackoff: time.Hour, Signatures: k.signatures(true)}
	td := startDaemon(t, cfg)

	for file, reason := range map[string]string{"log.wasm": trust.ReasonUnsigned, "fire.wasm": trust.ReasonRevoked,
		"expr.wasm": trust.ReasonUnknown, "scooter.wasm": trust.ReasonTampered, "other.yaml": trust.ReasonUnsigned,
		"publish.wasm": "", "versioned.wasm": "", "rules.yaml": ""} {
		if got := refused(td, file); got != reason {
			t.Errorf("at start, %s refused for %q; want %q", file, got, reason)
		}
	}
	signer := func(name string) (by, lastErr string, loaded bool) {
		for _, p := range td.Plugins() {
			if p.Name == name {
				return p.SignedBy, p.LastError, p.Loaded
			}
		}
		return "", "", false
	}
	if by, _, ok := signer("versioned"); by != "ops" || !ok {
		t.Errorf("versioned: loaded %v, signed by %q; want ops", ok, by)
	}
	if _, lastErr, ok := signer("log"); ok || !strings.Contains(lastErr, "not trusted: "+filepath.Join(plugins, "log.wasm")+": unsigned") {
		t.Errorf("log: loaded %v, last error %q", ok, lastErr)
	}
	if td.Current("ver") == nil || td.Current("unsigned") != nil {
		t.Errorf("rules ver %v, unsigned %v: want only ver", td.Current("ver") != nil, td.Current("unsigned") != nil)
	}
	invalid := func(file, want string) bool {
		for _, p := range td.Status().Invalid {
			if strings.Contains(p.At, file) && strings.Contains(p.Error, want) {
				return true
			}
		}
		return false
	}
	if !invalid("other.yaml", "not trusted: "+other+": unsigned") {
		t.Errorf("other.yaml's problem not shown: %+v", td.Status().Invalid)
	}
	metric := func(name string, labels ...string) float64 {
		fams, err := td.metrics.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
		metrics:
			for _, m := range f.GetMetric() {
				got := map[string]string{}
				for _, l := range m.GetLabel() {
					got[l.GetName()] = l.GetValue()
				}
				for i := 0; i+1 < len(labels); i += 2 {
					if got[labels[i]] != labels[i+1] {
						continue metrics
					}
				}
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
		return 0
	}
	if n := metric("ruled_signature_refused_files", "place", "plugins"); n != 4 {
		t.Errorf("ruled_signature_refused_files{place=plugins} %v; want 4", n)
	}
	if n := metric("ruled_signature_refusals_total", "place", "rules", "reason", "unsigned"); n != 1 {
		t.Errorf("rules' unsigned refusals %v; want 1", n)
	}

	ranLast := func(want string) { t.Helper(); ranLastOn(t, td, want) }
	serving := func() string { return td.eng.Catalog().Module("versioned").Digest() }
	ranLast("v1")

	// A new version without a new signature: the old signature does not
	// fit it. v1 keeps serving, with no backoff to wait out (an hour here).
	deploy(t, versioned, v2)
	eventually(t, "v2 refused as tampered", func() bool { return refused(td, "versioned.wasm") == trust.ReasonTampered })
	if serving() != digestOf(v1) {
		t.Fatal("v2 serves unsigned")
	}
	ranLast("v1")
	// Its signature arrives, by the next key (a rotation): v2 serves.
	sign(t, k.next, versioned)
	eventually(t, "v2 serving", func() bool { return serving() == digestOf(v2) })
	if by, _, _ := signer("versioned"); by != "next" || refused(td, "versioned.wasm") != "" {
		t.Errorf("after the signature: signed by %q, refused %q", by, refused(td, "versioned.wasm"))
	}
	ranLast("v2")

	// A rule file edited and not signed again keeps its rules.
	deploy(t, rulesFile, []byte(strings.Replace(versionRules, "id: ver", "id: ver2", 1)))
	eventually(t, "the edit refused", func() bool { return invalid("rules.yaml", "tampered") })
	if td.Current("ver") == nil || td.Current("ver2") != nil {
		t.Errorf("after an unsigned edit: ver %v, ver2 %v", td.Current("ver") != nil, td.Current("ver2") != nil)
	}
	sign(t, k.ops, rulesFile)
	eventually(t, "the signed edit loaded", func() bool { return td.Current("ver2") != nil && td.Current("ver") == nil })
	// A plugin refused at start loads once signed.
	sign(t, k.ops, filepath.Join(plugins, "log.wasm"))
	eventually(t, "log loaded", func() bool { _, _, ok := signer("log"); return ok })
	// A signature by the revoked key does not let a file in.
	deploy(t, rulesFile, []byte(versionRules))
	sign(t, k.old, rulesFile)
	eventually(t, "the revoked key refused", func() bool { return refused(td, "rules.yaml") == trust.ReasonRevoked })
	if td.Current("ver2") == nil {
		t.Error("ver2 gone after a refused edit")
	}
	// A FIFO as a signature is refused, saying so, not waited on.
	fifo := filepath.Join(rulesDir, "fifo.yaml")
	os.WriteFile(fifo, []byte(strings.Replace(versionRules, "id: ver", "id: fifo", 1)), 0o644)
	if err := syscall.Mkfifo(fifo+trust.SigSuffix, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the FIFO refused", func() bool { return invalid("fifo.yaml", "malformed: its signature file:") })
	os.Remove(fifo)
	// A removed rule file is refused no more.
	os.Remove(other)
	eventually(t, "other.yaml forgotten", func() bool { return refused(td, "other.yaml") == "" })
	if n := metric("ruled_signature_refused_files", "place", "plugins"); n != 3 {
		t.Errorf("ruled_signature_refused_files{place=plugins} %v at the end; want 3", n)
	}
}

// TestUntrustedPinnedStep: a waiting step scheduled on a module signed by
// a key revoked before it comes due is dropped with its reason, not run;
// with the key still trusted (a rotation) it runs on its module.
func TestUntrustedPinnedStep(t *testing.T) {
	const rules = `
- id: later
  on: t.in
  steps:
    - name: first
      do: versioned.version
    - name: second
      after: 1h
      durable: true
      do: versioned.version
`
	for _, revoke := range []bool{true, false} {
		name := map[bool]string{true: "revoked: dropped", false: "still trusted: runs"}[revoke]
		t.Run(name, func(t *testing.T) {
			k := newKeys(t)
			dir := t.TempDir()
			plugins, rulesDir := pluginsDir(t), filepath.Join(dir, "rules")
			versioned := filepath.Join(plugins, "versioned.wasm")
			deploy(t, versioned, readTestWasm(t, "host/wasm/testdata/reload/v1.wasm"))
			sign(t, k.old, versioned)
			writeRules(t, rulesDir, rules)
			sign(t, k.ops, filepath.Join(rulesDir, "rules.yaml"))
			clk := sched.NewVirtual(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
			cfg := Config{RulesDir: rulesDir, PluginsDir: plugins, DataDir: filepath.Join(dir, "data"), Clock: clk,
				Signatures: k.signatures(false)}
			td := startDaemon(t, cfg)
			td.send(t, `{"topic":"t.in"}`)
			waitTimer(t, clk, time.Hour)
			if !strings.Contains(td.logs.String(), "ran v1") {
				t.Fatalf("the first step did not run:\n%s", td.logs.String())
			}
			td.Stop()

			// v2, signed by ops, replaces v1; old is revoked (or not).
			deploy(t, versioned, readTestWasm(t, "host/wasm/testdata/reload/v2.wasm"))
			sign(t, k.ops, versioned)
			cfg.Signatures = k.signatures(revoke)
			td = startDaemon(t, cfg)
			if revoke {
				// Judged as it is read back at start: dropped then.
				eventually(t, "the step dropped", func() bool { return td.Status().Dropped[seq.DropUntrusted] == 1 })
				if strings.Contains(td.logs.String(), "ran ") {
					t.Errorf("a step ran on the revoked key's module:\n%s", td.logs.String())
				}
				if !strings.Contains(td.logs.String(), "revoked key (key old)") {
					t.Errorf("the drop does not say why:\n%s", td.logs.String())
				}
				return
			}
			waitTimer(t, clk, time.Hour)
			clk.Advance(time.Hour)
			eventually(t, "the step ran on v1", func() bool { return strings.Contains(td.logs.String(), "ran v1") })
			if n := td.Status().Dropped[seq.DropUntrusted]; n != 0 {
				t.Errorf("%d dropped as untrusted", n)
			}
		})
	}
}
