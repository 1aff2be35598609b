package instrument

import (
	"bytes"
	"strings"
	"testing"
)

func custom(name string, data string) []byte {
	p := appendU32(nil, uint32(len(name)))
	return sec(secCustom, append(append(p, name...), data...)...)
}

// TestSectionsKept checks that only the memory, global, export, code,
// function and type sections change (the function section gains the
// charging helpers, the type section their type and wrapping blocks'
// types when missing), DWARF is dropped, and every other section, custom
// ones included, is copied byte for byte in its place.
func TestSectionsKept(t *testing.T) {
	orig := cat(custom("first", "x"), readTestdata(t, "features.wasm")[8:],
		custom(".debug_info", "dwarf"), custom("name", "\x00\x01\x00"),
		custom(".debug_line", "lines"), custom("producers", "p"))
	orig = module(orig)
	m := mustInstrument(t, orig, Options{MemoryPages: 4})
	in, err := splitSections(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, err := splitSections(m.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[byte]bool{secMemory: true, secGlobal: true, secExport: true, secCode: true, secFunction: true, secType: true,
		secTable: true}
	var want, got []string
	for _, s := range in {
		if !s.isDebug() {
			want = append(want, sectionNames[s.id]+":"+s.name)
		}
	}
	for _, s := range out {
		got = append(got, sectionNames[s.id]+":"+s.name)
	}
	// features.wasm has no global section: it is inserted after memory.
	wantOrder := strings.Replace(strings.Join(want, " "), "memory: ", "memory: global: ", 1)
	if g := strings.Join(got, " "); g != wantOrder {
		t.Errorf("got sections %v; want %v", g, wantOrder)
	}
	i := 0
	for _, s := range in {
		if s.isDebug() {
			continue
		}
		for out[i].id != s.id || out[i].name != s.name {
			i++
		}
		o := out[i]
		if !changed[s.id] && !bytes.Equal(orig[s.start:s.end], m.Bytes[o.start:o.end]) {
			t.Errorf("%s section %q changed", sectionNames[s.id], s.name)
		}
	}
}

func TestFunctionsCounted(t *testing.T) {
	for _, c := range []struct {
		file string
		want int
	}{
		{"features.wasm", 11},
		{"calltree.wasm", 42},
		{"minimal.wasm", 0},
	} {
		if got := mustInstrument(t, readTestdata(t, c.file), Options{}).Functions; got != c.want {
			t.Errorf("%s: got %v; want %v", c.file, got, c.want)
		}
	}
}

// TestInstrumentTwice checks that a module that already has the export is
// refused, which also stops double instrumentation.
func TestInstrumentTwice(t *testing.T) {
	m := mustInstrument(t, readTestdata(t, "loop_sum.wasm"), Options{})
	_, err := Instrument(m.Bytes, Options{})
	if want := `module already exports "ruled_fuel"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v; want %v", err, want)
	}
}

func TestDoesNotModifyInput(t *testing.T) {
	for _, name := range testdataModules(t) {
		orig := readTestdata(t, name)
		keep := bytes.Clone(orig)
		Instrument(orig, Options{MemoryPages: 2})
		if !bytes.Equal(orig, keep) {
			t.Errorf("%s: input modified", name)
		}
	}
}
