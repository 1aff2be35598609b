//go:build !wasip1

package ruled

import (
	"os"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Off wasm there is no host: the SDK's logic runs natively (in an author's
// unit tests, and in the SDK's own), log lines go to stderr, Now is the
// process clock, and every other host function answers StatusUnavailable.

var unavailable = -int32(abi.StatusUnavailable)

func hostLog(level abi.Level, msg string) { os.Stderr.WriteString(msg + "\n") }
func hostNow() int64                      { return time.Now().UnixNano() }
func hostEventRaw([]byte) int32           { return unavailable }
func hostPublish(string, []byte) int32    { return unavailable }
func hostKVGet(string, []byte) int32      { return unavailable }
func hostKVSet(string, []byte) int32      { return unavailable }
func hostKVDelete(string) int32           { return unavailable }
func hostFire(string, []byte, []byte) int32 {
	return unavailable
}
