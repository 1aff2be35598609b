package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
)

// Taker takes an event in, waiting for room, until it is taken or the
// stop (ingest.Ingest.TakeWaiting: an input with no client to tell
// "busy").
type Taker interface {
	TakeWaiting(ctx context.Context, e *bus.Event) error
}

// Subscription is one topic filter and the QoS it is subscribed with.
type Subscription struct {
	Filter string
	QoS    byte
}

// Config is what a Source is built from.
type Config struct {
	// Brokers are the broker URLs (mqtt://host:port, mqtts://…), tried in
	// turn.
	Brokers []string
	// ClientID names the session: the broker keeps what this client has
	// not acknowledged under it. Required (a persistent session needs one
	// that does not change across restarts).
	ClientID           string
	Username, Password string
	// KeepAlive is the MQTT keep-alive. default: 30s.
	KeepAlive time.Duration
	// SessionExpiry is how long the broker keeps the session while the
	// process is away. default: 24h.
	SessionExpiry time.Duration
	Subscribe     []Subscription
	// WrapNonJSON wraps a payload that is not a JSON object as
	// {"payload": "<text>"}; false refuses it (counted, acknowledged).
	WrapNonJSON bool
	// Decoder decodes the events (their size limit and clock).
	Decoder *bus.Decoder
	Log     Logger
}

// Logger is where a Source says what happened (hclog.Logger is one).
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// Stats are a Source's counters.
type Stats struct {
	Received uint64            `json:"received"`
	Accepted uint64            `json:"accepted"`
	Refused  map[string]uint64 `json:"refused"` // by reason: topic, not-json, too-large, invalid
	Up       bool              `json:"up"`      // connected now
}

// Source is a broker's messages as events.
type Source struct {
	cfg    Config
	taker  Taker
	log    Logger
	cm     *autopaho.ConnectionManager
	cancel context.CancelFunc
	ctx    context.Context

	received, accepted atomic.Uint64
	up                 atomic.Bool
	mu                 sync.Mutex
	refused            map[string]uint64
}

// Start connects to the broker in the background (reconnecting, with
// backoff and jitter, until Close) and subscribes on every connection.
// It returns once the connection is set going, not once it is up.
func Start(cfg Config, taker Taker) (*Source, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("mqtt: no broker")
	}
	if cfg.ClientID == "" {
		return nil, errors.New("mqtt: a client id is required: the session that keeps unacknowledged messages is named by it")
	}
	if len(cfg.Subscribe) == 0 {
		return nil, errors.New("mqtt: nothing to subscribe to")
	}
	for _, s := range cfg.Subscribe {
		if _, err := Pattern(s.Filter); err != nil {
			return nil, err
		}
		if s.QoS > 2 {
			return nil, fmt.Errorf("mqtt: filter %q: QoS %d", s.Filter, s.QoS)
		}
	}
	var urls []*url.URL
	for _, b := range cfg.Brokers {
		u, err := url.Parse(b)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("mqtt: broker %q: want mqtt://host:port", b)
		}
		urls = append(urls, u)
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Decoder == nil {
		cfg.Decoder = &bus.Decoder{}
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 30 * time.Second
	}
	if cfg.SessionExpiry <= 0 {
		cfg.SessionExpiry = 24 * time.Hour
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Source{cfg: cfg, taker: taker, log: cfg.Log, cancel: cancel, ctx: ctx, refused: map[string]uint64{}}
	var subs []paho.SubscribeOptions
	for _, sub := range cfg.Subscribe {
		subs = append(subs, paho.SubscribeOptions{Topic: sub.Filter, QoS: sub.QoS})
	}
	cc := autopaho.ClientConfig{
		ServerUrls: urls, KeepAlive: uint16(cfg.KeepAlive / time.Second),
		CleanStartOnInitialConnection: false, SessionExpiryInterval: uint32(cfg.SessionExpiry / time.Second),
		ReconnectBackoff: reconnectBackoff, ConnectTimeout: 10 * time.Second,
		ConnectUsername: cfg.Username, ConnectPassword: []byte(cfg.Password),
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			s.up.Store(true)
			// On every connection: a broker that lost the session (it
			// restarted without persistence) has lost the subscriptions too.
			if _, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: subs}); err != nil && ctx.Err() == nil {
				s.log.Error("mqtt: subscribing failed; no message arrives until the next connection", "error", err)
				return
			}
			s.log.Info("mqtt: connected and subscribed", "filters", len(subs))
		},
		OnConnectionDown: func() bool {
			s.up.Store(false)
			if ctx.Err() == nil {
				s.log.Warn("mqtt: connection lost; reconnecting")
			}
			return true
		},
		OnConnectError: func(err error) {
			if ctx.Err() == nil {
				s.log.Warn("mqtt: cannot connect; retrying", "error", err)
			}
		},
		ClientConfig: paho.ClientConfig{
			ClientID:                   cfg.ClientID,
			EnableManualAcknowledgment: true,
			OnPublishReceived:          []func(paho.PublishReceived) (bool, error){s.received1},
		},
	}
	cm, err := autopaho.NewConnection(ctx, cc)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	s.cm = cm
	return s, nil
}

