package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ruled-dev/ruled/abi"
)

// Channels of the Redis bus: defaults for RedisConfig.
const (
	RedisChannel        = keyspace.Bus
	RedisControlChannel = keyspace.Control
)

// pingAfter is how long a subscription waits without a message before it
// pings, so that a dead connection shows and go-redis replaces it.
const pingAfter = 5 * time.Second

// RedisClient is what the Redis bus needs of go-redis: *redis.Client,
// *redis.ClusterClient and redis.UniversalClient all have it.
type RedisClient interface {
	Publish(ctx context.Context, channel string, message any) *redis.IntCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

var (
	_ RedisClient = (*redis.Client)(nil)
	_ RedisClient = (*redis.ClusterClient)(nil)
	_ RedisClient = redis.UniversalClient(nil)
)

// Logger is what the bus logs through: hclog.Logger and *slog.Logger both
// have these methods.
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
}

// RedisConfig configures a Redis bus. The zero value is the default.
type RedisConfig struct {
	// Decoder decodes what subscriptions receive. default: a zero Decoder.
	Decoder *Decoder
	// Counters counts what subscriptions accept and refuse.
	// default: a Counters of the bus's own (see Redis.Counters).
	Counters *Counters
	// Logger gets refusals (debug) and lost and recovered connections.
	// default: nothing is logged.
	Logger Logger
	// Channel carries events. default: RedisChannel.
	Channel string
	// ControlChannel carries ruled's control messages. default: RedisControlChannel.
	ControlChannel string
	// Resumed, when set, is called on a subscription's goroutine once a
	// lost subscription to channel is back and settled: every event whose
	// Publish returned before `before` has by then been delivered to it
	// or is lost to it for good (see Subscription). A publisher that
	// tracks what it published can then tell what never arrived.
	Resumed func(channel string, before time.Time)
}

// Redis is the bus over Redis pub/sub, for devices and fleets that already
// run a Redis (or Valkey). Events travel as their JSON on one channel,
// RedisConfig.Channel; every subscriber receives every event and routes
// topics in memory, as with Local. So anything that can PUBLISH JSON to
// ruled:bus is a producer, with the same checks as any ingest.
//
// ruled's own control messages (ruled.triggers.changed, ruled.cmd.<rule>)
// travel on a second channel, RedisConfig.ControlChannel, because ingest
// and plugins may not publish reserved topics and a subscriber of events
// must never see them.
//
// # What it guarantees, and what it does not
//
// Pub/sub delivers at most once. Redis keeps nothing: an event published
// while a subscriber is disconnected (its connection dropped, Redis
// restarted, the network down) is lost for that subscriber, and nothing
// tells it which ones it missed. go-redis reconnects and resubscribes on its
// own; the subscription logs the loss and the recovery (warn, info). A
// subscriber whose handler falls far behind is disconnected by Redis
// (client-output-buffer-limit pubsub) and loses events the same way. Fleet
// mode, which must not lose accepted events, will ingest through Redis
// Streams with consumer groups instead.
//
// While connected, each subscriber receives every event once, and the events
// of one publisher in the order its Publish calls returned. A publisher that
// subscribes also receives its own events back.
//
// Redis is safe for concurrent use. It owns no goroutine; each Subscription
// owns one, stopped by its Close.
type Redis struct {
	client RedisClient
	cfg    RedisConfig
}

// NewRedis returns the Redis bus over client.
func NewRedis(client RedisClient, cfg RedisConfig) *Redis {
	if cfg.Decoder == nil {
		cfg.Decoder = &defaultDecoder
	}
	if cfg.Counters == nil {
		cfg.Counters = new(Counters)
	}
	if cfg.Logger == nil {
		cfg.Logger = nopLogger{}
	}
	if cfg.Channel == "" {
		cfg.Channel = RedisChannel
	}
	if cfg.ControlChannel == "" {
		cfg.ControlChannel = RedisControlChannel
	}
	return &Redis{client: client, cfg: cfg}
}

// Counters counts the events the bus's subscriptions accepted and refused.
func (r *Redis) Counters() *Counters { return r.cfg.Counters }

// Publish sends e's JSON to every subscriber and returns once Redis has
// delivered it. An event no subscriber received is an error
// (ErrNoSubscriber): pub/sub keeps nothing, so while a process's
// subscription is down — Redis restarting — what it publishes or ingests
// is refused rather than acknowledged and lost. It refuses what
// Local.Publish refuses.
//
// When e's JSON has no "id" or no "time" (the Decoder made them up), they
// are added to what is sent, so that every subscriber sees the event with
// the same id and time as the publisher. That makes it up to ~100 bytes
// longer than e.Raw: an event within a few bytes of the Decoder's MaxSize
// may be refused by a subscriber.
func (r *Redis) Publish(ctx context.Context, e *Event) error {
	if err := checkPublish(e); err != nil {
		return err
	}
	wire, err := stamped(e)
	if err != nil {
		return fmt.Errorf("bus: publish %s: %w", e.Topic, err)
	}
	n, err := r.client.Publish(ctx, r.cfg.Channel, wire).Result()
	if err != nil {
		return fmt.Errorf("bus: publish %s: %w", e.Topic, err)
	}
	if n == 0 {
		// Pub/sub keeps nothing: an event no subscriber received is gone,
		// and must not be acknowledged as accepted.
		return fmt.Errorf("bus: publish %s: %w", e.Topic, ErrNoSubscriber)
	}
	return nil
}

