// Command conformance is the Go SDK's build of the conformance plugin
// (../SPEC.md). Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o conformance.wasm .
package main

import (
	"strconv"
	"strings"

	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("conformance", "1.0.0")

	ruled.Condition("noop", func(ruled.Config) (ruled.WhenFunc, error) {
		return func(ruled.Event) (bool, error) { return false, nil }, nil
	})
	ruled.Condition("temp_high", func(ruled.Config) (ruled.WhenFunc, error) {
		return func(ev ruled.Event) (bool, error) {
			v, ok := ev.Float("data.value")
			return ok && v > 20 && ev.Equal("type", "temperature"), nil
		}, nil
	})
	ruled.Condition("field_equals", func(cfg ruled.Config) (ruled.WhenFunc, error) {
		path, err := cfg.RequireString("path")
		if err != nil {
			return nil, err
		}
		value, err := cfg.RequireString("value")
		if err != nil {
			return nil, err
		}
		return func(ev ruled.Event) (bool, error) { return ev.Equal(path, value), nil }, nil
	})
	ruled.Condition("number_above", func(cfg ruled.Config) (ruled.WhenFunc, error) {
		path, err := cfg.RequireString("path")
		if err != nil {
			return nil, err
		}
		above, err := cfg.RequireFloat("above")
		if err != nil {
			return nil, err
		}
		return func(ev ruled.Event) (bool, error) {
			v, ok := ev.Float(path)
			if !ok {
				return false, ruled.NewError("number_above: " + path + " is not a number")
			}
			return v > above, nil
		}, nil
	})
	ruled.Condition("now_is_event_time", func(ruled.Config) (ruled.WhenFunc, error) {
		return func(ev ruled.Event) (bool, error) {
			now := ruled.Now()
			ruled.Log(ruled.LevelInfo, "now "+strconv.FormatInt(now.UnixNano(), 10))
			return now.Equal(ev.Time()), nil
		}, nil
	})
	ruled.Condition("try_publish", func(ruled.Config) (ruled.WhenFunc, error) {
		return func(ruled.Event) (bool, error) {
			err := ruled.Publish("conformance.denied", []byte("{}"))
			if st, ok := ruled.StatusOf(err); ok && st == ruled.Status(7) {
				return true, nil
			}
			n := 0
			if st, ok := ruled.StatusOf(err); ok {
				n = -int(st)
			}
			return false, ruled.NewError("publish returned " + strconv.Itoa(n))
		}, nil
	}).Needs(ruled.CapPublish)
	ruled.Condition("try_http", func(ruled.Config) (ruled.WhenFunc, error) {
		return func(ruled.Event) (bool, error) {
			_, err := ruled.HTTP(ruled.Request{URL: "http://conformance.test/"})
			if st, ok := ruled.StatusOf(err); ok && st == ruled.Status(7) {
				return true, nil
			}
			n := 0
			if st, ok := ruled.StatusOf(err); ok {
				n = -int(st)
			}
			return false, ruled.NewError("http returned " + strconv.Itoa(n))
		}, nil
	}).Needs(ruled.CapHTTP)
	ruled.Condition("fail_when", func(cfg ruled.Config) (ruled.WhenFunc, error) {
		msg, err := cfg.RequireString("message")
		if err != nil {
			return nil, err
		}
		return func(ruled.Event) (bool, error) { return false, ruled.NewError(msg) }, nil
	})

	ruled.Action("echo", func(cfg ruled.Config) (ruled.DoFunc, error) {
		prefix := cfg.String("prefix", "")
		return func(in *ruled.Input) ([]byte, error) {
			var b strings.Builder
			b.WriteString(prefix)
			for _, kv := range [...][2]string{{"topic", in.Event.Topic()}, {"rule", in.Rule()},
				{"step", in.Step()}, {"run", in.Run()}, {"key", in.Key()}} {
				b.WriteString(kv[0] + "=" + kv[1] + " ")
			}
			b.WriteString("pass=" + strconv.Itoa(in.Pass()))
			b.WriteString(" time=" + strconv.FormatInt(in.Event.Time().UnixNano(), 10))
			return []byte(b.String()), nil
		}, nil
	}).Example(`{"prefix":"> "}`)
	ruled.Action("echo_raw", func(ruled.Config) (ruled.DoFunc, error) {
		return func(in *ruled.Input) ([]byte, error) { return in.Event.Raw(), nil }, nil
	})
	ruled.Action("echo_config", func(cfg ruled.Config) (ruled.DoFunc, error) {
		raw := cfg.Raw()
		return func(*ruled.Input) ([]byte, error) { return raw, nil }, nil
	})
	ruled.Action("publish", func(cfg ruled.Config) (ruled.DoFunc, error) {
		topic, err := cfg.RequireString("topic")
		if err != nil {
			return nil, err
		}
		return func(in *ruled.Input) ([]byte, error) {
			if err := ruled.Publish(topic, in.Event.Raw()); err != nil {
				st, _ := ruled.StatusOf(err)
				return nil, ruled.NewError("publish: status " + strconv.Itoa(int(st)))
			}
			return nil, nil
		}, nil
	}).Needs(ruled.CapPublish)
	ruled.Action("kv_roundtrip", func(ruled.Config) (ruled.DoFunc, error) {
		return func(in *ruled.Input) ([]byte, error) {
			key, _ := in.Event.String("key")
			value, _ := in.Event.String("value")
			status := func(op string, err error) error {
				st, _ := ruled.StatusOf(err)
				return ruled.NewError("kv: " + op + ": status " + strconv.Itoa(int(st)))
			}
			if err := ruled.KVSet(key, []byte(value)); err != nil {
				return nil, status("set", err)
			}
			v, found, err := ruled.KVGet(key)
			if err != nil || !found {
				if err == nil {
					err = &ruled.HostError{Op: "kv_get", Status: 8}
				}
				return nil, status("get", err)
			}
			if err := ruled.KVDelete(key); err != nil {
				return nil, status("delete", err)
			}
			after, found, err := ruled.KVGet(key)
			if err != nil {
				return nil, status("get after delete", err)
			}
			if found {
				return nil, ruled.NewError("kv: get after delete: status " + strconv.Itoa(-len(after)))
			}
			return v, nil
		}, nil
	}).Needs(ruled.CapKV)
	ruled.Action("fire", func(cfg ruled.Config) (ruled.DoFunc, error) {
		rule, err := cfg.RequireString("rule")
		if err != nil {
			return nil, err
		}
		return func(in *ruled.Input) ([]byte, error) {
			id, err := ruled.Fire(rule, in.Event.Raw())
			if err != nil {
				st, _ := ruled.StatusOf(err)
				return nil, ruled.NewError("fire: status " + strconv.Itoa(int(st)))
			}
			return []byte(id), nil
		}, nil
	}).Needs(ruled.CapFire)
	ruled.Action("http", func(cfg ruled.Config) (ruled.DoFunc, error) {
		url, err := cfg.RequireString("url")
		if err != nil {
			return nil, err
		}
		return func(in *ruled.Input) ([]byte, error) {
			resp, err := ruled.HTTP(ruled.Request{Method: "POST", URL: url, Header: [][2]string{{"Idempotency-Key", in.Key()}},
				Body: in.Event.Raw()})
			if err != nil {
				st, _ := ruled.StatusOf(err)
				return nil, ruled.NewError("http: status " + strconv.Itoa(int(st)))
			}
			return []byte(strconv.Itoa(resp.Status) + " " + ruled.Header(resp.Header, "X-Answer") + " " + string(resp.Body)), nil
		}, nil
	}).Needs(ruled.CapHTTP)
	ruled.Action("fail", func(cfg ruled.Config) (ruled.DoFunc, error) {
		msg, err := cfg.RequireString("message")
		if err != nil {
			return nil, err
		}
		return func(*ruled.Input) ([]byte, error) { return nil, ruled.NewError(msg) }, nil
	})
	ruled.Action("crash", func(cfg ruled.Config) (ruled.DoFunc, error) {
		msg, err := cfg.RequireString("message")
		if err != nil {
			return nil, err
		}
		return func(*ruled.Input) ([]byte, error) { panic(msg) }, nil
	})
	ruled.Action("big_result", func(cfg ruled.Config) (ruled.DoFunc, error) {
		size, err := cfg.RequireInt("size")
		if err == nil && size < 0 {
			err = ruled.NewError(`big_result: config "size" must be from 0 to 1073741823`)
		}
		if err != nil {
			return nil, err
		}
		out := []byte(strings.Repeat("x", int(size)))
		return func(*ruled.Input) ([]byte, error) { return out, nil }, nil
	})
	ruled.Action("count", func(cfg ruled.Config) (ruled.DoFunc, error) {
		path, err := cfg.RequireString("path")
		if err != nil {
			return nil, err
		}
		return func(in *ruled.Input) ([]byte, error) {
			n, ok := in.Event.Count(path)
			if !ok {
				return nil, ruled.NewError("count: " + path + " is not a container")
			}
			return []byte(strconv.Itoa(n)), nil
		}, nil
	})
	ruled.Action("log_levels", func(ruled.Config) (ruled.DoFunc, error) {
		return func(*ruled.Input) ([]byte, error) {
			for l := ruled.LevelTrace; l <= ruled.LevelError; l++ {
				ruled.Log(l, "level "+strconv.Itoa(int(l)))
			}
			return nil, nil
		}, nil
	})
	ruled.Action("reject_config", func(ruled.Config) (ruled.DoFunc, error) {
		return nil, ruled.NewError("reject_config: refused")
	})
}
