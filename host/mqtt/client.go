package mqtt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/internal/lograte"
	"github.com/ruled-dev/ruled/internal/traceparent"
)

// Taker takes an event in, waiting for room, until it is taken or the
// stop (ingest.Ingest.TakeWaiting: an input with no client to tell
// "busy").
type Taker interface {
	TakeWaiting(ctx context.Context, e *bus.Event) error
}

// GroupTaker is a Taker that takes several events at once, in order
// (ingest.Ingest.TakeAllWaiting): the messages that came while the last
// group was being written go in together, their journal entries in one
// write. It returns how many it took before it was stopped.
type GroupTaker interface {
	TakeAllWaiting(ctx context.Context, es []*bus.Event) (int, error)
}

// Redeliveries is what a Taker that remembers what it accepted answers
// (ingest.Ingest): whether a message of key (bus.Event.Key) was accepted
// already. A message the broker delivers again (DUP set: its
// acknowledgement was lost to a kill or a broker restart) that was is
// acknowledged and not taken again, so it starts no second run.
type Redeliveries interface {
	Redelivered(key string) bool
}

// Subscription is one topic filter and the QoS it is subscribed with.
type Subscription struct {
	Filter string
	QoS    byte
}

// Config is what a Client is built from.
type Config struct {
	// Brokers are the broker URLs (mqtt://host:port, mqtts://…), tried in
	// turn.
	Brokers []string
	// ClientID names the session: the broker keeps what this client has
	// not acknowledged under it. Required (a persistent session needs one
	// that does not change across restarts).
	ClientID           string
	Username, Password string
	// TLS, when set, is used for every broker (mqtts:// uses the system's
	// roots without it).
	TLS *tls.Config
	// KeepAlive is the MQTT keep-alive. default: 30s.
	KeepAlive time.Duration
	// PublishClientID is the client id of the connection the outbox
	// publishes on when the Client also subscribes: the broker's answers
	// to what ruled publishes do not queue behind the messages it sends
	// ruled (RATIONALE "Why the outbox has a connection of its own").
	// Messages keep ClientID as their origin. default: ClientID + "-out".
	PublishClientID string
	// SessionExpiry is how long the broker keeps the session while the
	// process is away. default: 24h.
	SessionExpiry time.Duration
	Subscribe     []Subscription
	// Share subscribes as a member of this MQTT 5 shared subscription
	// group ("$share/<group>/<filter>"): the broker hands each message to
	// one member of the group, not to each — a fleet's members share the
	// work instead of each accepting every message. "": not shared.
	Share string
	// WrapNonJSON wraps a payload that is not a JSON object as
	// {"payload": "<text>"}; false refuses it (counted, acknowledged).
	WrapNonJSON bool
	// Decoder decodes the events (their size limit and clock).
	Decoder *bus.Decoder
	// Publish are the routes of what steps publish to the broker (Offer);
	// none: the Client only subscribes.
	Publish []Route
	// Outbox is the store the outbox keeps its messages in until the
	// broker has them (required with Publish), under OutboxKey(ClientID).
	Outbox Hasher
	// OutboxLimit and OutboxBytes bound the outbox while the broker is
	// away; a publish past either fails its step (ErrOutboxFull).
	// defaults: 10,000 messages, 64 MiB.
	OutboxLimit, OutboxBytes int
	Log                      Logger
}

// Logger is where a Client says what happened (hclog.Logger is one).
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// Stats are a Client's counters.
type Stats struct {
	Received uint64            `json:"received"`
	Accepted uint64            `json:"accepted"`
	Refused  map[string]uint64 `json:"refused"` // by reason: topic, not-json, too large, bad field, own, redelivered
	Up       bool              `json:"up"`      // connected now
	// Published counts the messages the broker took from the outbox;
	// Rejected those it refused for good (dropped, logged); OutboxFull
	// the publishes refused because the outbox was full; Outbox what it
	// holds now.
	Published uint64 `json:"published"`
	// Written counts the messages the outbox wrote to the store: the
	// broker had not taken them within writeBehind of their publish.
	Written    uint64 `json:"written"`
	Rejected   uint64 `json:"rejected"`
	OutboxFull uint64 `json:"outbox_full"`
	Outbox     int    `json:"outbox"`
}