// ErrNoSubscriber is a publish that no process received: every
// subscription to the bus is down (a process reconnecting after a Redis
// restart) or none exists. The event is lost to pub/sub, so it is refused.
var ErrNoSubscriber = errors.New("no subscriber received it (the bus subscription is down)")

// envelope starts a message that carries an event's id and time beside
// its JSON, for an event whose JSON's "id" is not its id: the byte (an
// ASCII record separator, which no JSON starts with), the id, a newline,
// the time (RFC 3339), a newline, the JSON.
const envelope = '\x1e'

// hopsEnvelope starts a message that carries an event's Hops and Chain
// too: the byte (an ASCII group separator), the hops in decimal, a space,
// the chain, a newline, then what follows envelope. An event a step
// published goes so, so that a loop of rules across processes meets
// MaxHops, and its refusal names the rules.
const hopsEnvelope = '\x1d'

// maxChain bounds a chain read off the bus: MaxHops rule ids and arrows.
const maxChain = 4 << 10

// unwrapHops decodes a message that starts with hopsEnvelope.
func unwrapHops(d *Decoder, msg string) (*Event, error) {
	head, rest, ok := strings.Cut(msg[1:], "\n")
	n, chain, _ := strings.Cut(head, " ")
	hops, err := strconv.Atoi(n)
	if !ok || err != nil || hops < 0 || len(rest) == 0 || rest[0] != envelope {
		return nil, &Rejection{ReasonNotJSON, "a malformed envelope"}
	}
	e, err := unwrap(d, rest)
	if err != nil {
		return nil, err
	}
	if len(chain) > maxChain {
		chain = chain[:maxChain]
	}
	e.Hops, e.Chain = min(hops, MaxHops+1), chain
	return e, nil
}

// unwrap decodes a message that starts with envelope.
func unwrap(d *Decoder, msg string) (*Event, error) {
	id, rest, ok1 := strings.Cut(msg[1:], "\n")
	at, raw, ok2 := strings.Cut(rest, "\n")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok1 || !ok2 || err != nil || id == "" || len(id) > MaxIDLen {
		return nil, &Rejection{ReasonNotJSON, "a malformed envelope"}
	}
	e, err := d.decode([]byte(raw), NoID, "")
	if err != nil {
		return nil, err
	}
	e.ID, e.Time = id, t
	return e, nil
}

