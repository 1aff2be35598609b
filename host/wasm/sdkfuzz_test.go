package wasm

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// FuzzSDKViews hands the C and Rust SDKs' template plugins (sdk/c/tmpltest,
// sdk/rust/tmpltest) configs whose views are not the host's — counts past
// the entries, offsets past the end, paths out of order — as a hostile or
// broken host might: configuring a JSON template walks every container,
// and rendering walks the event's. Each call must answer a status (a
// refusal is fine), never trap, never write outside what it owns; the
// instance then still answers a well-formed call.
func FuzzSDKViews(f *testing.F) {
	good, _ := abi.AppendJSONView(nil, []byte(`{"payload":{"a":[1,2.5,{"b":"{{x}}"}],"t":"v {{y.z}}"}}`), true)
	f.Add(good)
	// The payload object claims 0xFFFFFFFF members (the C SDK once sized
	// an allocation by it: wrapped to 8 bytes on wasm32).
	lying := append([]byte(nil), good...)
	v, _ := abi.ParseView(lying)
	for i := range v.Len() {
		if string(v.Entry(i).Path()) == "payload" {
			binary.LittleEndian.PutUint32(lying[16+16*i+8:], 0xFFFFFFFF)
		}
	}
	f.Add(lying)
	f.Add([]byte("RV\x01\x01\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00"))
	type sdk struct {
		m  *Module
		in *instance
	}
	var sdks []sdk
	for _, p := range []func(testing.TB) string{
		func(t testing.TB) string { return plugintest.C(t, "sdk/c/tmpltest") },
		func(t testing.TB) string { return plugintest.Rust(t, "sdk/rust/tmpltest/tmpltest.rs") },
	} {
		e := newEnv(f)
		m := e.load(f, p(f), Options{Name: "tmpltest"})
		sdks = append(sdks, sdk{m: m})
	}
	event, _ := abi.AppendJSONView(nil, []byte(`{"x":1,"y":{"z":[true,null,"s"]}}`), false)
	call := abi.AppendCallInfo(nil, &abi.CallInfo{Topic: "t", Rule: "r", Step: "s", Run: "u", Key: "k"})
	call = append(call, event...)
	f.Fuzz(func(t *testing.T, view []byte) {
		ctx := context.Background()
		for _, s := range sdks {
			in, err := s.m.acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			stack := make([]uint64, 3)
			run := func(fn int, what string, args ...uint64) uint64 {
				copy(stack, args)
				if err := in.invoke(ctx, in.fns[fn], s.m.limits.Timeout, 0, stack); err != nil {
					t.Fatalf("%s: %s on %x: %v", s.m.Name(), what, view, err)
				}
				return stack[0]
			}
			input := binary.LittleEndian.AppendUint16(nil, 4)
			input = append(append(input, "json"...), view...)
			p, n, err := in.input(ctx, input)
			if err != nil {
				t.Fatal(err)
			}
			st, h := abi.UnpackConfigure(run(fnConfigure, "configure", uint64(p), uint64(n)))
			if st == abi.StatusOK {
				p, n, err = in.input(ctx, call)
				if err != nil {
					t.Fatal(err)
				}
				if got := abi.Status(int32(api.DecodeU32(run(fnAct, "act", uint64(h), uint64(p), uint64(n))))); got != abi.StatusOK {
					t.Errorf("%s: act after configuring %x: %v", s.m.Name(), view, got)
				}
				run(fnRelease, "release", uint64(h))
			}
			// Still whole: a well-formed config configures.
			input = binary.LittleEndian.AppendUint16(nil, 4)
			input = append(append(input, "json"...), good...)
			p, n, _ = in.input(ctx, input)
			if st, h := abi.UnpackConfigure(run(fnConfigure, "configure after", uint64(p), uint64(n))); st != abi.StatusOK {
				t.Errorf("%s: a good config after %x: %v", s.m.Name(), view, st)
			} else {
				run(fnRelease, "release", uint64(h))
			}
			s.m.release(in)
		}
	})
}
