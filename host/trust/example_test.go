package trust_test

import (
	"bytes"
	"fmt"

	"github.com/ruled-dev/ruled/host/trust"
)

// A module signed by the operator's key, checked against the keys the
// config trusts; the same bytes under another name are refused.
func Example() {
	key, _ := trust.Generate("ops-2026", bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	module := []byte("\x00asm…")
	sig := key.Sign("plugins/publish.wasm", module).Marshal() // written to plugins/publish.wasm.sig

	ring, _ := trust.NewKeyring([]trust.PublicKey{key.Public()}, nil)
	signer, err := ring.Verify("plugins/publish.wasm", module, sig)
	fmt.Println(signer, err)
	_, err = ring.Verify("plugins/log.wasm", module, sig)
	fmt.Println(err)
	// Output:
	// ops-2026 <nil>
	// plugins/log.wasm: renamed (key ops-2026): signed as "publish.wasm"
}
