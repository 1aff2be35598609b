package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

func TestCheckDeployName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"rules/a.yaml", true},
		{"rules/a.yml", true},
		{"plugins/expr.wasm", true},
		{"rules/a.wasm", false},
		{"plugins/a.yaml", false},
		{"rules/.hidden.yaml", false},
		{"rules/../x.yaml", false},
		{"rules/sub/x.yaml", false},
		{"/rules/x.yaml", false},
		{"x.yaml", false},
		{"rules/", false},
		{`rules/a\b.yaml`, false},
		{"rules/a.yaml.sig", true},
		{"plugins/expr.wasm.sig", true},
		{"plugins/expr.sig", false},
		{"rules/.sig", false},
		{"rules/a.yaml.sig.sig", false},
	} {
		err := store.CheckDeployName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v; want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, store.ErrBadDeployName) {
			t.Errorf("%q: %v is not ErrBadDeployName", tc.name, err)
		}
	}
}

// TestRedisDeploy on a server and on a 3-master cluster (every command
// touches one key).
func TestRedisDeploy(t *testing.T) { serverAndCluster(t, testDeploy) }

// serverAndCluster runs test on a redis-server's URL, then on a 3-master
// cluster's (skipped with -short).
func serverAndCluster(t *testing.T, test func(t *testing.T, url string)) {
	t.Run("server", func(t *testing.T) { test(t, redistest.Start(t).URL()) })
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a 3-master cluster")
		}
		test(t, redistest.StartCluster(t, 3).URL())
	})
}

func testDeploy(t *testing.T, url string) {
	r := openRedis(t, url, store.RedisOptions{})
	d := r.Deploy()
	if dep, err := d.Current(ctx); dep != nil || err != nil {
		t.Fatalf("nothing deployed yet: %+v, %v", dep, err)
	}
	if _, _, err := d.Put(ctx, map[string][]byte{"rules/../../etc.yaml": []byte("x")}, "t", nil); !errors.Is(err, store.ErrBadDeployName) {
		t.Fatalf("a bad name: %v", err)
	}
	files := map[string][]byte{"rules/a.yaml": []byte("- id: a\n"), "plugins/p.wasm": []byte("\x00asm module")}
	dep, n, err := d.Put(ctx, files, "t", nil)
	if err != nil || n != 2 || dep.Version < 1 {
		t.Fatalf("first deploy: %+v, %d written, %v", dep, n, err)
	}
	cur, err := d.Current(ctx)
	if err != nil || cur.Version != dep.Version || cur.Files["rules/a.yaml"] != store.Digest(files["rules/a.yaml"]) || cur.By != "t" {
		t.Fatalf("current %+v, %v; want %+v", cur, err, dep)
	}
	for name, b := range files {
		got, err := d.Blob(ctx, cur.Files[name])
		if err != nil || string(got) != string(b) {
			t.Errorf("blob of %s: %q, %v", name, got, err)
		}
	}
	// A rule file changed: one blob written, the module's kept; versions grow.
	files["rules/a.yaml"] = []byte("- id: a2\n")
	dep2, n, err := d.Put(ctx, files, "t", nil)
	if err != nil || n != 1 || dep2.Version <= dep.Version {
		t.Fatalf("second deploy: %+v, %d written, %v", dep2, n, err)
	}
	// The first version's rule file stays while a kept deployment names
	// it; DeployHistory deployments later it is collected.
	first := dep.Files["rules/a.yaml"]
	for i := range store.DeployHistory {
		if _, err := d.Blob(ctx, first); err != nil {
			t.Fatalf("after %d more deploys the first rule file is gone: %v", i, err)
		}
		files["rules/a.yaml"] = fmt.Appendf(nil, "- id: a%d\n", i+3)
		if _, _, err := d.Put(ctx, files, "t", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Blob(ctx, first); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("a blob no kept deployment names: %v; want ErrNoBlob", err)
	}
	if _, err := d.Blob(ctx, store.Digest(files["plugins/p.wasm"])); err != nil {
		t.Errorf("the module every deployment names: %v", err)
	}
	// A module's signature, deployed beside it, is found by the module's
	// digest in the current deployment or a kept one.
	pv1 := files["plugins/p.wasm"]
	files["plugins/p.wasm.sig"] = []byte("sig of v1")
	if _, _, err := d.Put(ctx, files, "t", nil); err != nil {
		t.Fatal(err)
	}
	files["plugins/p.wasm"], files["plugins/p.wasm.sig"] = []byte("\x00asm v2"), []byte("sig of v2")
	if _, _, err := d.Put(ctx, files, "t", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		plugin string
		module []byte
		want   string
	}{{"p", pv1, "sig of v1"}, {"p", files["plugins/p.wasm"], "sig of v2"}, {"q", pv1, ""}, {"p", []byte("never deployed"), ""}} {
		got, err := d.Signature(ctx, tc.plugin, store.Digest(tc.module))
		if err != nil || string(got) != tc.want {
			t.Errorf("signature of %s %.12s: %q, %v; want %q", tc.plugin, store.Digest(tc.module), got, err, tc.want)
		}
	}
	files["plugins/p.wasm"] = pv1
	delete(files, "plugins/p.wasm.sig")
	if _, _, err := d.Put(ctx, files, "t", nil); err != nil {
		t.Fatal(err)
	}
	// Content altered in Redis is refused.
	dg := store.Digest(files["plugins/p.wasm"])
	if err := r.Client().Set(ctx, "ruled:blob:"+dg, "evil", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Blob(ctx, dg); err == nil {
		t.Error("an altered blob was returned")
	}
	// The next deploy of the same files writes it again.
	if _, n, err := d.Put(ctx, files, "t", nil); err != nil || n != 1 {
		t.Errorf("a deploy over an altered blob: %d written, %v; want it written again", n, err)
	}
	if b, err := d.Blob(ctx, dg); err != nil || string(b) != string(files["plugins/p.wasm"]) {
		t.Errorf("the blob after the deploy: %q, %v", b, err)
	}
}
