package config

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/ruled-dev/ruled/host/api"
)

// tokenName is what a token may be called: short, printable, without
// spaces, so that "token NAME" reads as one word in a tree or a log line.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// ReadTokens reads a file of named API tokens: one a line, NAME TOKEN
// [SCOPES] (separated by spaces or tabs), blank lines and lines starting
// with # skipped. SCOPES are what the token may do, separated by commas
// (api.ParseScopes: read, events, control, audit, or all); a line
// without them gives api.DefaultScopes (read): the least that works. A
// name used twice, a name that is not one, a token used twice, a scope
// that is not one or a line without a token is an error naming the file
// and line; the tokens' own rules (their length) are the API guard's to
// check. The file holds secrets: one readable by others is refused. It
// returns the tokens by name and each one's scopes.
func ReadTokens(path string) (map[string]string, map[string][]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: tokens file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("config: tokens file %s is readable by others (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: tokens file: %w", err)
	}
	out := map[string]string{}
	scopes := map[string][]string{}
	seen := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		switch {
		case len(f) != 2 && len(f) != 3:
			return nil, nil, fmt.Errorf("%s:%d: want NAME TOKEN [SCOPES], got %d fields", path, line, len(f))
		case !tokenName.MatchString(f[0]):
			return nil, nil, fmt.Errorf("%s:%d: %q is not a token name (letters, digits, . _ @ -; at most 64)", path, line, f[0])
		case out[f[0]] != "":
			return nil, nil, fmt.Errorf("%s:%d: token name %q is given twice", path, line, f[0])
		case seen[f[1]] != "":
			return nil, nil, fmt.Errorf("%s:%d: token %q has the same token as %q: a command could not say which sent it", path, line, f[0], seen[f[1]])
		}
		sc := api.DefaultScopes
		if len(f) == 3 {
			var err error
			if sc, err = api.ParseScopes(f[2]); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: token %q: %v", path, line, f[0], err)
			}
		}
		out[f[0]], seen[f[1]], scopes[f[0]] = f[1], f[0], slices.Clone(sc)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("config: tokens file %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("config: tokens file %s names no token", path)
	}
	return out, scopes, nil
}
