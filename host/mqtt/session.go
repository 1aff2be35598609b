package mqtt

import (
	"errors"
	"io"
	"sync"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"
	"github.com/eclipse/paho.golang/paho/session/state"
)

// ackSession is the session state of a connection that acknowledges by
// hand (the source's), with what paho's manual acknowledgement lacks: a
// way to acknowledge a message paho has lost track of, on the connection
// it came on and on no other.
//
// paho (v0.23.0) loses track of the first messages after a CONNACK. Its
// Connect starts the goroutine that reads and tracks them, and only then
// empties its tracker of acknowledgements. A session's waiting messages
// come right behind the CONNACK: one read before the emptying is gone
// from the tracker, its Ack fails with ErrPacketNotFound, and nothing
// sends its PUBACK. The broker sends it again only at the next
// connection — a duplicate there, and meanwhile a place of its in-flight
// window taken (CI saw it: TestUntakenMessageIsDeliveredAgain, stop 52).
//
// A packet id names a message on one connection only: a PUBACK sent on a
// later connection could acknowledge another message, one not taken.
// So each connection is numbered (conn, one more at each CONNACK and at
// each loss), a message carries the number it came under, and ackOn
// sends its PUBACK only while that number is still the session's.
type ackSession struct {
	session.SessionManager

	mu   sync.Mutex // held across the inner calls that change or use the connection
	conn uint64
}

func newAckSession() *ackSession {
	return &ackSession{SessionManager: state.NewInMemory()}
}

// ConAckReceived starts a connection.
func (s *ackSession) ConAckReceived(w io.Writer, cp *packets.Connect, ca *packets.Connack) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn++
	return s.SessionManager.ConAckReceived(w, cp, ca)
}

// ConnectionLost ends one.
func (s *ackSession) ConnectionLost(dp *packets.Disconnect) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn++
	return s.SessionManager.ConnectionLost(dp)
}

// current is the number of the connection now, or of the loss since.
// A message read under connection n is handed over while current is n,
// or later: paho reads it only after ConAckReceived, and does not start
// the next connection before the last handler of this one has returned.
// A Client without one (it subscribes to nothing) has only 0.
func (s *ackSession) current() uint64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// ackOn sends pb's PUBACK if conn is still the session's connection; it
// tells whether it was sent. The lock keeps the connection from changing
// during the write.
func (s *ackSession) ackOn(conn uint64, pb *packets.Publish) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if conn != s.conn {
		return false, nil
	}
	return true, s.SessionManager.Ack(pb)
}

// ack acknowledges pr, a message read under connection conn: through
// paho's tracker, which sends acknowledgements in the order the messages
// came, or, when paho has lost track of it, at once (ackSession). At
// once keeps the order too: the messages paho loses are the first of a
// connection, and the take loop acknowledges in order, so the ones after
// them are marked in the tracker only after their PUBACK is written.
func (s *Client) ack(pr paho.PublishReceived, conn uint64) error {
	err := pr.Client.Ack(pr.Packet)
	if !errors.Is(err, paho.ErrPacketNotFound) || s.acks == nil {
		return err
	}
	sent, err := s.acks.ackOn(conn, pr.Packet.Packet())
	switch {
	case err != nil:
		return err
	case !sent:
		return errors.New("the connection it came on is gone; the broker sends it again")
	}
	s.acksRescued.Add(1)
	return nil
}