// stamped returns e's JSON carrying e's id and time, and its hops when
// it has some (hopsEnvelope).
func stamped(e *Event) ([]byte, error) {
	if e.Hops > 0 {
		if len(e.Raw) == 0 || e.Raw[0] != '{' {
			return nil, errors.New("not an event from a Decoder")
		}
		at := e.Time.Format(time.RFC3339Nano)
		b := make([]byte, 0, len(e.Raw)+len(e.ID)+len(at)+8)
		b = append(strconv.AppendInt(append(b, hopsEnvelope), int64(e.Hops), 10), ' ')
		b = append(append(b, strings.ReplaceAll(e.Chain, "\n", " ")...), '\n')
		b = append(append(append(append(append(b, envelope), e.ID...), '\n'), at...), '\n')
		return append(b, e.Raw...), nil
	}
	v, err := abi.ParseView(e.View)
	if err != nil || len(e.Raw) == 0 || e.Raw[0] != '{' {
		return nil, errors.New("not an event from a Decoder")
	}
	idv, hasID := v.Find("id")
	tv, hasTime := v.Find("time")
	id, isStr := idv.Str()
	at := e.Time.Format(time.RFC3339Nano)
	ts, _ := tv.Str()
	jt, terr := time.Parse(time.RFC3339Nano, string(ts))
	if hasID && (!isStr || len(id) > 0 && string(id) != e.ID) || hasTime && (terr != nil || !jt.Equal(e.Time)) {
		// The JSON's "id" or "time" is not the event's: a device's own
		// field (MQTT, Decoder.IDField). It stays as the device sent it,
		// and the event's id and time travel beside the JSON.
		b := make([]byte, 0, len(e.Raw)+len(e.ID)+len(at)+3)
		b = append(append(append(append(append(b, envelope), e.ID...), '\n'), at...), '\n')
		return append(b, e.Raw...), nil
	}
	needID, needTime := len(id) == 0, !hasTime
	if !needID && !needTime {
		return e.Raw, nil
	}
	if hasID && needID { // "id": "", replaced by the Decoder: rewrite the object
		var m map[string]json.RawMessage
		if err := json.Unmarshal(e.Raw, &m); err != nil {
			return nil, err
		}
		m["id"] = quote(e.ID)
		if needTime {
			m["time"] = quote(at)
		}
		return json.Marshal(m)
	}
	// Raw is an object with at least a topic: insert after its '{'.
	b := make([]byte, 0, len(e.Raw)+100)
	b = append(b, '{')
	if needID {
		b = append(b, `"id":`...)
		b = append(b, quote(e.ID)...)
		b = append(b, ',')
	}
	if needTime {
		b = append(b, `"time":`...)
		b = append(b, quote(at)...)
		b = append(b, ',')
	}
	return append(b, e.Raw[1:]...), nil
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// PublishControl sends one of ruled's own control messages, such as
// ruled.triggers.changed, to every SubscribeControl subscriber. topic must be
// under ReservedPrefix and otherwise a valid topic; payload is any bytes.
// Having no subscriber is not an error.
//
// On the wire a control message is the topic, a newline, and the payload.
func (r *Redis) PublishControl(ctx context.Context, topic string, payload []byte) error {
	if err := CheckControlTopic(topic); err != nil {
		return err
	}
	msg := make([]byte, 0, len(topic)+1+len(payload))
	msg = append(append(append(msg, topic...), '\n'), payload...)
	if err := r.client.Publish(ctx, r.cfg.ControlChannel, msg).Err(); err != nil {
		return fmt.Errorf("bus: publish %s: %w", topic, err)
	}
	return nil
}

// CheckControlTopic accepts the topics only ruled publishes: under
// ReservedPrefix, without wildcards, spaces or empty segments.
func CheckControlTopic(topic string) error {
	rest, ok := strings.CutPrefix(topic, ReservedPrefix)
	switch {
	case !ok:
		return fmt.Errorf("bus: control topic %q is not under %q", topic, ReservedPrefix)
	case len(topic) > 256:
		return fmt.Errorf("bus: control topic longer than 256 bytes")
	case rest == "" || strings.ContainsAny(rest, "*> \t\r\n") ||
		strings.HasPrefix(rest, ".") || strings.HasSuffix(rest, ".") || strings.Contains(rest, ".."):
		return fmt.Errorf("bus: control topic %q has a wildcard, a space or an empty segment", topic)
	}
	return nil
}

// Subscribe calls h with every event on the bus, on the subscription's own
// goroutine, one at a time and in the order received. Like a Local
// subscriber, h must queue work and return at once: while it runs, Redis
// buffers, and drops the subscriber if it falls too far behind.
//
// What the channel carries that is not an event is refused: counted in
// Counters by reason, logged at debug, never passed to h, and never fatal.
//
// Subscribe returns once Redis has confirmed the subscription, so every event
// published after it returns is received. It fails if Redis has not
// confirmed by ctx's deadline (10 seconds when ctx has none). ctx bounds only
// this wait; the subscription lasts until its Close.
func (r *Redis) Subscribe(ctx context.Context, h func(*Event)) (*Subscription, error) {
	if h == nil {
		panic("bus: Redis.Subscribe with a nil handler")
	}
	return r.subscribe(ctx, r.cfg.Channel, func(m *redis.Message) {
		var e *Event
		var err error
		switch {
		case len(m.Payload) > 0 && m.Payload[0] == hopsEnvelope:
			e, err = unwrapHops(r.cfg.Decoder, m.Payload)
		case len(m.Payload) > 0 && m.Payload[0] == envelope:
			e, err = unwrap(r.cfg.Decoder, m.Payload)
		default:
			e, err = r.cfg.Decoder.Decode([]byte(m.Payload))
		}
		if err != nil {
			r.cfg.Counters.Reject(ReasonOf(err))
			r.cfg.Logger.Debug("bus: event refused", "channel", m.Channel, "reason", string(ReasonOf(err)), "error", err.Error())
			return
		}
		r.cfg.Counters.Accept()
		h(e)
	})
}

// SubscribeControl calls h with every control message, as Subscribe does
// with events. A message that is not a topic under ReservedPrefix, a newline
// and a payload is logged at debug and dropped.
func (r *Redis) SubscribeControl(ctx context.Context, h func(topic string, payload []byte)) (*Subscription, error) {
	if h == nil {
		panic("bus: Redis.SubscribeControl with a nil handler")
	}
	return r.subscribe(ctx, r.cfg.ControlChannel, func(m *redis.Message) {
		topic, payload, _ := strings.Cut(m.Payload, "\n")
		if err := CheckControlTopic(topic); err != nil {
			r.cfg.Logger.Debug("bus: control message dropped", "channel", m.Channel, "error", err.Error())
			return
		}
		h(topic, []byte(payload))
	})
}

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
