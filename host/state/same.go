package state

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"strconv"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
)

// Same reports whether two events' views (abi.View) are the same state:
// the same members with the same values, whatever their order and
// spacing in the JSON, but for the "id" and "time" members, which name a
// report rather than what it reports. Numbers are the same when their
// values are (21 and 21.0: a device may write either); a view that does
// not parse is no state the same as another.
func Same(a, b []byte) bool { return sameWhere(a, b, inState) }

// inState reports whether an entry's path is part of the state: not the
// root (whose member count "id" and "time" change) and not an "id" or
// "time" member or what is below one.
func inState(p []byte) bool { return len(p) > 0 && !isReport(p, "id") && !isReport(p, "time") }

// sameWhere reports whether two views have the same entries among those
// whose paths keep takes: Same's and SameAt's one walk (both views'
// entries are sorted by path). A view that does not parse is the same as
// none.
func sameWhere(a, b []byte, keep func(path []byte) bool) bool {
	va, err := abi.ParseView(a)
	if err != nil {
		return false
	}
	vb, err := abi.ParseView(b)
	if err != nil {
		return false
	}
	next := func(v abi.View, i int) int {
		for i < v.Len() && !keep(v.Entry(i).Path()) {
			i++
		}
		return i
	}
	i, j := 0, 0
	for {
		i, j = next(va, i), next(vb, j)
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

func isReport(path []byte, name string) bool {
	return bytes.HasPrefix(path, []byte(name)) && (len(path) == len(name) || path[len(name)] == '.')
}

func sameEntry(x, y abi.Value) bool {
	if !bytes.Equal(x.Path(), y.Path()) {
		return false
	}
	if numeric(x) && numeric(y) && x.Kind() != y.Kind() {
		a, _ := x.Float() // an int's value as a float
		b, _ := y.Float()
		return a == b
	}
	if x.Kind() != y.Kind() {
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
		return a == b // by value: -0 and 0 are one (JSON has no NaN)
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

// SameAt reports whether two views hold the same value at path: the
// entry there and every entry below it. Neither having one is the same.
func SameAt(a, b []byte, path string) bool {
	return sameWhere(a, b, func(p []byte) bool { return isReport(p, path) })
}

// Is reports whether the view has at path a value equal to want: a
// string, a float64 (equal to an int or float entry), a bool, or nil for
// null. An object, an array or no value is equal to none.
func Is(view []byte, path string, want any) bool {
	v, err := abi.ParseView(view)
	if err != nil {
		return false
	}
	x, ok := v.Find(path)
	if !ok {
		return false
	}
	switch w := want.(type) {
	case nil:
		return x.Kind() == abi.ValueNull
	case bool:
		b, ok := x.Bool()
		return ok && b == w
	case string:
		s, ok := x.Str()
		return ok && string(s) == w
	case float64:
		f, ok := x.Float() // an int's value as a float
		return ok && f == w
	}
	return false
}

// Fires reports whether an event whose entity's state changed as ch says,
// and whose view is view, fires the change trigger t. A state the table
// refused (ch.Refused) fires nothing: the refusal is counted and warned
// where it happened.
func Fires(t rules.Change, ch Change, view []byte) bool {
	if ch.Entity == "" || ch.Refused != "" || !ch.Changed {
		return false
	}
	if t.Field == "" {
		return true
	}
	var prev []byte
	if ch.Prev != nil {
		prev = ch.Prev.View
	}
	if t.Hysteresis > 0 {
		return false // Table.Crossed decides, with the trigger's flag
	}
	if t.Threshold() {
		return inRange(t, view) && (prev == nil || !inRange(t, prev))
	}
	if prev != nil && SameAt(prev, view, t.Field) {
		return false
	}
	if prev == nil {
		if v, _ := abi.ParseView(view); !has(v, t.Field) {
			return false // no value before, none now
		}
	}
	if len(t.From) > 0 && (prev == nil || !anyIs(prev, t.Field, t.From)) {
		return false
	}
	return len(t.To) == 0 || anyIs(view, t.Field, t.To)
}

// Keeps reports whether view keeps a hold that began with the view
// began: a threshold's number still in its range, a to: value still one
// of them, else the value (the whole state, with no field) unchanged.
func Keeps(t rules.Change, began, view []byte) bool {
	switch {
	case t.Threshold():
		return inRange(t, view)
	case len(t.To) > 0:
		return anyIs(view, t.Field, t.To)
	case t.Field == "":
		return Same(began, view)
	}
	return SameAt(began, view, t.Field)
}

// inRange reports whether the view's number at the trigger's field is
// in its threshold's range; a value that is no number is not.
func inRange(t rules.Change, view []byte) bool {
	x, ok := number(view, t.Field)
	return ok && t.InRange(x)
}

// number is the view's number at path.
func number(view []byte, path string) (float64, bool) {
	v, err := abi.ParseView(view)
	if err != nil {
		return 0, false
	}
	x, ok := v.Find(path)
	if !ok {
		return 0, false
	}
	return x.Float()
}

func has(v abi.View, path string) bool {
	_, ok := v.Find(path)
	return ok
}

func anyIs(view []byte, path string, wants []any) bool {
	for _, w := range wants {
		if Is(view, path, w) {
			return true
		}
	}
	return false
}

func numeric(x abi.Value) bool { return x.Kind() == abi.ValueInt || x.Kind() == abi.ValueFloat }

// Sig is what a fleet's ingest script needs of a report to run a change
// trigger's per-entity state in Redis, in the stream's order
// (store.RedisStream.AppendChange): the field's value in a canonical
// form (Value: "" when the report has none; numbers by value, so 30 and
// 30.0 are one), whether it is in the trigger's threshold range or one
// of its to: values (In), one of its from: values (From), and for a
// threshold with hysteresis whether it is a number and back across the
// line (Number, Rearmed). Every part reads this report alone.
type Sig struct {
	Value           string
	In, From        bool
	Number, Rearmed bool
}

// SigOf is t's Sig of the report whose view is view.
func SigOf(t rules.Change, view []byte) Sig {
	var s Sig
	v, err := abi.ParseView(view)
	if err != nil {
		return s
	}
	if t.Field == "" {
		whole, ok := v.Decode("")
		if m, isObj := whole.(map[string]any); isObj {
			delete(m, "id") // a report's name, not its state (Same)
			delete(m, "time")
		}
		s.Value = canonical(whole, ok)
	} else {
		s.Value = canonical(v.Decode(t.Field))
	}
	switch {
	case t.Threshold():
		x, ok := number(view, t.Field)
		s.Number = ok
		s.In = ok && t.InRange(x)
		s.Rearmed = ok && t.Hysteresis > 0 && t.Rearmed(x)
	case len(t.To) > 0:
		s.In = anyIs(view, t.Field, t.To)
	}
	s.From = len(t.From) > 0 && anyIs(view, t.Field, t.From)
	return s
}

// canonical is a decoded JSON value (abi.View.Decode) as text that is
// equal for equal values: numbers by value, objects' members sorted. ok
// false is no value ("").
func canonical(x any, ok bool) string {
	if !ok {
		return ""
	}
	b, err := json.Marshal(normalized(x))
	if err != nil {
		return ""
	}
	return string(b)
}

// normalized is x with every number a float64, so 30 and 30.0 encode
// alike (json.Marshal sorts a map's keys).
func normalized(x any) any {
	switch v := x.(type) {
	case int64:
		if v > 1<<53 || v < -(1<<53) { // past what a float64 holds exactly
			return json.Number(strconv.FormatInt(v, 10))
		}
		return float64(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalized(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalized(e)
		}
		return out
	}
	return x
}

// TriggerKey names rule's change trigger t where a fleet keeps its
// per-entity state (store.TriggerOp.Key): the rule and a hash of the
// trigger as written, so a trigger edited, or moved in its rule, never
// reads another's memory.
func TriggerKey(rule string, t rules.Change) string {
	h := fnv.New64a()
	h.Write([]byte(t.String()))
	return rule + "\x00" + strconv.FormatUint(h.Sum64(), 36)
}