// Client is one connection to a broker: its messages as events (Config.Subscribe), and the outbox of what rules publish to it (Config.Publish).
type Client struct {
	cfg   Config
	taker Taker
	log   Logger
	cm    *autopaho.ConnectionManager
	// pub is the connection the outbox publishes on: cm when the Client
	// only publishes, its own (Config.PublishClientID) when it subscribes
	// too; pubUp is its up when it has its own.
	pub   *autopaho.ConnectionManager
	pubUp atomic.Bool
	// connWarns folds the connections' warnings (connect, lost,
	// acknowledgements not sent).
	connWarns lograte.Limiter
	cancel    context.CancelFunc
	ctx       context.Context
	// out is the outbox (Config.Publish), nil without routes; sendDone is
	// closed when its sender has stopped.
	out      *outbox
	sendDone chan struct{}
	// taking is the messages waiting for the taker, in order, when it is
	// a GroupTaker (at most MaxGroup: past it paho's reader waits, which
	// is what holds the broker back); takeDone is closed when the goroutine
	// taking them (take) has stopped, at Close.
	taking   chan *received
	takeDone chan struct{}
	// queued are the messages in taking and in the group being taken, by
	// key (QoS 1 and 2; mu): a redelivery of one of them (its connection
	// was lost before its acknowledgement) is acknowledged in its place
	// once it is taken, not taken a second time.
	queued map[string]*received

	// acks is the source connection's session state, the keeper of its
	// acknowledgements (nil without subscriptions).
	acks *ackSession

	received, accepted atomic.Uint64
	handling           atomic.Int32 // received1 calls in progress, for Close
	up                 atomic.Bool
	mu                 sync.Mutex
	refused            map[string]uint64
	// refuseLogged and refusedLogged are when each reason was last
	// logged, and its count then (refuse).
	refuseLogged  map[string]time.Time
	refusedLogged map[string]uint64
}

