package abi_test

import (
	"fmt"

	"github.com/ruled-dev/ruled/abi"
)

// The host builds a view once per event; a guest reads fields from it by
// path without parsing JSON.
func ExampleView_Find() {
	b, err := abi.AppendJSONView(nil, []byte(`{"vehicle":"s-17","battery":{"level":12.5},"tags":["city"]}`), false)
	if err != nil {
		panic(err)
	}
	v, _ := abi.ParseView(b)
	level, _ := v.Find("battery.level")
	f, _ := level.Float()
	tag, _ := v.Find("tags.0")
	s, _ := tag.Str()
	fmt.Println(f, string(s))
	// Output: 12.5 city
}

func ExampleVersionString() {
	fmt.Println(abi.VersionString(abi.Version))
	// Output: 1.4
}
