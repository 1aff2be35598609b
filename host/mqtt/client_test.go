package mqtt

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/internal/mqtttest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// taker records the events it takes; while blocked, it takes nothing and
// waits for the stop, as ingest does with no room.
type taker struct {
	mu      sync.Mutex
	got     []*bus.Event
	blocked bool
}

func (k *taker) TakeWaiting(ctx context.Context, e *bus.Event) error {
	k.mu.Lock()
	blocked := k.blocked
	k.mu.Unlock()
	if blocked {
		<-ctx.Done()
		return ctx.Err()
	}
	k.mu.Lock()
	k.got = append(k.got, e)
	k.mu.Unlock()
	return nil
}

func (k *taker) events() []*bus.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*bus.Event(nil), k.got...)
}

func start(t *testing.T, b *mqtttest.Broker, k Taker, wrap bool) *Client {
	t.Helper()
	s, err := Start(Config{Brokers: []string{b.URL()}, ClientID: "ruled-test", Subscribe: []Subscription{{Filter: "scooter/#", QoS: 1}},
		WrapNonJSON: wrap, Decoder: &bus.Decoder{MaxSize: 512}, Log: testkit.LogTo(t)}, k)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the source connected", func() bool { return s.Stats().Up })
	time.Sleep(100 * time.Millisecond) // the subscription follows the connection
	return s
}

func field(t *testing.T, e *bus.Event, path string) string {
	t.Helper()
	v, err := abi.ParseView(e.View)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := v.Find(path)
	if !ok {
		return "<none>"
	}
	if s, ok := x.Str(); ok {
		return string(s)
	}
	return "<not a string>"
}

func TestSourceTakesEventsAndRefusesTheRest(t *testing.T) {
	b := mqtttest.Start(t)
	k := &taker{}
	s := start(t, b, k, true)
	defer s.Close()
	b.Publish(t, "scooter/v1/telemetry", `{"vehicle":"v1","battery":17}`)
	b.Publish(t, "scooter/v1/note", `hello`)                                  // wrapped
	b.Publish(t, "scooter/v1.5/telemetry", `{"battery":1}`)                   // a level with "." maps to no ruled topic
	b.Publish(t, "scooter/v1/big", `{"pad":"`+string(make([]byte, 600))+`"}`) // over the size limit
	testkit.Eventually(t, "four messages handled", func() bool {              // Received counts on arrival, Accepted once taken
		st := s.Stats()
		n := st.Accepted
		for _, r := range st.Refused {
			n += r
		}
		return n == 4
	})
	st := s.Stats()
	if st.Accepted != 2 || st.Refused["topic"] != 1 || st.Refused[string(bus.ReasonTooLarge)]+st.Refused["invalid"] != 1 {
		t.Errorf("stats %+v: want 2 accepted, one refused for its topic, one for its size", st)
	}
	evs := k.events()
	if len(evs) != 2 {
		t.Fatalf("took %d events", len(evs))
	}
	if evs[0].Topic != "scooter.v1.telemetry" || field(t, evs[0], "vehicle") != "v1" || field(t, evs[0], "mqtt_topic") != "scooter/v1/telemetry" {
		t.Errorf("event %s %s", evs[0].Topic, evs[0].Raw)
	}
	if evs[1].Topic != "scooter.v1.note" || field(t, evs[1], "payload") != "hello" {
		t.Errorf("wrapped event %s %s", evs[1].Topic, evs[1].Raw)
	}
}

// The no-loss rule: a message the process could not take is not
// acknowledged, and the broker delivers it again to the session's next
// connection — here a new Client with the same client id, as after a
// restart.
func TestUntakenMessageIsDeliveredAgain(t *testing.T) {
	b := mqtttest.Start(t)
	first := &taker{blocked: true}
	s := start(t, b, first, false)
	b.Publish(t, "scooter/v7/telemetry", `{"vehicle":"v7"}`)
	testkit.Eventually(t, "the message", func() bool { return s.Stats().Received == 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Stats().Accepted != 0 {
		t.Fatal("a message not taken was counted accepted")
	}
	second := &taker{}
	s2 := start(t, b, second, false)
	defer s2.Close()
	testkit.Eventually(t, "the message again", func() bool { return len(second.events()) == 1 })
	if e := second.events()[0]; e.Topic != "scooter.v7.telemetry" {
		t.Errorf("redelivered %s %s", e.Topic, e.Raw)
	}
	// Taken now, and acknowledged: a third connection gets nothing.
	s2.Close()
	third := &taker{}
	s3 := start(t, b, third, false)
	defer s3.Close()
	time.Sleep(300 * time.Millisecond)
	if n := len(third.events()); n != 0 {
		t.Errorf("an acknowledged message came %d more times", n)
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{
		{},
		{Brokers: []string{"mqtt://h:1"}},
		{Brokers: []string{"mqtt://h:1"}, ClientID: "c"},
		{Brokers: []string{"mqtt://h:1"}, ClientID: "c", Subscribe: []Subscription{{Filter: "a/#/b"}}},
		{Brokers: []string{"not a url"}, ClientID: "c", Subscribe: []Subscription{{Filter: "a"}}},
		{Brokers: []string{"mqtt://h:1"}, ClientID: "c", Subscribe: []Subscription{{Filter: "a", QoS: 3}}},
	} {
		if s, err := Start(c, &taker{}); err == nil {
			s.Close()
			t.Errorf("config %+v accepted", c)
		}
	}
}

// A network cut and a broker restart, each in the middle of a device's
// stream: the Client reconnects (backoff, jitter) and the persistent
// session brings what was published meanwhile; no message is lost.
func TestRidesOutACutAndARestart(t *testing.T) {
	b := mqtttest.Start(t)
	p := b.Proxy(t)
	k := &taker{}
	s, err := Start(Config{Brokers: []string{p.URL()}, ClientID: "ruled-cut", Subscribe: []Subscription{{Filter: "scooter/#", QoS: 1}},
		Decoder: &bus.Decoder{}, Log: testkit.LogTo(t)}, k)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testkit.Eventually(t, "connected", func() bool { return s.Stats().Up })
	time.Sleep(100 * time.Millisecond) // the subscription follows the connection
	send := func(from, to int) {
		for i := from; i < to; i++ {
			b.Publish(t, "scooter/v1/telemetry", fmt.Sprintf(`{"n":"%d"}`, i))
		}
	}
	send(0, 10)
	testkit.Eventually(t, "the first ten", func() bool { return len(k.events()) == 10 })
	p.Cut()
	testkit.Eventually(t, "down", func() bool { return !s.Stats().Up })
	send(10, 20) // while the link is cut: the broker keeps them for the session
	p.Heal()
	testkit.Eventually(t, "twenty, after the cut", func() bool { return len(k.events()) >= 20 }) // an ack the cut lost brings its message again
	b.Restart(t)                                                                                 // the broker saves its sessions and comes back
	testkit.Eventually(t, "reconnected", func() bool { return s.Stats().Up })
	time.Sleep(100 * time.Millisecond)
	send(20, 30)
	// Wait for thirty distinct messages, not thirty events: a redelivered
	// duplicate made the count reach thirty before the last one came.
	seen := map[string]int{}
	distinct := func() bool {
		clear(seen)
		for _, e := range k.events() {
			seen[field(t, e, "n")]++
		}
		return len(seen) >= 30
	}
	deadline := time.Now().Add(10 * time.Second)
	for !distinct() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 30 {
		if seen[fmt.Sprint(i)] == 0 {
			t.Errorf("message %d was lost", i)
		}
	}
}
