package seq

import (
	"testing"
	"unsafe"
)

// TestParkedRunSizes holds what every parked run carries to the size
// classes issue 38's figures were measured at (100,000 parked runs ready
// in ≤ 2 s and ≤ 100 MB): a field added to one of these moves every
// parked run's cost, and belongs in its rare part instead.
func TestParkedRunSizes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max uintptr
	}{
		{"run", unsafe.Sizeof(run{}), 192},
		{"runContext", unsafe.Sizeof(runContext{}), 48},
		{"keyState", unsafe.Sizeof(keyState{}), 48},
	} {
		if tc.size > tc.max {
			t.Errorf("%s is %d bytes; want at most %d (runRare, runData and keyMore are for what few have)", tc.name, tc.size, tc.max)
		}
	}
}
