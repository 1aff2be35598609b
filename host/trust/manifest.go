package trust

import (
	"sort"
	"strings"
	"time"
)

// ManifestName is the name a deployment's signature signs: a manifest is
// signed as a file of that name whose content is Manifest's bytes.
const ManifestName = "ruled-deployment"

// Manifest is a deployment's signed content: when it was signed, and each
// file's name and digest, sorted. A signature of it covers the set — no
// file added, removed or swapped for one of another release — and its
// time lets a member refuse an older deployment sent again (a rollback).
func Manifest(files map[string]string, at time.Time) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("ruled-deployment-v1\nsigned " + at.UTC().Format(time.RFC3339Nano) + "\n")
	for _, n := range names {
		b.WriteString(files[n] + " " + n + "\n")
	}
	return []byte(b.String())
}

// SignManifest signs a deployment's files (name → sha256) as of at.
func (k *Key) SignManifest(files map[string]string, at time.Time) Signature {
	return k.Sign(ManifestName, Manifest(files, at))
}

// CheckManifest verifies a deployment's signature over its files as of
// at, for place (PlaceDeploy), counted and remembered as Check does under
// the name what ("deployment 7"). A place that requires nothing passes.
func (g *Gate) CheckManifest(place, what string, files map[string]string, at time.Time, sig []byte) (string, error) {
	if sig == nil && g.Required(place) {
		// Said as a deployment says it: no file lies beside a manifest.
		err := &Error{File: what, Reason: ReasonUnsigned, Detail: "deploy it signed: ruled deploy --key FILE"}
		g.note(place, what, "", err)
		return "", err
	}
	return g.check(place, what, ManifestName, Manifest(files, at), sig)
}

// CheckFiles checks a set of files (a deployment: name → content, each
// file's signature beside it as name.sig) with check, in name order, and
// returns the refusals' words: a deployment's files are all checked, so
// that every one refused is named.
func CheckFiles(files map[string][]byte, check func(name string, content, sig []byte) error) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		if !strings.HasSuffix(n, SigSuffix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var refused []string
	for _, n := range names {
		sig, ok := files[n+SigSuffix]
		if !ok {
			sig = nil // none: unsigned, not malformed
		}
		if err := check(n, files[n], sig); err != nil {
			refused = append(refused, err.Error())
		}
	}
	return refused
}
