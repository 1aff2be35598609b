package trust

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkVerify is what checking a module costs at a start or a reload:
// its sha256 and one ed25519 verification, for a module the size of an
// AssemblyScript plugin and one of a Go plugin.
func BenchmarkVerify(b *testing.B) {
	k, _ := Generate("bench", bytes.NewReader(bytes.Repeat([]byte{1}, 64)))
	ring, _ := NewKeyring([]PublicKey{k.Public()}, nil)
	for _, size := range []int{50 << 10, 2300 << 10} {
		mod := bytes.Repeat([]byte{0xa5}, size)
		sig := k.Sign("m.wasm", mod).Marshal()
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := ring.Verify("m.wasm", mod, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
