package config

// The config file (--config): every setting of Settings under its key,
// sections as YAML mappings (exec-log: {runs: 100}), a plugin's under
// plugin: {<name>: {...}}. It is read into a Config before the
// environment and the flags, which win.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/internal/regular"
)

// Load reads a YAML config file into c, every key through Settings:
// flags and the environment are applied after it by the caller, so they
// win. An unknown key, or a value of the wrong kind, is an error naming the
// file, the line and column, and the key (with the key it may have meant).
func Load(path string, c *Config) error {
	b, err := regular.ReadFile(path, 1<<20)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d:%d: a config file is a mapping of settings (rules: …, data: …)", path, root.Line, root.Column)
	}
	secretsOK := true
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		secretsOK = false
	}
	return loadMapping(path, root, "", c, given{}, secretsOK)
}

// loadMapping reads the settings of a mapping whose keys start with
// prefix ("" at the top, "exec-log." in its section).
func loadMapping(path string, n *yaml.Node, prefix string, c *Config, g given, secretsOK bool) error {
	seen := map[string]int{}
	var errs []error // every mistake of the file, not only its first
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		at := fmt.Sprintf("%s:%d:%d", path, k.Line, k.Column)
		if first, dup := seen[k.Value]; dup {
			errs = append(errs, fmt.Errorf("%s: %s is given twice (first at line %d): say it once", at, key, first))
			if _, _, ok := Lookup(key); !ok && v.Kind == yaml.MappingNode && isSection(key) {
				// The mistakes inside a second section are still named:
				// merged into the first, it would have no others.
				if err := loadMapping(path, v, key+".", &Config{}, given{}, secretsOK); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		seen[k.Value] = k.Line
		s, name, ok := Lookup(key)
		if !ok {
			if v.Kind == yaml.MappingNode && isSection(key) {
				if err := loadMapping(path, v, key+".", c, g, secretsOK); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			msg := fmt.Sprintf("%s: %s: unknown setting", at, key)
			if m := didYouMean(key); m != "" {
				msg += " (did you mean " + m + "?)"
			}
			errs = append(errs, errors.New(msg))
			continue
		}
		if s.Flag == "" && strings.Contains(s.Doc, "a secret") && !secretsOK {
			errs = append(errs, fmt.Errorf("%s: %s is a secret, in a file others can read: give it by $%s, or chmod 600 the file", at, key, s.Env()))
			continue
		}
		val, err := nodeValue(s, v)
		if err == nil {
			g.replaces(c, s, name)
			err = s.set(c, name, val) // the file says the key's own sense: no Invert
		}
		if err == nil {
			c.note(s, name, fmt.Sprintf("%s:%d:%d", path, v.Line, v.Column))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d:%d: %s: %v", path, v.Line, v.Column, key, err))
		}
	}
	return errors.Join(errs...)
}

// isSection reports whether key is a section some setting's key lies in
// (exec-log, mqtt.tls, plugin.<name>, plugin.<name>.http).
func isSection(key string) bool {
	parts := strings.Split(key, ".")
	for _, s := range Settings {
		sp := strings.Split(s.Key, ".")
		if len(sp) <= len(parts) {
			continue
		}
		ok := true
		for i := range parts {
			if sp[i] != "*" && sp[i] != parts[i] {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// nodeValue reads a YAML value as s's kind.
func nodeValue(s *Setting, v *yaml.Node) (value, error) {
	for v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch s.Kind {
	case List:
		var out value
		if v.Kind == yaml.ScalarNode {
			out.list = []string{v.Value}
			return out, nil
		}
		if v.Kind != yaml.SequenceNode {
			return out, errors.New("want a list")
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return out, errors.New("want a list of words")
			}
			out.list = append(out.list, e.Value)
		}
		return out, nil
	case Routes:
		var out value
		if v.Kind != yaml.SequenceNode {
			return out, errors.New("want a list of topic patterns or of {topic, qos, retain, at-most-once}")
		}
		for _, e := range v.Content {
			switch e.Kind {
			case yaml.ScalarNode:
				out.routes = append(out.routes, MQTTRoute{Topic: e.Value, QoS: 1})
			case yaml.MappingNode:
				var r struct {
					Topic      string `yaml:"topic"`
					QoS        *byte  `yaml:"qos"`
					Retain     bool   `yaml:"retain"`
					AtMostOnce bool   `yaml:"at-most-once"`
				}
				for j := 0; j+1 < len(e.Content); j += 2 {
					if k := e.Content[j].Value; k != "topic" && k != "qos" && k != "retain" && k != "at-most-once" {
						return out, fmt.Errorf("line %d: a route takes topic, qos, retain and at-most-once, not %s", e.Content[j].Line, k)
					}
				}
				if err := e.Decode(&r); err != nil {
					return out, fmt.Errorf("line %d: %v", e.Line, err)
				}
				qos := byte(1)
				if r.QoS != nil {
					qos = *r.QoS
				}
				out.routes = append(out.routes, MQTTRoute{Topic: r.Topic, QoS: qos, Retain: r.Retain, AtMostOnce: r.AtMostOnce})
			default:
				return out, errors.New("want a topic pattern or {topic, qos, retain, at-most-once}")
			}
		}
		return out, nil
	}
	if v.Kind != yaml.ScalarNode {
		return value{}, fmt.Errorf("want %s", s.Kind.phrase())
	}
	return s.parse(v.Value)
}

// didYouMean is the known key closest to key (rules.Suggest, over the
// keys and the flags: a flag's name in the file means its key), "" when
// none is close.
func didYouMean(key string) string {
	var words []string
	byWord := map[string]string{}
	parts := strings.Split(key, ".")
	for _, st := range Settings {
		words = append(words, st.Key)
		byWord[st.Key] = st.Key
		// plugin.*.grant as plugin.publish.grant, for plugin.publish.grnat.
		if sp := strings.Split(st.Key, "."); strings.Contains(st.Key, "*") && len(sp) == len(parts) {
			for i := range sp {
				if sp[i] == "*" {
					sp[i] = parts[i]
				}
			}
			w := strings.Join(sp, ".")
			words = append(words, w)
			byWord[w] = w
		}
		if st.Flag != "" {
			words = append(words, st.Flag)
			byWord[st.Flag] = st.Key
		}
	}
	return byWord[rules.Suggest(key, words)]
}

// ParseHTTPAllow reads one --http-allow (private: --http-allow-private)
// value, "plugin=host[,host]", into the plugin's HTTP policy, adding to
// it: the flag's own reading (Settings), for a caller without flags.
func (c *Config) ParseHTTPAllow(s string, private bool) error {
	key := "plugin.*.http.hosts"
	if private {
		key = "plugin.*.http.private"
	}
	st, _, _ := Lookup(key)
	return applyText(c, nil, st, s, false, "--"+st.Flag)
}

// ParseGrant reads a --grant value, "plugin=cap,cap", into c, adding to
// the plugin's grant: the flag's own reading (Settings).
func (c *Config) ParseGrant(s string) error {
	st, _, _ := Lookup("plugin.*.grant")
	return applyText(c, nil, st, s, false, "--"+st.Flag)
}
