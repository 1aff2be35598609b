package bus

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/redistest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

var (
	_ Logger = hclog.Logger(nil)
	_ Logger = (*slog.Logger)(nil)
)

func newClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// collect subscribes to b and returns the channel its handler feeds.
func collect(t *testing.T, b *Redis) (<-chan *Event, *Subscription) {
	t.Helper()
	ch := make(chan *Event, 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sub, err := b.Subscribe(ctx, func(e *Event) { ch <- e })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return ch, sub
}

func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case x := <-ch:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received in 5s")
		panic("unreachable")
	}
}

func none[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case x := <-ch:
		t.Fatalf("received %v; want nothing", x)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestRedisPublishSubscribe(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	// Two processes: each its own client and bus.
	pub := NewRedis(newClient(t, srv.Addr()), RedisConfig{})
	other := NewRedis(newClient(t, srv.Addr()), RedisConfig{})
	mine, _ := collect(t, pub)
	theirs, _ := collect(t, other)

	tests := []struct {
		name string
		in   string
		same bool // the wire JSON is the event's own
	}{
		{"id and time given", `{"topic":"a","id":"e1","time":"2024-01-02T03:04:05.5Z","v":1}`, true},
		{"no id", `{"topic":"a","time":"2024-01-02T03:04:05Z"}`, false},
		{"no time", `{"time2":1,"topic":"a","id":"e2"}`, false},
		{"neither", ` {"topic":"b", "data":{"id":"inner"}} `, false},
		{"empty id", `{"topic":"a","id":"","v":[1,2]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := event(t, tc.in)
			if err := pub.Publish(ctx, e); err != nil {
				t.Fatal(err)
			}
			for who, ch := range map[string]<-chan *Event{"publisher": mine, "other": theirs} {
				got := next(t, ch)
				if got.ID != e.ID || !got.Time.Equal(e.Time) || got.Topic != e.Topic {
					t.Errorf("%s got %q %v %q; want %q %v %q", who, got.ID, got.Time, got.Topic, e.ID, e.Time, e.Topic)
				}
				if (string(got.Raw) == string(e.Raw)) != tc.same {
					t.Errorf("%s got raw %s from %s; want it the same: %v", who, got.Raw, e.Raw, tc.same)
				}
			}
		})
	}

	t.Run("order", func(t *testing.T) {
		for i := range 100 {
			if err := pub.Publish(ctx, event(t, fmt.Sprintf(`{"topic":"seq","n":%d}`, i))); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 100 {
			got := next(t, theirs)
			if want := fmt.Sprintf(`"n":%d}`, i); !strings.Contains(string(got.Raw), want) {
				t.Fatalf("event %d is %s; want %s", i, got.Raw, want)
			}
			next(t, mine)
		}
	})
	if s := other.Counters().Snapshot(); s.Accepted != uint64(len(tests)+100) || s.TotalRejected() != 0 {
		t.Errorf("counters = %+v; want %d accepted", s, len(tests)+100)
	}
}

func TestRedisRefusals(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client := newClient(t, srv.Addr())
	log := &testkit.Log{}
	var counters Counters
	b := NewRedis(client, RedisConfig{Counters: &counters, Logger: log, Decoder: &Decoder{MaxSize: 64}})
	ch, _ := collect(t, b)

	// Anything may PUBLISH on the channel: what is not an event is counted,
	// logged and dropped, and the subscription goes on.
	for _, raw := range []string{
		"not json",
		`{"topic":"ruled.cmd.r1"}`,
		`{"topic":"a.*"}`,
		`{"topic":"a","pad":"` + strings.Repeat("x", 100) + `"}`,
		`{"topic":"foreign"}`,
	} {
		if err := client.Publish(ctx, RedisChannel, raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := next(t, ch); got.Topic != "foreign" || got.ID == "" {
		t.Errorf("got %q id %q; want the foreign event with an id", got.Topic, got.ID)
	}
	none(t, ch)
	want := map[Reason]uint64{ReasonNotJSON: 1, ReasonReserved: 1, ReasonBadField: 1, ReasonTooLarge: 1}
	s := counters.Snapshot()
	if s.Accepted != 1 || fmt.Sprint(s.Rejected) != fmt.Sprint(want) {
		t.Errorf("counters = %+v; want 1 accepted, rejected %v", s, want)
	}
	if !log.Has("DEBUG bus: event refused") {
		t.Errorf("log = %v; want refusals at debug", log.Lines())
	}

	// Publish refuses what ingest refuses, before Redis sees it.
	for _, e := range []*Event{nil, {Topic: "ruled.triggers.changed", Raw: []byte(`{}`)}, {Topic: "a b"}} {
		if err := b.Publish(ctx, e); err == nil {
			t.Errorf("Publish(%+v) = nil; want an error", e)
		}
	}
	none(t, ch)
}

func TestRedisControl(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client := newClient(t, srv.Addr())
	log := &testkit.Log{}
	b := NewRedis(client, RedisConfig{Logger: log})
	events, _ := collect(t, b)
	type msg struct{ topic, payload string }
	ctl := make(chan msg, 10)
	sub, err := b.SubscribeControl(ctx, func(topic string, payload []byte) { ctl <- msg{topic, string(payload)} })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	if err := b.PublishControl(ctx, "ruled.triggers.changed", []byte("rev 7\nwith a newline")); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishControl(ctx, "ruled.cmd.low-battery", nil); err != nil {
		t.Fatal(err)
	}
	if got := next(t, ctl); got != (msg{"ruled.triggers.changed", "rev 7\nwith a newline"}) {
		t.Errorf("got %+v; want triggers.changed with its payload", got)
	}
	if got := next(t, ctl); got != (msg{"ruled.cmd.low-battery", ""}) {
		t.Errorf("got %+v; want cmd.low-battery", got)
	}
	none(t, events) // control never reaches event subscribers

	// Events never reach control subscribers.
	if err := b.Publish(ctx, event(t, `{"topic":"a"}`)); err != nil {
		t.Fatal(err)
	}
	next(t, events)
	none(t, ctl)

	for _, topic := range []string{"a", "ruled.", "ruled.cmd.*", "ruled.cmd. x", "ruled..x", "ruled.x.", "Ruled.x"} {
		if err := b.PublishControl(ctx, topic, nil); err == nil || !strings.HasPrefix(err.Error(), "bus: ") {
			t.Errorf("PublishControl(%q) = %v; want a bus: error", topic, err)
		}
	}
	// Not a control message: dropped, logged.
	client.Publish(ctx, RedisControlChannel, "no newline")
	client.Publish(ctx, RedisControlChannel, "vehicle.x\npayload")
	none(t, ctl)
	if !log.Has("DEBUG bus: control message dropped") {
		t.Errorf("log = %v; want the drops at debug", log.Lines())
	}
}

func TestRedisClose(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client := newClient(t, srv.Addr())
	client.Ping(ctx) // the client's own goroutines, if any, start before the count
	b := NewRedis(client, RedisConfig{})
	before := runtime.NumGoroutine()
	var calls atomic.Int32
	called := make(chan bool, 10)
	sub, err := b.Subscribe(ctx, func(*Event) { calls.Add(1); called <- true })
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, event(t, `{"topic":"a"}`)); err != nil {
		t.Fatal(err)
	}
	next(t, called)
	if err := sub.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := sub.Close(); err != nil {
		t.Errorf("second Close: %v; want nil", err)
	}
	b.Publish(ctx, event(t, `{"topic":"a"}`))
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times; want 1, none after Close", n)
	}
	// Close waited for the goroutine; go-redis's connection may take a moment.
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close; want at most %d as before Subscribe", n, before)
	}
}

func TestRedisSubscribeUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	b := NewRedis(newClient(t, addr), RedisConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	sub, err := b.Subscribe(ctx, func(*Event) {})
	if err == nil {
		sub.Close()
		t.Fatal("Subscribe to a stopped server succeeded")
	}
	if !strings.HasPrefix(err.Error(), "bus: subscribe") || time.Since(start) > 3*time.Second {
		t.Errorf("got %v after %v; want a bus: subscribe error within the deadline", err, time.Since(start))
	}
	if err := b.Publish(ctx, event(t, `{"topic":"a"}`)); err == nil {
		t.Error("Publish to a stopped server succeeded")
	}
}

// A subscription survives its connection: go-redis reconnects, the bus logs
// the loss and the recovery. What is published meanwhile is lost.
func TestRedisReconnect(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client := newClient(t, srv.Addr())
	log := &testkit.Log{}
	b := NewRedis(client, RedisConfig{Logger: log})
	ch, _ := collect(t, b)

	// receivesAgain publishes numbered events until one arrives.
	receivesAgain := func(t *testing.T) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			b.Publish(ctx, event(t, fmt.Sprintf(`{"topic":"probe","n":%d}`, i))) // fails while the server is down
			select {
			case <-ch:
				for len(ch) > 0 {
					<-ch
				}
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatal("the subscription did not come back in 10s")
	}

	t.Run("connection killed", func(t *testing.T) {
		if n, err := client.ClientKillByFilter(ctx, "TYPE", "pubsub").Result(); err != nil || n != 1 {
			t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want 1 killed", n, err)
		}
		receivesAgain(t)
	})
	t.Run("server restarted", func(t *testing.T) {
		srv.Restart()
		receivesAgain(t)
		if !log.Has("WARN bus: redis subscription lost") || !log.Has("INFO bus: redis subscription back") {
			t.Errorf("log = %v; want the loss and the recovery", log.Lines())
		}
	})
	t.Run("server down a while", func(t *testing.T) {
		srv.Stop()
		time.Sleep(300 * time.Millisecond) // a few retries, backing off
		srv.Restart()
		receivesAgain(t)
	})
}

// TestRedisResumed: a subscription says when it is down (Live), and after
// it is back, settles it: Resumed is called, on the subscription's
// goroutine, once every event published before its moment has arrived or
// is lost for good — an event whose Publish returned before it, and that
// had not arrived by then, never arrives.
func TestRedisResumed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client := newClient(t, srv.Addr())
	other := newClient(t, srv.Addr()) // a second subscriber keeps publishes "received"
	var mu sync.Mutex
	got := map[string]bool{} // n → arrived
	var atResume map[string]bool
	var before time.Time
	resumed := make(chan struct{})
	b := NewRedis(client, RedisConfig{Resumed: func(ch string, at time.Time) {
		if ch != RedisChannel {
			t.Errorf("resumed channel %q", ch)
		}
		mu.Lock()
		defer mu.Unlock()
		if atResume == nil {
			atResume, before = maps.Clone(got), at
			close(resumed)
		}
	}})
	sub, err := b.Subscribe(ctx, func(e *Event) {
		v, _ := abi.ParseView(e.View)
		x, _ := v.Find("n")
		n, _ := x.Str()
		mu.Lock()
		got[string(n)] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	if !sub.Live() {
		t.Fatal("a new subscription is not live")
	}
	ps := other.Subscribe(ctx, RedisChannel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	// Publish steadily while our subscription is killed and comes back.
	type pub struct {
		n        string
		returned time.Time
	}
	var pubs []pub
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := strconv.Itoa(i)
			if err := b.Publish(ctx, event(t, `{"topic":"t","n":"`+n+`"}`)); err == nil {
				pubs = append(pubs, pub{n, time.Now()})
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if n, err := client.ClientKillByFilter(ctx, "ID", fmt.Sprint(subscriberID(t, client, other))).Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL = %d, %v; want our subscription killed", n, err)
	}
	select {
	case <-resumed:
	case <-time.After(10 * time.Second):
		t.Fatal("Resumed was not called after the subscription came back")
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	<-done
	time.Sleep(100 * time.Millisecond) // what is still on its way arrives
	mu.Lock()
	defer mu.Unlock()
	missed, late := 0, 0
	for _, p := range pubs {
		if !p.returned.Before(before) || atResume[p.n] {
			continue
		}
		missed++ // returned before the resume and not arrived by then: lost
		if got[p.n] {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d events returned before the resume, had not arrived at it, and arrived later", late)
	}
	last := pubs[len(pubs)-1]
	if !got[last.n] {
		t.Errorf("the last event, published after the resume, did not arrive")
	}
	t.Logf("%d published, %d lost to the subscription while it was down", len(pubs), missed)
}

// subscriberID is the client id of the pub/sub connection that is not
// other's.
func subscriberID(t *testing.T, client, other *redis.Client) int64 {
	t.Helper()
	otherID, err := other.ClientID(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		var id int64
		fmt.Sscanf(line, "id=%d", &id)
		if strings.Contains(line, "cmd=subscribe") && id != otherID {
			return id
		}
	}
	t.Fatalf("no subscription but other's in:\n%s", list)
	return 0
}

// TestRedisDeviceFields: an event from a device source (Decoder.IDField)
// whose payload has its own "id" and "time" reaches every subscriber with
// the event's id and time, and the payload as the device sent it: the
// envelope carries them beside the JSON (issue 37, 10).
func TestRedisDeviceFields(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	pub := NewRedis(newClient(t, srv.Addr()), RedisConfig{})
	other := NewRedis(newClient(t, srv.Addr()), RedisConfig{})
	theirs, _ := collect(t, other)
	for _, dec := range []*Decoder{{IDField: NoID}, {IDField: "serial"}} {
		in := `{"topic":"sensor.t","id":17,"time":1700000000,"serial":"A-9","temp":31}`
		e, err := dec.Decode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		got := next(t, theirs)
		if got.ID != e.ID || !got.Time.Equal(e.Time) || string(got.Raw) != in {
			t.Errorf("IDField %q: got %q %v %s; want %q %v %s", dec.IDField, got.ID, got.Time, got.Raw, e.ID, e.Time, in)
		}
	}
	if s := other.Counters().Snapshot(); s.Accepted != 2 || s.TotalRejected() != 0 {
		t.Errorf("counters = %+v; want 2 accepted", s)
	}
}
