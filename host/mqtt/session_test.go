package mqtt

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// wire is the broker's end of one connection, in a test that plays the
// broker packet by packet.
type wire struct {
	t *testing.T
	c net.Conn
}

// read is the next packet from the client but pings, which it answers.
func (w wire) read() *packets.ControlPacket {
	w.t.Helper()
	for {
		w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		cp, err := packets.ReadPacket(w.c)
		if err != nil {
			w.t.Fatalf("reading from the client: %v", err)
		}
		if cp.Type != packets.PINGREQ {
			return cp
		}
		w.write(&packets.Pingresp{})
	}
}

func (w wire) write(p interface {
	WriteTo(io.Writer) (int64, error)
}) {
	w.t.Helper()
	if _, err := p.WriteTo(w.c); err != nil {
		w.t.Fatalf("writing to the client: %v", err)
	}
}

// wantPuback reads the next packet and fails unless it acknowledges id.
func (w wire) wantPuback(id uint16) {
	w.t.Helper()
	cp := w.read()
	pa, ok := cp.Content.(*packets.Puback)
	if !ok || pa.PacketID != id {
		w.t.Fatalf("got %s, want PUBACK %d", cp, id)
	}
}

// accept takes a connection, answers its CONNECT as a resumed session
// and its SUBSCRIBE with QoS 1.
func accept(t *testing.T, l net.Listener) wire {
	t.Helper()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := wire{t, c}
	if cp := w.read(); cp.Type != packets.CONNECT {
		t.Fatalf("got %s, want CONNECT", cp)
	}
	w.write(&packets.Connack{SessionPresent: true, Properties: &packets.Properties{}})
	cp := w.read()
	sub, ok := cp.Content.(*packets.Subscribe)
	if !ok {
		t.Fatalf("got %s, want SUBSCRIBE", cp)
	}
	w.write(&packets.Suback{PacketID: sub.PacketID, Reasons: []byte{1}, Properties: &packets.Properties{}})
	return w
}

func publish(id uint16) *packets.Publish {
	return &packets.Publish{QoS: 1, PacketID: id, Topic: "scooter/v7/telemetry", Payload: []byte(`{"vehicle":"v7"}`),
		Properties: &packets.Properties{}}
}

// gateTaker takes one event for each token given to its gate.
type gateTaker struct{ gate chan struct{} }

func (g *gateTaker) TakeWaiting(ctx context.Context, _ *bus.Event) error {
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gateTaker) TakeAllWaiting(ctx context.Context, es []*bus.Event) (int, error) {
	for i, e := range es {
		if err := g.TakeWaiting(ctx, e); err != nil {
			return i, err
		}
	}
	return len(es), nil
}

// quiet fails if the client sends anything but pings within d.
func (w wire) quiet(d time.Duration) {
	w.t.Helper()
	w.c.SetReadDeadline(time.Now().Add(d))
	for {
		cp, err := packets.ReadPacket(w.c)
		switch {
		case err == nil && cp.Type == packets.PINGREQ:
			w.write(&packets.Pingresp{})
			continue
		case err == nil:
			w.t.Fatalf("got %s, want nothing yet", cp)
		}
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			w.t.Fatalf("reading from the client: %v", err)
		}
		return
	}
}

// TestAcksInOrderOnTheirConnection: a message is acknowledged once it is
// taken, in the order the messages came (a refused one waits for the one
// before it), and only on the connection it came on — on a later one its
// packet id could name another message.
func TestAcksInOrderOnTheirConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g := &gateTaker{gate: make(chan struct{})}
	s, err := Start(Config{Brokers: []string{"mqtt://" + l.Addr().String()}, ClientID: "ruled-acks",
		Subscribe: []Subscription{{Filter: "scooter/#", QoS: 1}}, Decoder: &bus.Decoder{}, Log: testkit.LogTo(t)}, g)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := accept(t, l)
	// takeOne lets the taker have one message and reads the ack of id.
	takeOne := func(id uint16) {
		t.Helper()
		g.gate <- struct{}{}
		w.wantPuback(id)
	}
	w.write(publish(1))
	notJSON := publish(2)
	notJSON.Payload = []byte("not json") // refused at once
	w.write(notJSON)
	testkit.Eventually(t, "both handled", func() bool { return s.Stats().Received == 2 })
	w.quiet(100 * time.Millisecond) // 2 waits for 1, which waits for the taker
	takeOne(1)
	w.wantPuback(2)

	w.write(publish(3))
	testkit.Eventually(t, "the third handled", func() bool { return s.Stats().Received == 3 })
	w.c.Close() // the connection goes before 3 is taken
	w = accept(t, l)
	other := publish(3) // another message under the same packet id, on this connection
	other.Payload = []byte(`{"vehicle":"v8"}`)
	w.write(other)
	testkit.Eventually(t, "the other handled", func() bool { return s.Stats().Received == 4 })
	g.gate <- struct{}{} // the first 3 taken now: its acknowledgement is not this connection's
	testkit.Eventually(t, "the first 3 taken", func() bool { return s.Stats().Accepted == 2 })
	w.quiet(100 * time.Millisecond) // the other 3 is not taken yet
	takeOne(3)
	w.write(publish(5))
	takeOne(5)

	// A message sent twice on one connection (DUP, same packet id) is
	// taken and acknowledged once, and holds back nothing after it.
	w.write(publish(9))
	again := publish(9)
	again.Duplicate = true
	w.write(again)
	testkit.Eventually(t, "both deliveries handled", func() bool { return s.Stats().Received == 7 })
	takeOne(9)
	w.write(publish(10))
	takeOne(10)

	// A DUP of a message done but waiting for its turn (12, refused,
	// behind 11): acknowledged once.
	w.write(publish(11))
	bad := publish(12)
	bad.Payload = []byte("not json")
	w.write(bad)
	bad.Duplicate = true
	w.write(bad)
	testkit.Eventually(t, "11 and both 12s handled", func() bool { return s.Stats().Received == 11 })
	takeOne(11)
	w.wantPuback(12)
	w.write(publish(13))
	takeOne(13) // not 12 again
	if st := s.Stats(); st.Accepted != 8 || st.Refused["not-json"] != 3 || st.Refused["redelivered"] != 1 {
		t.Errorf("stats %+v: want 8 accepted, 3 refused, 1 redelivery folded", st)
	}
}

// A broker's restart leaves a window's worth of taken messages whose
// connection went: their warning is one line a second, with the count.
func TestLostAcksWarnOnceASecond(t *testing.T) {
	log := &testkit.Log{}
	s := &Client{log: log, acks: newAckSession()}
	s.acks.next() // connection 1; the messages came on 0
	pr := paho.PublishReceived{Packet: &paho.Publish{QoS: 1, PacketID: 1, Topic: "scooter/v1/t"}}
	for range 500 {
		s.acknowledge(pr, 0)
	}
	if n := log.Count("acknowledgement was not sent"); n != 1 {
		t.Errorf("%d warnings for 500 lost acknowledgements within a second; want 1\n%s", n, log)
	}
	if st := s.accepted.Load(); st != 500 {
		t.Errorf("accepted %d; want 500", st)
	}
}
