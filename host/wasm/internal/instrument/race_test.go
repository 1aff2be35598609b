//go:build race

package instrument

// raceEnabled is true under the race detector, which flags the interpreter's
// read of the fuel global racing with the host's asynchronous Set (compiled
// code's reads are invisible to it).
const raceEnabled = true
