package state

import (
	"bytes"
	"math"

	"github.com/ruled-dev/ruled/abi"
)

// Same reports whether two events' views (abi.View) are the same state:
// the same members with the same values, whatever their order and
// spacing in the JSON, but for the "id" and "time" members, which name a
// report rather than what it reports. 1 and 1.0 differ (an int and a
// float, as the view has them); a view that does not parse is no state
// the same as another.
func Same(a, b []byte) bool {
	va, err := abi.ParseView(a)
	if err != nil {
		return false
	}
	vb, err := abi.ParseView(b)
	if err != nil {
		return false
	}
	i, j := 0, 0
	for {
		i = skipReport(va, i)
		j = skipReport(vb, j)
		if i == va.Len() || j == vb.Len() {
			return i == va.Len() && j == vb.Len()
		}
		if !sameEntry(va.Entry(i), vb.Entry(j)) {
			return false
		}
		i++
		j++
	}
}

// skipReport is the first entry from i on that is part of the state:
// not the root (whose member count "id" and "time" change) and not an
// "id" or "time" member or what is below one.
func skipReport(v abi.View, i int) int {
	for ; i < v.Len(); i++ {
		p := v.Entry(i).Path()
		if len(p) == 0 || isReport(p, "id") || isReport(p, "time") {
			continue
		}
		return i
	}
	return i
}

func isReport(path []byte, name string) bool {
	return bytes.HasPrefix(path, []byte(name)) && (len(path) == len(name) || path[len(name)] == '.')
}

func sameEntry(x, y abi.Value) bool {
	if x.Kind() != y.Kind() || !bytes.Equal(x.Path(), y.Path()) {
		return false
	}
	switch x.Kind() {
	case abi.ValueBool:
		a, _ := x.Bool()
		b, _ := y.Bool()
		return a == b
	case abi.ValueInt:
		a, _ := x.Int()
		b, _ := y.Int()
		return a == b
	case abi.ValueFloat:
		a, _ := x.Float()
		b, _ := y.Float()
		return math.Float64bits(a) == math.Float64bits(b)
	case abi.ValueString:
		a, _ := x.Str()
		b, _ := y.Str()
		return bytes.Equal(a, b)
	case abi.ValueObject, abi.ValueArray:
		a, _ := x.Count()
		b, _ := y.Count()
		return a == b
	}
	return true // null
}
