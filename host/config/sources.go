package config

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Defaults sets what `ruled run` does unless told otherwise and a zero
// Config would not: the watcher on, the log at info, every run's trace
// sent once a collector is named.
func Defaults(c *Config) {
	c.Watch, c.LogLevel = true, "info"
	c.Traces.Ratio = 1
}

// ApplyEnv applies the settings the environment gives (getenv, for
// os.Getenv): RULED_<FLAG> — or RULED_<KEY> for a setting without a
// flag —, taking what the flag takes. An error names the variable.
func ApplyEnv(c *Config, getenv func(string) string) error {
	g := given{}
	var errs []error // every mistake of the environment, not only its first
	for _, s := range Settings {
		if strings.Contains(s.Key, "*") && s.Flag == "" {
			continue // a plugin's limit: the file only
		}
		text := getenv(s.Env())
		if text == "" {
			continue
		}
		if err := applyText(c, g, s, text, true, "$"+s.Env()); err != nil {
			errs = append(errs, fmt.Errorf("$%s: %v", s.Env(), err))
		}
	}
	return errors.Join(errs...)
}

// applyText applies a flag's or the environment's text to c. A *
// setting's words are name=value[,value] each; a list's words are its
// items (env), or the flag's one value is an item.
func applyText(c *Config, g given, s *Setting, text string, env bool, where string) error {
	if strings.Contains(s.Key, "*") {
		words := []string{text}
		if env {
			words = strings.Fields(text)
		}
		for _, w := range words {
			name, vals, ok := strings.Cut(w, "=")
			if !ok || name == "" || vals == "" {
				return fmt.Errorf("%q: want plugin=value[,value]", w)
			}
			v := value{list: strings.FieldsFunc(vals, func(r rune) bool { return r == ',' || r == ' ' })}
			g.replaces(c, s, name)
			if err := s.apply(c, name, v); err != nil {
				return fmt.Errorf("%q: %v", w, err)
			}
			c.note(s, name, where)
		}
		return nil
	}
	if !env && (s.Kind == List || s.Kind == Routes) {
		text = strings.ReplaceAll(text, " ", "") // a flag's value is one item
	}
	v, err := s.parse(text)
	if err != nil {
		return err
	}
	g.replaces(c, s, "")
	if err := s.apply(c, "", v); err != nil {
		return err
	}
	c.note(s, "", where)
	return nil
}

// FlagSet holds the settings' flags of a flag.FlagSet (Flags) until Apply.
type FlagSet struct {
	given []flagGiven
}

type flagGiven struct {
	s    *Setting
	text string
}

// Flags registers a flag for every setting that has one on fs; the values
// given are applied, in order, by Apply.
func Flags(fs *flag.FlagSet) *FlagSet {
	f := &FlagSet{}
	for _, s := range Settings {
		if s.Flag == "" {
			continue
		}
		// A backquoted word is the flag's placeholder in -h: -replay-window duration.
		usage := s.Doc + " (`" + s.Kind.String() + "`"
		if s.Kind == Bool {
			usage = s.Doc + " (boolean"
		}
		if strings.Contains(s.Key, "*") {
			usage = s.Doc + " (`plugin=value[,value]`, repeatable"
		} else if s.Kind == List || s.Kind == Routes {
			usage += ", repeatable"
		}
		if s.Default != "" {
			usage += "; default " + s.Default
		}
		usage += "; config file: " + s.Key + ", environment: $" + s.Env() + ")"
		if s.Invert {
			usage = s.FlagDoc + " (default true; config file: " + s.Key + ", the opposite; environment: $" + s.Env() + ")"
		}
		fs.Var(&settingFlag{f: f, s: s}, s.Flag, usage)
	}
	return f
}

// Apply applies the flags given to c, after the config file and the
// environment: the flags win.
func (f *FlagSet) Apply(c *Config) error {
	seen := given{}
	var errs []error // every mistake of the flags, not only the first
	for _, g := range f.given {
		if err := applyText(c, seen, g.s, g.text, false, "--"+g.s.Flag); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %v", g.s.Flag, err))
		}
	}
	return errors.Join(errs...)
}

// settingFlag is one setting's flag.Value; a boolean's is a boolean flag
// (--watch=false, --interpreter).
type settingFlag struct {
	f *FlagSet
	s *Setting
}

func (v *settingFlag) String() string { return "" }

func (v *settingFlag) Set(text string) error {
	if _, err := v.s.parse(text); err != nil && !strings.Contains(v.s.Key, "*") {
		return err
	}
	v.f.given = append(v.f.given, flagGiven{v.s, text})
	return nil
}

func (v *settingFlag) IsBoolFlag() bool { return v.s.Kind == Bool }

// Reference is the settings' reference page (docs/config.md): each
// setting's key, flag, environment variable, kind, default and meaning,
// from Settings.
func Reference() string {
	var b strings.Builder
	b.WriteString("# Configuring `ruled run`\n\n")
	b.WriteString("<!-- Generated from host/config's Settings by TestReference: edit the table, then go test -rewrite ./host/config. -->\n\n")
	b.WriteString("Every setting is given in the config file (`--config FILE`, YAML), by an environment variable, or\n")
	b.WriteString("by a flag; a flag wins over the environment, which wins over the file. In the file, a key's dots are\n")
	b.WriteString("sections (`exec-log.runs: 100` is written `exec-log: {runs: 100}`), and `*` is a plugin's name\n")
	b.WriteString("(`plugin: {expr: {grant: [publish]}}`). An environment variable takes what its flag takes; a list's\n")
	b.WriteString("items are separated by spaces (`RULED_GRANT=\"publish=publish scooter=publish,kv\"`). Durations are\n")
	b.WriteString("Go's: `250ms`, `30s`, `1h30m`. Mistakes are refused at start, all of them together, each naming the\n")
	b.WriteString("key and where it was given: the file's line and column, the variable, the flag.\n\n")
	b.WriteString("| file key | flag | environment | kind | default | what it does |\n|---|---|---|---|---|---|\n")
	for _, s := range Settings {
		flagText := ""
		if s.Flag != "" {
			flagText = "`--" + s.Flag + "`"
			if strings.Contains(s.Key, "*") {
				flagText = "`--" + s.Flag + " plugin=a,b`"
			}
			if s.Invert {
				flagText = "`--" + s.Flag + "=false`"
			}
		}
		env := "`" + s.Env() + "`"
		if strings.Contains(s.Key, "*") && s.Flag == "" {
			env = ""
		}
		def := s.Default
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.Key, flagText, env, s.Kind, def, strings.ReplaceAll(s.Doc, "|", "\\|"))
	}
	b.WriteString("\n`--config FILE` names the file (environment: `RULED_CONFIG`).\n")
	b.WriteString("`RULED_CPU_PROFILE=FILE` has `ruled run` write a CPU profile of its whole run there, for `go tool pprof`.\n")
	b.WriteString("`RULED_ALLOC_PROFILE=FILE` has it write, when it stops, what it allocated since it started (`go tool pprof -sample_index=alloc_space`).\n")
	return b.String()
}
