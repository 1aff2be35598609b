//go:build race

package seq

// raceEnabled is true under the race detector, which makes the tests
// that measure 100,000 runs ten times slower and their figures
// meaningless, and takes the machine from the tests beside them.
const raceEnabled = true