// Start connects to the broker in the background (reconnecting, with
// backoff and jitter, until Close), subscribes on every connection and
// hands what arrives to taker; it loads the outbox's messages left by an
// earlier process and sends them, and what Offer adds, whenever the
// broker is there. It returns once the connection is set going, not once
// it is up. taker may be nil when the Client subscribes to nothing.
func Start(cfg Config, taker Taker) (*Client, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("mqtt: no broker")
	}
	if cfg.ClientID == "" {
		return nil, errors.New("mqtt: a client id is required: the session that keeps unacknowledged messages is named by it")
	}
	if len(cfg.Subscribe) == 0 && len(cfg.Publish) == 0 {
		return nil, errors.New("mqtt: nothing to subscribe to and nothing to publish")
	}
	if strings.ContainsAny(cfg.Share, "/+#") {
		return nil, fmt.Errorf("mqtt: share group %q: no '/', '+' or '#'", cfg.Share)
	}
	if len(cfg.Subscribe) > 0 && taker == nil {
		return nil, errors.New("mqtt: subscriptions need a taker of their events")
	}
	for _, r := range cfg.Publish {
		if _, err := rules.ParsePattern(string(r.Pattern)); err != nil {
			return nil, fmt.Errorf("mqtt: publish: %w", err)
		}
		if r.QoS > 2 {
			return nil, fmt.Errorf("mqtt: publish %q: QoS %d", r.Pattern, r.QoS)
		}
	}
	if len(cfg.Publish) > 0 && cfg.Outbox == nil {
		return nil, errors.New("mqtt: publishing needs a store for the outbox")
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
		u, err := ParseBroker(b)
		if err != nil {
			return nil, err
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
	if cfg.PublishClientID == "" {
		cfg.PublishClientID = cfg.ClientID + "-out"
	}
	if cfg.PublishClientID == cfg.ClientID && len(cfg.Subscribe) > 0 && len(cfg.Publish) > 0 {
		return nil, errors.New("mqtt: the publishing connection's client id is the subscribing one's: two connections with one id take the session from each other")
	}
	if cfg.OutboxLimit <= 0 {
		cfg.OutboxLimit = 10_000
	}
	if cfg.OutboxBytes <= 0 {
		cfg.OutboxBytes = 64 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Client{cfg: cfg, taker: taker, log: cfg.Log, cancel: cancel, ctx: ctx, refused: map[string]uint64{},
		refuseLogged: map[string]time.Time{}, refusedLogged: map[string]uint64{}}
	if len(cfg.Publish) > 0 {
		s.out = newOutbox(cfg.Outbox, cfg.ClientID, cfg.OutboxLimit, cfg.OutboxBytes, s.log)
		if err := s.out.load(s.log); err != nil {
			cancel()
			return nil, err
		}
	}
	var subs []paho.SubscribeOptions
	for _, sub := range cfg.Subscribe {
		f := sub.Filter
		if cfg.Share != "" {
			f = "$share/" + cfg.Share + "/" + f // messages still arrive on their own topics
		}
		subs = append(subs, paho.SubscribeOptions{Topic: f, QoS: sub.QoS})
	}
	if gt, ok := taker.(GroupTaker); ok && len(cfg.Subscribe) > 0 {
		s.taking, s.takeDone, s.queued = make(chan *received, MaxGroup), make(chan struct{}), map[string]*received{}
		go s.take(gt)
	}
	// A Client that subscribes and publishes publishes on a connection
	// of its own (PublishClientID): see RATIONALE "Why the outbox has a
	// connection of its own".
	id, link := cfg.ClientID, ""
	if len(cfg.Subscribe) > 0 && len(cfg.Publish) > 0 {
		link = "in"
	}
	cm, err := s.connect(urls, id, link, subs, &s.up)
	if err == nil && link != "" {
		s.pub, err = s.connect(urls, cfg.PublishClientID, "out", nil, &s.pubUp)
	}
	if err != nil {
		cancel()
		if s.takeDone != nil {
			<-s.takeDone
		}
		if cm != nil {
			cm.Disconnect(context.Background())
		}
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	s.cm = cm
	if s.pub == nil {
		s.pub = cm // one connection does both
	}
	if s.out != nil {
		s.sendDone = make(chan struct{})
		go s.send()
	}
	return s, nil
}

// connect sets going a connection as id: subscribed to subs on every
// connection, handing what arrives to received1, up set while it is up.
// link names it in the log when the Client has two ("in", "out").
func (s *Client) connect(urls []*url.URL, id, link string, subs []paho.SubscribeOptions, up *atomic.Bool) (*autopaho.ConnectionManager, error) {
	cfg, ctx := s.cfg, s.ctx
	log := s.log
	if link != "" {
		log = withLink{s.log, link}
	}
	cc := autopaho.ClientConfig{
		ServerUrls: urls, KeepAlive: uint16(cfg.KeepAlive / time.Second),
		CleanStartOnInitialConnection: false, SessionExpiryInterval: uint32(cfg.SessionExpiry / time.Second),
		ReconnectBackoff: reconnectBackoff, ConnectTimeout: 10 * time.Second,
		TlsCfg: cfg.TLS, ConnectUsername: cfg.Username, ConnectPassword: []byte(cfg.Password),
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			up.Store(true)
			if len(subs) == 0 {
				log.Info("mqtt: connected")
				return
			}
			// On every connection: a broker that lost the session (it
			// restarted without persistence) has lost the subscriptions too.
			if _, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: subs}); err != nil && ctx.Err() == nil {
				log.Error("mqtt: subscribing failed; no message arrives until the next connection", "error", err)
				return
			}
			log.Info("mqtt: connected and subscribed", "filters", len(subs))
		},
		// A broker that flaps, or is away, is one cause a connection: its
		// warnings are folded to one a second (the backoff starts at 100 ms).
		OnConnectionDown: func() bool {
			up.Store(false)
			if folded, ok := s.connWarns.Allow("lost " + link); ok && ctx.Err() == nil {
				log.Warn("mqtt: connection lost; reconnecting", "folded", folded)
			}
			return true
		},
		OnConnectError: func(err error) {
			if folded, ok := s.connWarns.Allow("connect " + link); ok && ctx.Err() == nil {
				log.Warn("mqtt: cannot connect; retrying", "error", err, "folded", folded)
			}
		},
		// The largest message this client takes, announced at CONNECT: an
		// MQTT 5 broker does not send a larger one (it drops it for this
		// client), so a 250 MiB message never reaches the process.
		ConnectPacketBuilder: func(cp *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			if cp.Properties == nil {
				cp.Properties = &paho.ConnectProperties{}
			}
			maxPacket := uint32(cfg.Decoder.Limit() + packetOverhead)
			cp.Properties.MaximumPacketSize = &maxPacket
			return cp, nil
		},
		ClientConfig: paho.ClientConfig{ClientID: id},
	}
	if len(subs) > 0 {
		// Acknowledged by the session once taken, not by paho (ackSession).
		s.acks = newAckSession()
		cc.ClientConfig.Session = s.acks
		cc.ClientConfig.OnPublishReceived = []func(paho.PublishReceived) (bool, error){s.received1}
	}
	if buffered(urls) {
		cc.AttemptConnection = dialBuffered(cfg.TLS, 10*time.Second)
	}
	// The connection has a context of its own, ended by Close's
	// Disconnect: Close cancels s.ctx first (the take loop, the sender),
	// and the connection must outlive that long enough for paho to send
	// the acknowledgements of what was taken last — on s.ctx it went at
	// once, and the broker sent those messages again (up to 40 of 300
	// in TestGroupsTakenAndAcknowledged).
	return autopaho.NewConnection(context.Background(), cc)
}

