package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func event(t testing.TB, js string) *Event {
	t.Helper()
	e, err := (&Decoder{}).Decode([]byte(js))
	if err != nil {
		t.Fatalf("Decode(%s): %v", js, err)
	}
	return e
}

func TestLocalOrder(t *testing.T) {
	var l Local
	var got []string
	for _, name := range []string{"a", "b", "c"} {
		l.Subscribe(func(e *Event) { got = append(got, name+":"+e.Topic) })
	}
	if err := l.Publish(context.Background(), event(t, `{"topic":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if want := "[a:x b:x c:x]"; fmt.Sprint(got) != want {
		t.Errorf("delivered %v; want %s", got, want)
	}
}

func TestLocalCancel(t *testing.T) {
	var l Local
	var a, b int
	cancelA := l.Subscribe(func(*Event) { a++ })
	l.Subscribe(func(*Event) { b++ })
	ctx := context.Background()
	e := event(t, `{"topic":"x"}`)
	l.Publish(ctx, e)
	cancelA()
	cancelA() // again: nothing
	l.Publish(ctx, e)
	if a != 1 || b != 2 {
		t.Errorf("a, b = %d, %d; want 1, 2", a, b)
	}
}

func TestLocalHandlerMaySubscribeAndCancel(t *testing.T) {
	var l Local
	var n int
	var cancel func()
	cancel = l.Subscribe(func(*Event) {
		n++
		cancel()                     // itself, while Publish delivers
		l.Subscribe(func(*Event) {}) // and a new one: must not deadlock
	})
	e := event(t, `{"topic":"x"}`)
	l.Publish(context.Background(), e)
	l.Publish(context.Background(), e)
	if n != 1 {
		t.Errorf("handler called %d times; want 1", n)
	}
}

func TestLocalPublishRefuses(t *testing.T) {
	var l Local
	called := false
	l.Subscribe(func(*Event) { called = true })
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		e      *Event
		reason Reason
	}{
		{"nil event", context.Background(), nil, ""},
		{"reserved topic", context.Background(), &Event{Topic: "ruled.cmd.r1"}, ReasonReserved},
		{"wildcard", context.Background(), &Event{Topic: "a.*"}, ReasonBadField},
		{"no topic", context.Background(), &Event{}, ReasonNoTopic},
		{"context done", done, event(t, `{"topic":"x"}`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Publish(tc.ctx, tc.e)
			if err == nil {
				t.Fatal("Publish succeeded; want an error")
			}
			if got := ReasonOf(err); got != tc.reason {
				t.Errorf("reason = %q; want %q", got, tc.reason)
			}
		})
	}
	if called {
		t.Error("a refused event was delivered")
	}
	if err := l.Publish(context.Background(), event(t, `{"topic":"x"}`)); err != nil {
		t.Errorf("Publish without subscriber: %v; want nil", err)
	}
}

func TestLocal_hammer(t *testing.T) {
	var l Local
	var delivered atomic.Int64
	var wg sync.WaitGroup
	e := event(t, `{"topic":"x"}`)
	stop := make(chan struct{})
	// Subscribers come and go while four goroutines publish.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cancel := l.Subscribe(func(*Event) {})
			cancel()
		}
	}()
	l.Subscribe(func(*Event) { delivered.Add(1) })
	var pubs sync.WaitGroup
	for range 4 {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			for range 2000 {
				if err := l.Publish(context.Background(), e); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	pubs.Wait()
	close(stop)
	wg.Wait()
	if got := delivered.Load(); got != 4*2000 {
		t.Errorf("delivered %d; want %d", got, 4*2000)
	}
}
