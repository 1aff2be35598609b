package ruled

import (
	"github.com/ruled-dev/ruled/abi"
)

// WhenFunc evaluates a condition against one event.
type WhenFunc func(ev Event) (bool, error)

// DoFunc runs an action. The bytes it returns are the step's result, shown
// in `ruled call` and the execution log; nil is fine.
type DoFunc func(in *Input) ([]byte, error)

// ConfigureCondition turns a step's config into the function that serves
// every call with that config. An error refuses the config: the host reports
// it against the rule that wrote it, at load.
type ConfigureCondition func(cfg Config) (WhenFunc, error)

// ConfigureAction is ConfigureCondition for actions.
type ConfigureAction func(cfg Config) (DoFunc, error)

// Func is a registered function; its methods add to its description.
type Func struct {
	desc          abi.Function
	kind          abi.Kind
	confCondition ConfigureCondition
	confAction    ConfigureAction
}

// Doc sets a one-line description.
func (f *Func) Doc(s string) *Func { f.desc.Doc = s; return f }

// Example sets a config, as JSON, that configures: the first thing an author
// of rules wants to see in `ruled plugin inspect`.
func (f *Func) Example(json string) *Func { f.desc.Example = json; return f }

// Schema sets a JSON Schema for the config.
func (f *Func) Schema(json string) *Func { f.desc.Schema = json; return f }

// Needs declares the capabilities the function uses. The host refuses to
// load a plugin that needs what the operator did not grant, so declare
// exactly what you call.
func (f *Func) Needs(caps ...abi.Capability) *Func {
	f.desc.Needs = append(f.desc.Needs, caps...)
	return f
}

// Capabilities, re-exported so plugins need not import abi.
const (
	CapPublish = abi.CapPublish
	CapKV      = abi.CapKV
	CapFire    = abi.CapFire
	CapHTTP    = abi.CapHTTP
)

var registry struct {
	name, version string
	funcs         []*Func
	byName        map[string]*Func
}

// Plugin names the plugin and its version in its description.
func Plugin(name, version string) {
	registry.name, registry.version = name, version
}

// Condition registers a condition. Registering a name twice panics: it is a
// bug in the plugin, found the first time it starts.
func Condition(name string, configure ConfigureCondition) *Func {
	return register(&Func{desc: abi.Function{Name: name, Kind: abi.KindCondition.String()},
		kind: abi.KindCondition, confCondition: configure})
}

// Action registers an action. Registering a name twice panics.
func Action(name string, configure ConfigureAction) *Func {
	return register(&Func{desc: abi.Function{Name: name, Kind: abi.KindAction.String()},
		kind: abi.KindAction, confAction: configure})
}

func register(f *Func) *Func {
	if registry.byName == nil {
		registry.byName = map[string]*Func{}
	}
	if _, dup := registry.byName[f.desc.Name]; dup {
		panic("ruled: function " + f.desc.Name + " registered twice")
	}
	registry.byName[f.desc.Name] = f
	registry.funcs = append(registry.funcs, f)
	return f
}
