package ruled

import (
	"github.com/ruled-dev/ruled/abi"
)

// The exports' logic, kept free of wasm specifics so that it runs (and is
// tested) natively too. exports_wasip1.go only moves pointers.

var (
	// xbuf is the exchange buffer ruled_alloc hands the host. One buffer,
	// reused for every input, so a call allocates nothing to receive its
	// event.
	xbuf []byte
	// result and errText back ruled_result and ruled_error; each stays valid
	// until the next call replaces it, as the ABI asks.
	result  []byte
	errText []byte
	// descJSON is built once, on the first describe.
	descJSON []byte

	handles []handle
	free    []uint32
	// in is reused by every call: the header and view are parsed into it in
	// place, so passing an Event around costs a pointer.
	in abi.CallInput
)

type handle struct {
	fn   *Func
	when WhenFunc
	do   DoFunc
}

func alloc(size uint32) []byte {
	if uint32(cap(xbuf)) < size || xbuf == nil {
		n := size
		if n < 4096 {
			n = 4096
		}
		xbuf = make([]byte, n)
	}
	return xbuf[:cap(xbuf)]
}

func describe() []byte {
	if descJSON == nil {
		d := abi.Descriptor{ABI: abi.Version, Name: registry.name, Version: registry.version}
		for _, f := range registry.funcs {
			d.Functions = append(d.Functions, f.desc)
		}
		descJSON = d.AppendJSON(nil)
	}
	return descJSON
}

func fail(s abi.Status, text string) abi.Status {
	errText = append(errText[:0], text...)
	return s
}

// configure implements ruled_configure.
func configure(input []byte) (st abi.Status, h uint32) {
	name, view, err := abi.ParseConfigureInput(input)
	if err != nil {
		return fail(abi.StatusBadInput, "configure: "+err.Error()), 0
	}
	f := registry.byName[string(name)]
	if f == nil {
		return fail(abi.StatusUnknownFunction, "no function "+string(name)), 0
	}
	defer recoverTo(&st)
	cfg := Config{fn: f.desc.Name, v: view}
	e := handle{fn: f}
	switch f.kind {
	case abi.KindCondition:
		e.when, err = f.confCondition(cfg)
	case abi.KindAction:
		e.do, err = f.confAction(cfg)
	}
	if err == nil && e.when == nil && e.do == nil {
		err = NewError(f.desc.Name + ": configure returned no function")
	}
	if err != nil {
		return fail(abi.StatusBadConfig, err.Error()), 0
	}
	if n := len(free); n > 0 {
		h, free = free[n-1], free[:n-1]
		handles[h-1] = e
	} else {
		handles = append(handles, e)
		h = uint32(len(handles))
	}
	return abi.StatusOK, h
}

func release(h uint32) {
	if h == 0 || h > uint32(len(handles)) || handles[h-1].fn == nil {
		return
	}
	handles[h-1] = handle{}
	free = append(free, h)
}

// prepare finds handle h, checks its kind, and parses the call's input into
// in. A nil handle comes with the status to answer.
func prepare(h uint32, k abi.Kind, input []byte) (*handle, abi.Status) {
	if h == 0 || h > uint32(len(handles)) || handles[h-1].fn == nil {
		return nil, fail(abi.StatusBadHandle, "no handle")
	}
	e := &handles[h-1]
	if e.fn.kind != k {
		return nil, fail(abi.StatusUnknownFunction, e.fn.desc.Name+" is not a "+k.String())
	}
	var err error
	if in, err = abi.ParseCallInput(input); err != nil {
		return nil, fail(abi.StatusBadInput, e.fn.desc.Name+": "+err.Error())
	}
	return e, abi.StatusOK
}

// when implements ruled_when.
func when(h uint32, input []byte) (st abi.Status) {
	e, st := prepare(h, abi.KindCondition, input)
	if e == nil {
		return st
	}
	defer recoverTo(&st)
	ok, err := e.when(Event{in: &in})
	switch {
	case err != nil:
		return fail(abi.StatusError, err.Error())
	case ok:
		return abi.StatusTrue
	}
	return abi.StatusOK
}

// act implements ruled_act.
func act(h uint32, input []byte) (st abi.Status) {
	result = result[:0]
	e, st := prepare(h, abi.KindAction, input)
	if e == nil {
		return st
	}
	defer recoverTo(&st)
	out, err := e.do(&Input{Event: Event{in: &in}})
	if err != nil {
		if isPermanent(err) {
			return fail(abi.StatusPermanent, err.Error())
		}
		return fail(abi.StatusError, err.Error())
	}
	result = out
	return abi.StatusOK
}

// isPermanent reports whether err was marked with Permanent. It walks the
// chain itself rather than with errors.As, which would link reflect into
// every plugin.
func isPermanent(err error) bool {
	for err != nil {
		if _, ok := err.(*permanentError); ok {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if isPermanent(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// recoverTo turns a panic in plugin code into StatusError with the panic's
// text, so the host reports it like any other error.
func recoverTo(st *abi.Status) {
	if r := recover(); r != nil {
		msg := "panic"
		switch v := r.(type) {
		case error:
			msg += ": " + v.Error()
		case string:
			msg += ": " + v
		}
		*st = fail(abi.StatusError, msg)
	}
}
