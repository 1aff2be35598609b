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

// gateTaker takes nothing until its gate opens.
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

// TestAckPahoLostTrackOf: a message paho has lost track of (its tracker
// emptied behind a CONNACK, ackSession) is acknowledged all the same, on
// the connection it came on — and never on a later one, where its packet
// id could name another message.
func TestAckPahoLostTrackOf(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g := &gateTaker{gate: make(chan struct{})}
	s, err := Start(Config{Brokers: []string{"mqtt://" + l.Addr().String()}, ClientID: "ruled-lost",
		Subscribe: []Subscription{{Filter: "scooter/#", QoS: 1}}, Decoder: &bus.Decoder{}, Log: testkit.LogTo(t)}, g)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := accept(t, l)
	w.write(publish(7))
	var m received
	testkit.Eventually(t, "the message waiting for the taker", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, q := range s.queued {
			m = *q
		}
		return m.e != nil
	})
	close(g.gate)
	w.wantPuback(7) // through paho's tracker

	// The same message under a packet id paho never tracked: its Ack
	// fails with ErrPacketNotFound, as for one the race lost.
	lost := m.pr
	lost.Packet = &paho.Publish{QoS: 1, PacketID: 99, Topic: m.pr.Packet.Topic}
	if err := lost.Client.Ack(lost.Packet); err != paho.ErrPacketNotFound {
		t.Fatalf("paho's Ack of an untracked packet: %v", err)
	}
	s.acknowledge(lost, m.conn)
	w.wantPuback(99)
	if n := s.Stats().AcksRescued; n != 1 {
		t.Errorf("acks rescued %d, want 1", n)
	}

	// A new connection: the old one's packet ids mean nothing on it.
	w.c.Close()
	w = accept(t, l)
	lost.Packet = &paho.Publish{QoS: 1, PacketID: 98, Topic: m.pr.Packet.Topic}
	s.acknowledge(lost, m.conn)
	w.write(publish(5))
	w.wantPuback(5) // and not 98 before it
	if n := s.Stats().AcksRescued; n != 1 {
		t.Errorf("acks rescued %d after a stale one, want still 1", n)
	}
}