// withLink adds the connection's name to what a Client with two says.
type withLink struct {
	Logger
	link string
}

func (l withLink) Debug(msg string, args ...any) {
	l.Logger.Debug(msg, append(args, "link", l.link)...)
}
func (l withLink) Info(msg string, args ...any) { l.Logger.Info(msg, append(args, "link", l.link)...) }
func (l withLink) Warn(msg string, args ...any) { l.Logger.Warn(msg, append(args, "link", l.link)...) }
func (l withLink) Error(msg string, args ...any) {
	l.Logger.Error(msg, append(args, "link", l.link)...)
}

// MaxGroup is the most messages handed to a GroupTaker at once, and
// waiting for it.
const MaxGroup = 256

// received is a message read and decoded, waiting for the taker.
type received struct {
	e    *bus.Event
	pr   paho.PublishReceived
	conn uint64 // the connection pr came on (ackSession)
}

// take hands the waiting messages to the GroupTaker, as many at once as
// came meanwhile, and acknowledges each it took, in order, until Close.
// One not taken (stopping) is not acknowledged: the broker delivers it
// again to the session's next connection.
func (s *Client) take(gt GroupTaker) {
	defer close(s.takeDone)
	group := make([]*received, 0, MaxGroup)
	es := make([]*bus.Event, 0, MaxGroup)
	for {
		select {
		case m := <-s.taking:
			group = append(group[:0], m)
		case <-s.ctx.Done():
			return
		}
	more:
		for len(group) < MaxGroup {
			select {
			case m := <-s.taking:
				group = append(group, m)
			default:
				break more
			}
		}
		es = es[:0]
		for _, m := range group {
			es = append(es, m.e)
		}
		n, err := gt.TakeAllWaiting(s.ctx, es)
		for _, m := range group[:n] {
			s.mu.Lock()
			pr, conn := m.pr, m.conn // the latest delivery's (received1)
			if m.e.Key != "" {
				delete(s.queued, m.e.Key)
			}
			s.mu.Unlock()
			s.acknowledge(pr, conn)
		}
		if err != nil {
			s.log.Debug("mqtt: messages not taken; left for redelivery", "messages", len(group)-n, "error", err)
		}
		clear(group)
		clear(es)
	}
}

