// Command goreactor is a Go wasip1 reactor that the instrument tests build
// with -buildmode=c-shared and instrument: Go's compiler and runtime emit a
// wide range of instructions, far more than the hand-written modules.
package main

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

//go:wasmexport add
func add(a, b int32) int32 { return a + b }

// work exercises maps, strings, sorting, floats and a goroutine; it returns
// the sum of 0..n-1.
//
//go:wasmexport work
func work(n int32) int32 {
	m := map[string]int{}
	for i := range int(n) {
		m[strconv.Itoa(i%10)] += i
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ch := make(chan int)
	go func() {
		s := 0
		for _, k := range keys {
			s += m[k]
		}
		ch <- s
	}()
	s := <-ch
	if n >= 10 && strings.Join(keys, "") != "0123456789" {
		return -1
	}
	if r := math.Sqrt(float64(s)); int(r*r+0.5) != s {
		return -2
	}
	return int32(s)
}

// spin never returns: only the fuel stops it.
//
//go:wasmexport spin
func spin() {
	for i := 0; ; i++ {
		_ = i
	}
}

func main() {}
