package abi

import "strconv"

// Descriptor is what ExportDescribe returns, as JSON: the plugin's name and
// version, and the functions it exports. The host reads it once, at load.
//
// JSON rather than a view because it is read once per load, by the host
// only, and because a person reading `ruled plugin inspect` output or a
// module's custom tooling should be able to read it too. Unknown fields are
// ignored, so adding one is not a breaking change.
type Descriptor struct {
	// ABI repeats ExportABIVersion's answer.
	ABI uint32 `json:"abi"`
	// Name is the plugin's own name for itself; the operator's name for it
	// (its file name) is what rules use.
	Name      string     `json:"name,omitempty"`
	Version   string     `json:"version,omitempty"`
	Functions []Function `json:"functions"`
}

// Function describes one condition or action.
type Function struct {
	Name string `json:"name"`
	// Kind is "condition" or "action".
	Kind string `json:"kind"`
	Doc  string `json:"doc,omitempty"`
	// Example is a config that configures, as raw JSON: the documentation
	// an author most wants, and something `ruled plugin inspect` can show.
	Example string `json:"example,omitempty"`
	// Schema is an optional JSON Schema for the config, as raw JSON.
	Schema string `json:"schema,omitempty"`
	// Needs lists the capabilities the function uses.
	Needs []Capability `json:"needs,omitempty"`
}

// AppendJSON appends d as JSON without encoding/json, so that a guest can
// describe itself without linking reflection. Example and Schema are
// written as strings, not spliced in as raw JSON, so a malformed example
// cannot break the document.
func (d *Descriptor) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"abi":`...)
	dst = strconv.AppendUint(dst, uint64(d.ABI), 10)
	if d.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = AppendJSONString(dst, d.Name)
	}
	if d.Version != "" {
		dst = append(dst, `,"version":`...)
		dst = AppendJSONString(dst, d.Version)
	}
	dst = append(dst, `,"functions":[`...)
	for i := range d.Functions {
		f := &d.Functions[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = AppendJSONString(dst, f.Name)
		dst = append(dst, `,"kind":`...)
		dst = AppendJSONString(dst, f.Kind)
		for _, kv := range [...]struct{ k, v string }{{"doc", f.Doc}, {"example", f.Example}, {"schema", f.Schema}} {
			if kv.v != "" {
				dst = append(dst, ',', '"')
				dst = append(dst, kv.k...)
				dst = append(dst, '"', ':')
				dst = AppendJSONString(dst, kv.v)
			}
		}
		if len(f.Needs) > 0 {
			dst = append(dst, `,"needs":[`...)
			for j, c := range f.Needs {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = AppendJSONString(dst, string(c))
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// AppendJSONString appends s as a JSON string. Invalid UTF-8 is passed
// through byte for byte; the host's decoder replaces it.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0 // bytes from start on are appended in one go, up to one to escape
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