// acknowledge counts an accepted message and has it acknowledged, in
// its turn (ackSession).
func (s *Client) acknowledge(pr paho.PublishReceived, conn uint64) {
	s.accepted.Add(1)
	if err := s.acks.done(conn, pr.Packet); err != nil {
		// The event is accepted; a lost ack makes the broker deliver it
		// again (at least once, as an action's idempotency key expects).
		// A broker's restart loses a window's worth at once: one line a
		// second.
		if folded, ok := s.connWarns.Allow("ack"); ok {
			s.log.Warn("mqtt: an accepted message's acknowledgement was not sent", "topic", pr.Packet.Topic, "error", err,
				"folded", folded)
		}
	}
}

// packetOverhead is what a PUBLISH packet holds beside its payload, at
// most: its fixed header, a topic of up to 64 KiB and its properties.
const packetOverhead = 80 << 10

// ParseBroker reads a broker URL of a scheme autopaho dials: mqtt:// (or
// tcp://), mqtts:// (ssl://, tls://) and ws:// or wss://.
func ParseBroker(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || !slices.Contains([]string{"mqtt", "mqtts", "tcp", "ssl", "tls", "ws", "wss"}, u.Scheme) {
		return nil, fmt.Errorf("mqtt: broker %q: want mqtt://host:1883 or mqtts://host:8883", s)
	}
	return u, nil
}

