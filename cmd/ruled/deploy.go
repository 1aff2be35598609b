package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/reload"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/regular"
)

const deployUsage = `Usage: ruled deploy --redis URL [DIR | --rules DIR --plugins DIR]

Puts rule files and plugins in Redis for every ruled started there without
--rules and --plugins (ruled run --redis URL --data DIR [--shards N]): such
a process needs no copy of the rules of its own. DIR stands for DIR/rules
and DIR/plugins.

The rules are checked against the plugins first, as "ruled lint --plugins"
does; any problem stops the deploy, and Redis keeps what it had. Each file
is stored once by its content's sha256, then a manifest naming them all is
set in one write, so a process sees a deployment whole or not at all. The
change is announced (ruled.triggers.changed): running processes load it at
once, and at their next --rules-refresh if the announcement is lost.

Plugin grants and limits stay each process's own (--grant, --config): what
third-party code may do is the operator's word on that machine, not the
deployer's.

Each file's signature (FILE.sig, written by ruled sign) is deployed beside
it. With --key, the deploy signs what is not signed yet (in Redis, not on
disk) and signs the deployment itself: its files and their digests, and
when. A process run with require-signatures: deploy checks the deployment's
signature and every file's against the keys it trusts before it writes
any, refuses a deployment older than the one it serves, and refuses a
deployment with one thing refused, whole: the last one keeps serving. With
--trust, the deploy checks the files here first and deploys nothing if one
is refused.

Flags:
`

func cmdDeploy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("deploy", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), deployUsage); fs.PrintDefaults() }
	redisURL := fs.String("redis", os.Getenv("RULED_REDIS"), "the fleet's Redis: redis://host:port/db, or a cluster's redis://a?addr=b&addr=c (default $RULED_REDIS)")
	rulesDir := fs.String("rules", "", "directory of rule files (*.yaml) (default DIR/rules)")
	pluginsDir := fs.String("plugins", "", "directory of plugins (*.wasm) (default DIR/plugins)")
	cacheDir := cacheFlags(fs)
	asJSON := fs.Bool("json", false, "print the deployment (version, time, who, files and their digests) as JSON")
	keyring := keyringFlags(fs)
	keyFile := fs.String("key", "", "sign the deployment (and each file not signed yet) with this private key (ruled keygen)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	ring, err := keyring()
	if err != nil {
		return usageError("deploy: " + err.Error())
	}
	switch {
	case len(pos) > 1:
		return usageError(fmt.Sprintf("deploy takes one directory, got %q", pos))
	case len(pos) == 1:
		if *rulesDir == "" {
			*rulesDir = filepath.Join(pos[0], "rules")
		}
		if *pluginsDir == "" {
			*pluginsDir = filepath.Join(pos[0], "plugins")
		}
	}
	if *rulesDir == "" || *pluginsDir == "" {
		fs.Usage()
		return usageError("deploy needs DIR, or --rules and --plugins")
	}
	if *redisURL == "" {
		return usageError("deploy needs --redis")
	}
	problems, set, err := checkRules(ctx, *rulesDir, *pluginsDir, cacheDir(), nil)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		printProblems(stderr, problems, set, false)
		return fmt.Errorf("deploy: %s; nothing deployed", plural(len(problems), "problem"))
	}
	files := map[string][]byte{}
	for _, src := range []struct {
		dir, prefix string
		max         int64
	}{{*rulesDir, "rules/", rules.MaxFileSize}, {*pluginsDir, "plugins/", wasm.MaxModuleSize}} {
		ents, err := os.ReadDir(src.dir)
		if err != nil {
			return fmt.Errorf("deploy: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() || store.CheckDeployName(src.prefix+e.Name()) != nil {
				continue // what the daemon would not load either
			}
			b, err := regular.ReadFile(filepath.Join(src.dir, e.Name()), src.max)
			if err != nil {
				return fmt.Errorf("deploy: %w", err)
			}
			files[src.prefix+e.Name()] = b
		}
	}
	var key *trust.Key
	if *keyFile != "" {
		b, err := regular.ReadFile(*keyFile, 64<<10)
		if err != nil {
			return fmt.Errorf("deploy: %w", err)
		}
		if key, err = trust.ParseKey(b); err != nil {
			return fmt.Errorf("deploy: %s: %w", *keyFile, err)
		}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if _, signed := files[name+trust.SigSuffix]; !signed && !strings.HasSuffix(name, trust.SigSuffix) {
				files[name+trust.SigSuffix] = key.Sign(name, files[name]).Marshal()
			}
		}
	}
	if ring != nil {
		refused := trust.CheckFiles(files, func(name string, content, sig []byte) error {
			_, err := ring.Verify(name, content, sig)
			return err
		})
		if len(refused) > 0 {
			for _, r := range refused {
				fmt.Fprintln(stderr, "ruled: deploy:", r)
			}
			return fmt.Errorf("deploy: %s not signed by a trusted key; nothing deployed", plural(len(refused), "file"))
		}
	}
	r, err := store.OpenRedis(*redisURL, store.RedisOptions{})
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	defer r.Close()
	var signed *store.SignedManifest
	if key != nil {
		digests := map[string]string{}
		for name, b := range files {
			digests[name] = store.Digest(b)
		}
		at := time.Now().UTC()
		signed = &store.SignedManifest{At: at, Signature: key.SignManifest(digests, at).Marshal()}
	}
	dep, written, err := r.Deploy().Put(ctx, files, deployer(), signed)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	host, _ := os.Hostname()
	sigs := 0
	for name := range dep.Files {
		if strings.HasSuffix(name, trust.SigSuffix) {
			sigs++
		}
	}
	how := "not signed"
	if key != nil {
		how = "signed by " + key.ID
	}
	if _, err := r.Audit().AuditAppend(ctx, audit.Entry{At: dep.At, Who: deployer(), From: host, What: audit.Deploy,
		Detail: fmt.Sprintf("deployment %d, %s: %d files (%d signatures), %d new in Redis", dep.Version, how, len(dep.Files)-sigs, sigs, written)},
		audit.Retention{}); err != nil { // no trim: the members' retention is theirs to apply
		fmt.Fprintf(stderr, "ruled: deploy: not in the audit trail (%v)\n", err)
	}
	rulesN, pluginsN := 0, 0
	for name := range dep.Files {
		if strings.HasSuffix(name, trust.SigSuffix) {
			continue
		}
		if strings.HasPrefix(name, "rules/") {
			rulesN++
		} else {
			pluginsN++
		}
	}
	if *asJSON {
		if err := printJSON(stdout, struct {
			*store.Deployment
			Rules   int `json:"rules"`
			Written int `json:"written"`
		}{dep, set.Len(), written}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "deployed version %d: %s (%s), %s; %s new in Redis\n", dep.Version,
			plural(rulesN, "rule file"), plural(set.Len(), "rule"), plural(pluginsN, "plugin"), plural(written, "file"))
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ctl := bus.NewRedis(r.Client(), bus.RedisConfig{})
	if err := ctl.PublishControl(actx, reload.TriggersChangedTopic, reload.TriggersChanged("ruled deploy")); err != nil {
		fmt.Fprintf(stderr, "ruled: deploy: not announced (%v); processes load it at their next rules refresh\n", err)
	}
	return nil
}

// deployer names who deployed, for the manifest: user@host.
func deployer() string {
	name := "?"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
