package mqtt

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/internal/mqtttest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// TestKillKeepsEachTopicsLastMessage: a message written while the broker
// was away, taken since but its removal not yet committed, is sent again
// by the next process; a later message of its topic that the broker took
// at once must then be in the store too, or the topic (and, on a Retain
// route, the broker's retained state) would end on the older one. Found
// by review of the write-behind outbox: the newer one was never written.
func TestKillKeepsEachTopicsLastMessage(t *testing.T) {
	b := mqtttest.Start(t)
	l := b.Listen(t, "state/#")
	p := b.Proxy(t)
	p.Cut() // the sink comes back after the listener (mqtttest.Broker.Start)
	b.Stop()
	h := &testkit.Hasher{}
	c := startSinkAt(t, p.URL(), h, 0)
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()

	// The broker is away: m1 is written before its wait ends.
	if !offer(t, c, "state.x", `{"v":1}`, "k1") {
		t.Fatal("not kept")
	}
	if n := h.Len(OutboxKey("ruled-sink")); n != 1 {
		t.Fatalf("store holds %d, want m1", n)
	}
	// The store is busy with a commit from now on (the removal of m1
	// will wait in it).
	entered, release := h.HoldWrites()
	defer release()
	b.Start(t)
	p.Heal()
	testkit.Eventually(t, "m1 delivered", func() bool { return len(l.Messages()) >= 1 })
	select { // the writer is removing m1, and held
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no removal began")
	}
	// m2 on the same topic: the broker takes it at once, but it is not
	// safe until the store has it too: m1 is still there.
	e, _ := (&bus.Decoder{}).Decode([]byte(`{"topic":"state.x"}`))
	_, wait, err := c.OfferLater(e, []byte(`{"v":2}`), "k2", "r/s")
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- wait() }()
	testkit.Eventually(t, "m2 delivered", func() bool { return len(l.Messages()) >= 2 })
	select {
	case err := <-waited:
		t.Fatalf("m2's wait ended (%v) with m1 in the store and m2 not: a kill now would end the topic on m1", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	// Killed now: what the store has is what the next process gets.
	img := h.Snapshot()
	c.Close()
	closed = true

	c2 := startSink(t, b, img, 0)
	defer c2.Close()
	testkit.Eventually(t, "the outbox emptied", func() bool { return c2.Stats().Outbox == 0 })
	time.Sleep(200 * time.Millisecond)
	got := l.Messages()
	var seq []string
	for _, m := range got {
		seq = append(seq, m.Payload)
	}
	if last := got[len(got)-1].Payload; last != `{"v":2}` {
		t.Errorf("the topic's last message is %s; want {\"v\":2}, the last offered (got %v)", last, seq)
	}
	r := b.Listen(t, "state/#") // the retained state a new subscriber gets
	rm := r.Wait(1)
	if len(rm) == 0 || rm[0].Payload != `{"v":2}` {
		t.Errorf("the broker's retained state/x is %v; want {\"v\":2}", rm)
	}
}

// failAllHasher fails every write, sets and removals.
type failAllHasher struct{ *testkit.Hasher }

func (h *failAllHasher) HSetDel(key string, fields []string, values [][]byte, del []string) error {
	return errors.New("disk gone")
}

// TestFailedWriteSparesATakenMessage: a write that fails fails the waits
// of its messages the broker had not taken, not of one it took meanwhile
// (that step's message was delivered: failing it would run the step
// again and send it twice). Found by review.
func TestFailedWriteSparesATakenMessage(t *testing.T) {
	o := newOutbox(&failAllHasher{&testkit.Hasher{}}, "x", 1000, 1<<20, testkit.LogTo(t))
	mk := func(i int) *message {
		return &message{V: outboxVersion, ID: bus.NewID(), Topic: fmt.Sprintf("t/%d", i), Payload: []byte(`{}`), QoS: 1}
	}
	m1, m2 := mk(1), mk(2)
	w1, err := o.addLater(m1)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := o.addLater(m2)
	if err != nil {
		t.Fatal(err)
	}
	o.ready(2, 10, map[string]bool{}) // both on their way
	o.taken(m1)                       // the broker took m1 within writeBehind
	err1, err2 := w1(), w2()
	if err2 == nil {
		t.Error("m2's wait did not fail")
	}
	if err1 != nil {
		t.Errorf("the wait of m1, which the broker took, failed: %v", err1)
	}
	o.close(testkit.LogTo(t))
}
