package instrument

import (
	"strings"
	"testing"
)

func TestMalformed(t *testing.T) {
	code := func(b []byte) []byte { return withCode(b) }
	for _, c := range []struct {
		name string
		wasm []byte
		want string // the error, or its start when it ends in "…"
	}{
		{"empty", nil, "instrument: not a wasm binary (bad magic number)"},
		{"magic only", []byte("\x00asm"), "instrument: unsupported wasm binary version (want 1)"},
		{"wrong magic", []byte("\x00ASM\x01\x00\x00\x00"), "instrument: not a wasm binary (bad magic number)"},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), "instrument: unsupported wasm binary version (want 1)"},
		{"unknown section", module(sec(14)), "instrument: unknown section id 14 at offset 0x8"},
		{"section past end", module([]byte{secType, 5, 0}), "instrument: type section of 5 bytes runs past the end of the module at offset 0x8"},
		{"size LEB too long", module([]byte{secType, 0x80, 0x80, 0x80, 0x80, 0x80, 0}), "instrument: type section: LEB128 integer too long or too large for 32 bits at offset 0x9"},
		{"size LEB too large", module([]byte{secType, 0xff, 0xff, 0xff, 0xff, 0x7f}), "instrument: type section: LEB128 integer too long or too large for 32 bits at offset 0x9"},
		{"size LEB truncated", module([]byte{secType, 0x80}), "instrument: type section: truncated LEB128 integer at offset 0x9"},
		{"out of order", module(memSec, typeSec), "instrument: type section out of order or repeated at offset 0xd"},
		{"repeated", module(typeSec, typeSec), "instrument: type section out of order or repeated at offset 0xe"},
		{"custom name past end", module(sec(secCustom, 5, 'a')), "instrument: custom section: name: 5 bytes expected, 1 left at offset 0xb"},
		{"unknown import kind", module(sec(secImport, 1, 1, 'a', 1, 'b', 5)), "instrument: import section: import 0: unknown import kind 0x05 at offset 0xf"},
		{"unknown opcode fc", code(body(0xfc, 0x20, 0x0b)), "instrument: code section: function 0 (body 0): unknown opcode 0xfc 0x20 at offset 0x1c"},
		{"unknown opcode", code(body(0x06, 0x40, 0x0b, 0x0b)), "instrument: code section: function 0 (body 0): unknown opcode 0x06 at offset 0x1c"},
		{"simd gap", code(body(0xfd, 0x9a, 0x01, 0x0b)), "instrument: code section: function 0 (body 0): unknown opcode 0xfd 0x9a at offset 0x1c"},
		{"relaxed simd", code(body(0xfd, 0x80, 0x02, 0x0b)), "instrument: code section: function 0 (body 0): unknown opcode 0xfd 0x100 at offset 0x1c"},
		{"unknown atomic", code(body(0xfe, 0x04, 0x0b)), "instrument: code section: function 0 (body 0): unknown opcode 0xfe 0x04 at offset 0x1c"},
		{"fence byte", code(body(0xfe, 0x03, 0x01, 0x0b)), "instrument: code section: function 0 (body 0): expected 0x00, got 0x01 at offset 0x1e"},
		{"gc prefix", code(body(0xfb, 0x00, 0x0b)), "instrument: code section: function 0 (body 0): unknown opcode 0xfb at offset 0x1c"},
		{"i64 LEB too long", code(body(0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1a, 0x0b)), "instrument: code section: function 0 (body 0): LEB128 integer too long or too large for 64 bits at offset 0x1d"},
		{"i32 LEB too large", code(body(0x41, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x1a, 0x0b)), "instrument: code section: function 0 (body 0): LEB128 integer too long or too large for 32 bits at offset 0x1d"},
		{"index LEB truncated", code(body(0x10)), "instrument: code section: function 0 (body 0): truncated LEB128 integer at offset 0x1d"},
		{"bad block type", code(body(0x02, 0x5f, 0x0b, 0x0b)), "instrument: code section: function 0 (body 0): unknown block type 0x5f at offset 0x1d"},
		{"memarg truncated", code(body(0x28, 0x02)), "instrument: code section: function 0 (body 0): truncated LEB128 integer at offset 0x1e"},
		{"br_table truncated", code(body(0x0e, 0x03, 0x00, 0x01)), "instrument: code section: function 0 (body 0): truncated LEB128 integer at offset 0x20"},
		{"no end", code(body(0x01)), "instrument: code section: function 0 (body 0): function body ends before its final end at offset 0x1d"},
		{"code after end", code(body(0x0b, 0x01)), "instrument: code section: function 0 (body 0): code after the function's final end at offset 0x1d"},
		{"unknown local type", code([]byte{4, 1, 1, 0x60, 0x0b}), "instrument: code section: function 0 (body 0): unknown value type 0x60 at offset 0x1d"},
		{"body past section", code([]byte{5, 0, 0x0b}), "instrument: code section: function 0 (body 0): 5 bytes expected, 2 left at offset 0x1b"},
		{"bodies over functions", module(typeSec, funcSec, memSec, sec(secCode, cat([]byte{2}, body(0x0b), body(0x0b))...)), "instrument: code section: 2 function bodies but the function section declares 1 functions"},
		{"function type out of range", module(typeSec, sec(secFunction, 2, 0, 48), memSec, sec(secCode, cat([]byte{2}, body(0x10, 0x01, 0x0b), body(0x0b))...)), "instrument: function section: function 1 has type 48 but the module has 1 types at offset 0x12"},
		{"no code section", module(typeSec, funcSec, memSec), "instrument: function section declares 1 functions but there is no code section"},
		// Counts wazero would allocate by (see guard.go).
		{"element count", module(memSec, sec(secElement, 0xe8, 0xe8, 0xe8, 0x31, 0x00)), "instrument: element section: unexpected end of data at offset 0x14"},
		{"element funcs", module(memSec, sec(secElement, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f)), "instrument: element section: truncated LEB128 integer at offset 0x17"},
		{"element flags", module(memSec, sec(secElement, 1, 8)), "instrument: element section: unknown element segment flags 8 at offset 0x10"},
		{"data length", module(memSec, sec(secData, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f)), "instrument: data section: 4294967295 bytes expected, 0 left at offset 0x16"},
		{"data flags", module(memSec, sec(secData, 1, 3)), "instrument: data section: unknown data segment flags 3 at offset 0x10"},
		{"type params", module(sec(secType, 1, 0x60, 0xff, 0xff, 0xff, 0xff, 0x0f)), "instrument: type section: unexpected end of data at offset 0x11"},
		{"type form", module(sec(secType, 1, 0x4e, 0)), "instrument: type section: unsupported type form 0x4e at offset 0xb"},
		{"global count", module(sec(secGlobal, 0xff, 0xff, 0xff, 0xff, 0x0f)), "instrument: global section: 4294967295 entries cannot fit in 0 bytes at offset 0xa"},
		{"table count", module(sec(secTable, 5, 0x70, 0, 1)), "instrument: table section: 5 entries cannot fit in 3 bytes at offset 0xa"},
		{"name count", module(custom("name", "\x01\x05\xff\xff\xff\xff\x0f")), "instrument: custom section: truncated LEB128 integer at offset 0x16"},
		{"name length", module(custom("name", "\x00\x05\xff\xff\xff\xff\x0f")), "instrument: custom section: 4294967295 bytes expected, 0 left at offset 0x16"},
		{"name trailing", module(custom("name", "\x00\x02\x00\x00")), "instrument: custom section: unexpected bytes at the end of name subsection 0 at offset 0x12"},
		{"locals", code([]byte{10, 2, 0xc0, 0xb8, 0x02, 0x7f, 0xa0, 0x9c, 0x01, 0x7e, 0x0b}), "instrument: code section: function 0 (body 0): more than 50000 locals at offset 0x20"},
		{"fuel exported", module(typeSec, funcSec, memSec, sec(secExport, cat([]byte{1, 10}, []byte("ruled_fuel"), []byte{0, 0})...), sec(secCode, cat([]byte{1}, body(0x0b))...)), `instrument: export section: module already exports "ruled_fuel" at offset 0x1a`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Instrument(c.wasm, Options{})
			if err == nil || err.Error() != c.want {
				t.Errorf("got %v; want %v", err, c.want)
			}
			if m != nil {
				t.Errorf("got a module with the error")
			}
		})
	}
}

// TestTruncated cuts every testdata module at every length: no cut may panic,
// and a cut inside a section must be an error. (A cut between sections is a
// shorter module that may well be valid.)
func TestTruncated(t *testing.T) {
	for _, name := range testdataModules(t) {
		wasm := readTestdata(t, name)
		secs, err := splitSections(wasm)
		if err != nil {
			t.Fatal(err)
		}
		boundary := map[int]bool{len(magic): true}
		for _, s := range secs {
			boundary[s.end] = true
		}
		for i := range len(wasm) {
			_, err := Instrument(wasm[:i], Options{MemoryPages: 16})
			if err == nil && !boundary[i] {
				t.Errorf("%s cut at %d (inside a section): got no error", name, i)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "instrument: ") {
				t.Errorf("%s cut at %d: got %v; want the instrument: prefix", name, i, err)
			}
		}
	}
}
