package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadTokens: a tokens file's lines, and what it refuses at
// file:line.
func TestReadTokens(t *testing.T) {
	tests := []struct {
		name, file string
		mode       os.FileMode
		want       map[string]string
		scopes     map[string][]string
		err        string
	}{
		{"two", "# who may command\nops 0123456789abcdef\n\n  ci\tfedcba9876543210  \n", 0o600,
			map[string]string{"ops": "0123456789abcdef", "ci": "fedcba9876543210"},
			map[string][]string{"ops": {"read"}, "ci": {"read"}}, ""},
		{"scopes", "ops a all\nci b events,read\nscript c control\n", 0o600,
			map[string]string{"ops": "a", "ci": "b", "script": "c"},
			map[string][]string{"ops": {"read", "events", "control", "audit"}, "ci": {"events", "read"}, "script": {"control"}}, ""},
		{"a scope that is not one", "ops a read,admin\n", 0o600, nil, nil, `tokens:1: token "ops": "admin" is not a scope`},
		{"four fields", "ops a b c\n", 0o600, nil, nil, "tokens:1: want NAME TOKEN [SCOPES], got 4 fields"},
		{"no token", "\nops\n", 0o600, nil, nil, "tokens:2: want NAME TOKEN [SCOPES], got 1 fields"},
		{"bad name", "op$ x\n", 0o600, nil, nil, `tokens:1: "op$" is not a token name`},
		{"name twice", "ops a\nops b\n", 0o600, nil, nil, `tokens:2: token name "ops" is given twice`},
		{"same token", "ops a\nci a\n", 0o600, nil, nil, `tokens:2: token "ci" has the same token as "ops"`},
		{"empty", "# none\n", 0o600, nil, nil, "names no token"},
		{"readable by others", "ops a\n", 0o644, nil, nil, "readable by others"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(p, []byte(tc.file), tc.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, tc.mode)
			got, scopes, err := ReadTokens(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(scopes, tc.scopes) {
				t.Errorf("tokens %v %v; want %v %v", got, scopes, tc.want, tc.scopes)
			}
		})
	}
}
