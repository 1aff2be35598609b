package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/abi"
)

// Catalog is what the rules' caller knows about plugins: the daemon's
// loaded modules, or lint's. It is declared here, where it is consumed, and
// kept to what parsing needs.
type Catalog interface {
	// Function reports the kind of plugin's function, ok false when the
	// plugin or the function does not exist.
	Function(plugin, function string) (kind abi.Kind, ok bool)
	// Plugins lists the loaded plugins' names, for hints.
	Plugins() []string
}

// FunctionLister is an optional interface of a Catalog. With it, a
// misspelt function name gets a did-you-mean and the plugin's functions
// are listed.
type FunctionLister interface {
	Functions(plugin string) []string
}

// ConfigChecker is an optional interface of a Catalog: with it, the plugin
// itself checks each config a rule gives one of its functions (lint
// configures it on the module, as the daemon will), and a refusal is
// reported at the with:, tagged with the rule. It is only asked about
// functions the catalog has, with the right kind. A returned *Error gives
// the message and hint; its position and rule are filled in.
type ConfigChecker interface {
	CheckConfig(plugin, function string, config []byte) error
}

// LoadReporter is an optional interface of a Catalog: a plugin whose file
// is there but did not load (a capability not granted, a broken module) is
// reported with why, not taken for a misspelling of another plugin.
type LoadReporter interface {
	// NotLoaded reports why plugin's file did not load, ok false when
	// there is no such file or it loaded.
	NotLoaded(plugin string) (why string, ok bool)
}

// ConfigRefused is how a plugin's refusal of a config is reported at the
// with:, the same in lint and in the daemon: "plugin.fn refuses this
// config: " and the plugin's text, cut to its first line (expr draws a
// caret under the expression on the lines after) and without the "fn:
// config " the SDKs put before it, which the message says already:
// `hot.hot refuses this config: "above" must be a number, not the string
// "thirty"`.
func ConfigRefused(plugin, fn, text string) *Error {
	text, _, _ = strings.Cut(text, "\n")
	if t, ok := strings.CutPrefix(text, fn+": config "); ok {
		text = t
	} else {
		text = strings.TrimPrefix(text, fn+": ")
	}
	text = strings.TrimSpace(text)
	return &Error{Msg: plugin + "." + fn + " refuses this config: " + text}
}

// checkConfig asks the catalog's ConfigChecker, if any, about c's config.
func (p *parser) checkConfig(c *Call, at *yaml.Node) {
	cc, ok := p.cat.(ConfigChecker)
	if !ok {
		return
	}
	err := cc.CheckConfig(c.Plugin, c.Function, c.With)
	if err == nil {
		return
	}
	var re *Error
	if errors.As(err, &re) {
		p.errorf(at, "%s", re.Msg).Hint = re.Hint
		return
	}
	p.errorf(at, "%s.%s refuses this config: %v", c.Plugin, c.Function, err)
}

// check reports a call whose function the catalog does not have, or has
// with the other kind. at is the do: node. It returns the problem, nil if
// none.
func (p *parser) check(c *Call, at *yaml.Node, want abi.Kind) *Error {
	if p.cat == nil {
		return nil
	}
	kind, ok := p.cat.Function(c.Plugin, c.Function)
	switch {
	case ok && kind == want:
		return nil
	case ok && kind == abi.KindCondition:
		e := p.errorf(at, "%s.%s is a condition, not an action", c.Plugin, c.Function)
		e.Hint = "do: runs an action; a condition goes under when:"
		return e
	case ok:
		e := p.errorf(at, "%s.%s is an action, not a condition", c.Plugin, c.Function)
		e.Hint = "when: takes a condition; an action goes in a step's do:"
		return e
	}
	plugins := slices.Sorted(slices.Values(p.cat.Plugins()))
	if lr, ok := p.cat.(LoadReporter); ok && !slices.Contains(plugins, c.Plugin) {
		if why, ok := lr.NotLoaded(c.Plugin); ok {
			return p.errorf(at, "plugin %q did not load: %s", c.Plugin, why)
		}
	}
	if !slices.Contains(plugins, c.Plugin) {
		loaded := "none loaded"
		if len(plugins) > 0 {
			loaded = "loaded: " + strings.Join(plugins, ", ")
		}
		e := p.errorf(at, "no plugin %q; %s", c.Plugin, loaded)
		e.Hint = didYouMean(c.Plugin, plugins)
		return e
	}
	e := p.errorf(at, "plugin %q has no function %q", c.Plugin, c.Function)
	if l, ok := p.cat.(FunctionLister); ok {
		fns := l.Functions(c.Plugin)
		if e.Hint = didYouMean(c.Function, fns); e.Hint == "" && len(fns) > 0 {
			e.Hint = fmt.Sprintf("it has %s", strings.Join(fns, ", "))
		}
	}
	return e
}