// reconnectBackoff waits 100 ms after the first failed attempt, doubling
// to 30 s, each wait ±20 % so that processes cut off together do not
// reconnect together.
func reconnectBackoff(attempt int) time.Duration {
	d := min(100*time.Millisecond<<min(attempt, 9), 30*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Close disconnects and stops reconnecting and sending. A message whose
// handler is still waiting for room is left unacknowledged: the broker
// delivers it again to the session's next connection. What the outbox
// holds stays in the store for the next start to send.
func (s *Client) Close() error {
	s.cancel() // ends a TakeWaiting, and a publish, in progress first
	if s.sendDone != nil {
		<-s.sendDone
	}
	if s.out != nil {
		s.out.close(s.log) // what steps published is in the store when Close returns
	}
	if s.takeDone != nil {
		<-s.takeDone // what it took is acknowledged before the disconnect
	}
	// A message being handled one at a time (no GroupTaker) may have been
	// taken just now, its acknowledgement not yet handed to paho: wait
	// for the handler (cancelled above, it returns at once unless it is
	// acknowledging), or the broker sends that message again.
	for deadline := time.Now().Add(time.Second); s.handling.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var perr error
	if s.pub != s.cm {
		perr = s.pub.Disconnect(ctx)
		<-s.pub.Done()
	}
	err := s.cm.Disconnect(ctx)
	<-s.cm.Done()
	if errors.Is(perr, autopaho.ConnectionDownError) || errors.Is(perr, context.Canceled) {
		perr = nil
	}
	err = errors.Join(err, perr)
	if errors.Is(err, autopaho.ConnectionDownError) || errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Stats returns the counters.
func (s *Client) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := make(map[string]uint64, len(s.refused))
	for k, v := range s.refused {
		r[k] = v
	}
	st := Stats{Received: s.received.Load(), Accepted: s.accepted.Load(), Refused: r, Up: s.up.Load() && (s.pub == s.cm || s.pubUp.Load())}
	if s.out != nil {
		st.Published, st.Rejected, st.OutboxFull = s.out.sent.Load(), s.out.rejected.Load(), s.out.refusedFull.Load()
		st.Written = s.out.written.Load()
		st.Outbox = s.out.len()
	}
	return st
}

// messageKey is a message's identity across its deliveries: a hash of
// its topic, packet id and payload. A broker sends a message again with
// its packet id (MQTT 5, 4.4), and no two messages in flight on a session
// share one; a later message may reuse a packet id with the same topic
// and payload, so a key is only asked about for a delivery marked as a
// repeat (DUP), and only within journal.SeenFor.
func messageKey(p *paho.Publish) string {
	h := sha256.New()
	h.Write([]byte(p.Topic))
	h.Write([]byte{0, byte(p.PacketID >> 8), byte(p.PacketID)})
	h.Write(p.Payload)
	return "mqtt:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// refuseEvery is how often refusals of one reason are logged: a device
// sending what ruled refuses sends it every few seconds, and a line per
// message buried the log (41,617 lines in one run).
const refuseEvery = time.Second

// refuse counts and acknowledges a message that is not an event, logging
// err when there is one (nil: a refusal that is not a fault) — at most
// once every refuseEvery per reason, with how many were refused since.
func (s *Client) refuse(pr paho.PublishReceived, conn uint64, reason string, err error) {
	now := time.Now()
	s.mu.Lock()
	s.refused[reason]++
	since := s.refused[reason] - s.refusedLogged[reason]
	log := err != nil && now.Sub(s.refuseLogged[reason]) >= refuseEvery
	if log {
		s.refuseLogged[reason], s.refusedLogged[reason] = now, s.refused[reason]
	}
	s.mu.Unlock()
	if log {
		s.log.Warn("mqtt: message refused", "topic", pr.Packet.Topic, "reason", reason, "error", err,
			"refused", since, "next-log-within", refuseEvery.String())
	}
	if aerr := s.acks.done(conn, pr.Packet); aerr != nil {
		s.log.Debug("mqtt: could not acknowledge a refused message", "error", aerr)
	}
}

// received1 handles one message, on paho's handler goroutine: blocking
// here is what stops the reading while the workers have no room.
func (s *Client) received1(pr paho.PublishReceived) (bool, error) {
	s.handling.Add(1)
	defer s.handling.Add(-1)
	s.received.Add(1)
	conn := s.acks.came(pr.Packet)
	if p := pr.Packet.Properties; p != nil && p.User.Get(PropOrigin) == s.cfg.ClientID {
		// A step of this process published it: the bus carried it then
		// (a subscription that overlaps a publish route). Counted, not
		// logged: it is not a fault.
		s.refuse(pr, conn, "own", nil)
		return true, nil
	}
	if n, limit := len(pr.Packet.Payload), s.cfg.Decoder.Limit(); n > limit {
		// Checked before anything is made of it: a payload is decoded,
		// wrapped and decoded again, each a copy (a 250 MiB message took
		// the process to 1.2 GB). The broker is told the limit at
		// CONNECT (maxPacket) and should never send one; this is for one
		// that does.
		s.refuse(pr, conn, string(bus.ReasonTooLarge), fmt.Errorf("%d bytes, over the limit of %d", n, limit))
		return true, nil
	}
	raw, reason, err := s.event(pr.Packet.Topic, pr.Packet.Payload)
	if err != nil {
		s.refuse(pr, conn, reason, err)
		return true, nil
	}
	e, err := s.cfg.Decoder.Decode(raw)
	if err != nil {
		s.refuse(pr, conn, string(bus.ReasonOf(err)), err)
		return true, nil
	}
	if p := pr.Packet.Properties; p != nil {
		// Another ruled's publish names its event: the same id here.
		if id := p.User.Get(PropEvent); id != "" && len(id) <= bus.MaxIDLen {
			e.ID = id
		}
		// Another ruled's publish: its hops count on here (a loop of
		// rules through the broker). Only then: a device that sent the
		// property would have every publish of the runs it triggers
		// refused.
		if h, err := strconv.Atoi(p.User.Get(PropHops)); err == nil && h > 0 && p.User.Get(PropOrigin) != "" {
			e.Hops = min(h, bus.MaxHops+1)
		}
		// A W3C traceparent (any sender's): the runs the event triggers
		// are spans of its trace. One that is not a traceparent is
		// ignored, as the recommendation says.
		if tp := p.User.GetAll(traceparent.Header); len(tp) == 1 { // two are none
			e.Trace = traceparent.Canonical(tp[0])
		}
	}
	if pr.Packet.QoS > 0 {
		e.Key = messageKey(pr.Packet)
		if r, ok := s.taker.(Redeliveries); ok && pr.Packet.Duplicate() && r.Redelivered(e.Key) {
			s.refuse(pr, conn, "redelivered", nil) // counted and acknowledged, not a fault
			return true, nil
		}
	}
	if s.taking != nil {
		m := &received{e, pr, conn}
		if e.Key != "" {
			s.mu.Lock()
			if q := s.queued[e.Key]; q != nil && pr.Packet.Duplicate() {
				// The same message, delivered again on a new connection
				// while the first delivery waits to be taken: it is taken
				// once, and this delivery is the one acknowledged.
				q.pr, q.conn = pr, conn
				s.refused["redelivered"]++
				s.mu.Unlock()
				return true, nil
			}
			s.queued[e.Key] = m
			s.mu.Unlock()
		}
		select {
		case s.taking <- m: // take acknowledges it once taken
		case <-s.ctx.Done(): // stopping: not taken, not acknowledged
		}
		return true, nil
	}
	if err := s.taker.TakeWaiting(s.ctx, e); err != nil {
		// Stopping: not taken, so not acknowledged — the broker delivers
		// it again.
		s.log.Debug("mqtt: message not taken; left for redelivery", "topic", pr.Packet.Topic, "error", err)
		return true, nil
	}
	s.acknowledge(pr, conn)
	return true, nil
}

// event is the event JSON for a message: its payload, a JSON object, with
// the ruled topic and the MQTT topic set; or, when it is not an object
// and WrapNonJSON says so, {topic, mqtt_topic, payload: its text}.
//
// One decoder, one rule for every way in (issue 38): an object is the
// bus.Decoder's to refuse — duplicate keys, nesting past its depth —, as
// over HTTP; it was unmarshalled into a map, which kept the last of two
// "x" and wrapped JSON nested 100,000 deep as a string. A payload that
// opens as JSON (an object or an array) is JSON, refused when it is not;
// only other text is wrapped.
func (s *Client) event(topic string, payload []byte) ([]byte, string, error) {
	rt, err := Topic(topic)
	if err != nil {
		return nil, "topic", err
	}
	p := bytes.TrimSpace(payload)
	if len(p) > 0 && p[0] == '{' {
		return objectEvent(p, rt, topic)
	}
	if len(p) > 0 && p[0] == '[' {
		if _, err := abi.AppendJSONView(nil, p, false); err != nil {
			return nil, string(bus.ReasonNotJSON), err
		}
	}
	if !s.cfg.WrapNonJSON {
		return nil, "not-json", fmt.Errorf("the payload is not a JSON object")
	}
	b := append([]byte(`{"topic":`), abi.AppendJSONString(nil, rt)...)
	b = append(append(b, `,"mqtt_topic":`...), abi.AppendJSONString(nil, topic)...)
	b = append(append(b, `,"payload":`...), abi.AppendJSONString(nil, string(payload))...)
	return append(b, '}'), "", nil
}

// objectEvent is an object payload p with "topic" and "mqtt_topic" set
// in front of its fields, for the decoder to check once. A payload of its
// own "topic" or "mqtt_topic" has them replaced, what it had there
// checked by the decoder's rules as they are left out (the decoder sees
// only what replaced them).
func objectEvent(p []byte, rt, topic string) ([]byte, string, error) {
	b, ok, err := bus.WithMembersChecked(p, bus.Member{Name: "topic", Value: abi.AppendJSONString(nil, rt)},
		bus.Member{Name: "mqtt_topic", Value: abi.AppendJSONString(nil, topic)})
	if err != nil {
		return nil, string(bus.ReasonNotJSON), err
	}
	if !ok {
		return nil, string(bus.ReasonNotJSON), fmt.Errorf("the payload is not a JSON object")
	}
	return b, "", nil
}
