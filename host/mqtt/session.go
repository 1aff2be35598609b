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

// ackSession is the session state of the connection that takes messages
// (the source's), and the keeper of their acknowledgements: a message is
// acknowledged once the taker has it, at once, on the connection it came
// on, and in the order the messages came.
//
// paho's manual acknowledgement was the way before, and it fell short
// twice. It sends acknowledgements only on a ticker (a millisecond here,
// a wakeup each while connected), and the broker holds back what follows
// until they arrive: with mosquitto's window of 20 messages, QoS 1 could
// not pass 20 a millisecond. And v0.23.0 loses the first messages of a
// connection: its Connect starts the goroutine that reads and tracks
// messages and only then empties its tracker, so a resumed session's
// message read in between was never acknowledged (CI saw it once,
// TestUntakenMessageIsDeliveredAgain, stop 52).
//
// So paho runs without manual acknowledgement, and its own Ack — which it
// calls once the handler returns, whether or not the message was taken —
// does nothing here. The Client tells the session what came (came, in
// order, on paho's handler goroutine) and what was taken or refused
// (done); done sends the acknowledgements of the messages done at the
// head of the order (MQTT 5, 4.6: in the order the messages came).
//
// A packet id names a message on one connection only: an acknowledgement
// sent on a later connection could acknowledge another message, one not
// taken. So each connection is numbered (conn, one more at each CONNACK
// and each loss), a message carries the number it came under, and the
// order is emptied when the connection changes: the broker sends what
// was not acknowledged again, on the next.
type ackSession struct {
	session.SessionManager

	mu    sync.Mutex // held across the inner calls that change or use the connection
	conn  uint64
	order []waiting // this connection's messages not yet acknowledged, in the order they came
}

// waiting is a message the taker has not had yet, or whose turn to be
// acknowledged has not come.
type waiting struct {
	pb   *packets.Publish
	done bool
}

func newAckSession() *ackSession {
	return &ackSession{SessionManager: state.NewInMemory()}
}

// ConAckReceived starts a connection.
func (s *ackSession) ConAckReceived(w io.Writer, cp *packets.Connect, ca *packets.Connack) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next()
	return s.SessionManager.ConAckReceived(w, cp, ca)
}

// ConnectionLost ends one.
func (s *ackSession) ConnectionLost(dp *packets.Disconnect) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next()
	return s.SessionManager.ConnectionLost(dp)
}

// next numbers the next connection (or loss) and forgets the last one's
// order: the broker sends what it did not acknowledge again. s.mu held.
func (s *ackSession) next() {
	s.conn++
	clear(s.order)
	s.order = s.order[:0]
}

// Ack is paho's acknowledgement of a message its handler returned from:
// nothing, as the Client acknowledges (done) once the message is taken.
func (s *ackSession) Ack(*packets.Publish) error { return nil }

// came counts pb into the order (QoS 1 and 2) and returns the number of
// the connection it came on. paho calls the handler, which calls came,
// one message at a time in the order they arrived, and only after
// ConAckReceived; it starts no next connection before the last handler of
// this one has returned. A message handled after its connection was lost
// gets the loss's number, under which nothing is sent.
func (s *ackSession) came(pb *paho.Publish) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pb.QoS == 0 {
		return s.conn
	}
	if pb.Duplicate() {
		// Sent again on the same connection (a broker MQTT 5 forbids to
		// do so, but one may): one place in the order, as paho's tracker
		// keeps, or the second would wait for good and hold back every
		// acknowledgement after it — or, the first done and waiting for
		// its turn, be acknowledged twice.
		for _, w := range s.order {
			if w.pb.PacketID == pb.PacketID {
				return s.conn
			}
		}
	}
	s.order = append(s.order, waiting{pb: &packets.Publish{QoS: pb.QoS, PacketID: pb.PacketID}})
	return s.conn
}

// errConnGone is done's answer for a message whose connection has gone.
var errConnGone = errors.New("the connection it came on is gone; the broker sends it again")

// done marks pb, which came under conn, as taken (or refused), and sends
// the acknowledgements of the messages done at the head of the order.
func (s *ackSession) done(conn uint64, pb *paho.Publish) error {
	if pb.QoS == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if conn != s.conn {
		return errConnGone
	}
	for i := range s.order {
		if w := &s.order[i]; !w.done && w.pb.PacketID == pb.PacketID {
			w.done = true
			break
		}
	}
	var err error
	n := 0
	for ; n < len(s.order) && s.order[n].done; n++ {
		if aerr := s.SessionManager.Ack(s.order[n].pb); aerr != nil && err == nil {
			err = aerr // the connection is failing: paho drops it, and the broker sends these again
		}
	}
	if n > 0 {
		m := copy(s.order, s.order[n:])
		clear(s.order[m:])
		s.order = s.order[:m]
	}
	return err
}