// reconnectBackoff waits 100 ms after the first failed attempt, doubling
// to 30 s, each wait ±20 % so that processes cut off together do not
// reconnect together.
func reconnectBackoff(attempt int) time.Duration {
	d := min(100*time.Millisecond<<min(attempt, 9), 30*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Close disconnects and stops reconnecting. A message whose handler is
// still waiting for room is left unacknowledged: the broker delivers it
// again to the session's next connection.
func (s *Source) Close() error {
	s.cancel() // ends a TakeWaiting in progress first
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.cm.Disconnect(ctx)
	<-s.cm.Done()
	if errors.Is(err, autopaho.ConnectionDownError) || errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Stats returns the counters.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := make(map[string]uint64, len(s.refused))
	for k, v := range s.refused {
		r[k] = v
	}
	return Stats{Received: s.received.Load(), Accepted: s.accepted.Load(), Refused: r, Up: s.up.Load()}
}

func (s *Source) refuse(pr paho.PublishReceived, reason string, err error) {
	s.mu.Lock()
	s.refused[reason]++
	s.mu.Unlock()
	s.log.Warn("mqtt: message refused", "topic", pr.Packet.Topic, "reason", reason, "error", err)
	if aerr := pr.Client.Ack(pr.Packet); aerr != nil {
		s.log.Debug("mqtt: could not acknowledge a refused message", "error", aerr)
	}
}

// received1 handles one message, on paho's handler goroutine: blocking
// here is what stops the reading while the workers have no room.
func (s *Source) received1(pr paho.PublishReceived) (bool, error) {
	s.received.Add(1)
	raw, reason, err := s.event(pr.Packet.Topic, pr.Packet.Payload)
	if err != nil {
		s.refuse(pr, reason, err)
		return true, nil
	}
	e, err := s.cfg.Decoder.Decode(raw)
	if err != nil {
		s.refuse(pr, string(bus.ReasonOf(err)), err)
		return true, nil
	}
	if err := s.taker.TakeWaiting(s.ctx, e); err != nil {
		// Stopping: not taken, so not acknowledged — the broker delivers
		// it again.
		s.log.Debug("mqtt: message not taken; left for redelivery", "topic", pr.Packet.Topic, "error", err)
		return true, nil
	}
	s.accepted.Add(1)
	if err := pr.Client.Ack(pr.Packet); err != nil {
		// The event is accepted; a lost ack makes the broker deliver it
		// again (at least once, as an action's idempotency key expects).
		s.log.Warn("mqtt: an accepted message's acknowledgement was not sent", "topic", pr.Packet.Topic, "error", err)
	}
	return true, nil
}

// event is the event JSON for a message: its payload (a JSON object, or
// wrapped) with the ruled topic and the MQTT topic set.
func (s *Source) event(topic string, payload []byte) ([]byte, string, error) {
	rt, err := Topic(topic)
	if err != nil {
		return nil, "topic", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil || m == nil {
		if !s.cfg.WrapNonJSON {
			return nil, "not-json", fmt.Errorf("the payload is not a JSON object")
		}
		m = map[string]json.RawMessage{"payload": abi.AppendJSONString(nil, string(payload))}
	}
	m["topic"] = abi.AppendJSONString(nil, rt)
	m["mqtt_topic"] = abi.AppendJSONString(nil, topic)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "invalid", err
	}
	return b, "", nil
}
