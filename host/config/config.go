package config

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/state"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/mqtt"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/outbound"
	"github.com/ruled-dev/ruled/host/reload"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/sun"
	"github.com/ruled-dev/ruled/host/traces"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
)

// Clock is the time a daemon's timers run on: waiting steps, sleeping
// rules' wake-ups (engine.Clock has the same methods). The wall clock
// (sched.New) unless Config.Clock says otherwise; tests give a
// sched.Virtual to live hours in milliseconds.
type Clock = sched.Clock

// State is the entity state table's settings (host/state).
type State struct {
	// MaxEntities bounds the entities kept; 0 is the default (10,000),
	// -1 keeps no state.
	MaxEntities int
	// MaxBytes bounds their states together; 0 is the default (8 MiB).
	MaxBytes int
	// Keys make the entities of a topic pattern <topic>/<key field>.
	Keys []state.KeyRule
	// ForgetAfter is how long an entity goes unreported before a full
	// table forgets it for a new one; 0 is the default (24h).
	ForgetAfter time.Duration
}

// Location is where the daemon is (location:), for the sun.
type Location struct {
	Latitude, Longitude, Elevation float64
	// HasLatitude and HasLongitude say which were given: the sun needs
	// both.
	HasLatitude, HasLongitude bool
}

// Sun is the location for host/sun; false when none was given.
func (l Location) Sun() (sun.Location, bool) {
	if !l.HasLatitude || !l.HasLongitude {
		return sun.Location{}, false
	}
	return sun.Location{Latitude: l.Latitude, Longitude: l.Longitude, Elevation: l.Elevation}, true
}

// Config configures a daemon (daemon.Config is this type). Zero fields
// take their defaults (Validate).
type Config struct {
	// RulesDir holds the rule files (*.yaml). Required unless Deployed.
	RulesDir string
	// PluginsDir holds the plugins (*.wasm); a plugin's name is its file
	// name without ".wasm". Required unless Deployed.
	PluginsDir string
	// Deployed loads the rules and plugins `ruled deploy` put in Redis
	// instead of directories the operator keeps (needs RedisURL). The
	// process keeps what it loaded under DataDir/deployed, and reads the
	// deployment again when one is announced and every RulesRefresh.
	// Validate sets it when RedisURL is given and neither directory is.
	Deployed bool
	// DataDir holds the embedded store (ruled.db), the compilation cache and
	// the API socket (ruled.sock). Required.
	DataDir string
	// RedisURL puts the bus and the pending records on Redis
	// (redis://host:port/db). "": the embedded store and the in-process bus.
	RedisURL string
	// Shards, with RedisURL, makes this process a member of a fleet
	// sharing the work over Redis in Shards shards (package fleet): events
	// are accepted into Redis's ingest stream, and this process runs the
	// shards it holds. Every member must be given the same number. 0: not
	// a fleet.
	Shards int
	// HTTPAddr serves the API on TCP too (the unix socket is always there).
	// A non-loopback address needs Token. "": socket only.
	HTTPAddr string
	// Token is the API's bearer token, named "default" in what its
	// commands leave (a run's tree, a rule's history); the token setting
	// ($RULED_TOKEN).
	Token string
	// TokensFile names more API tokens, one a line: NAME TOKEN (ReadTokens).
	// Each command says which token sent it ("token NAME"), so that an
	// operator's, a dashboard's and a script's commands are told apart.
	TokensFile string
	// Tokens are the named tokens, read from TokensFile by Validate.
	Tokens map[string]string
	// TokenScopes are what each named token may do (api.ParseScopes),
	// read from TokensFile with Tokens: api.DefaultScopes (read) for a
	// line that names none. A token it does not name, and Token, may do
	// everything.
	TokenScopes map[string][]string
	// TLSCert and TLSKey, both set, serve the TCP API over TLS (PEM files):
	// a token sent to a non-loopback address otherwise travels in clear.
	TLSCert, TLSKey string
	// HTTPRate and HTTPBurst bound each client's requests to the TCP API
	// (per remote IP, a token bucket). default: api.DefaultRate and
	// api.DefaultBurst.
	HTTPRate  float64
	HTTPBurst int
	// HTTPConnsPerAddr is the TCP API's connections one client address may
	// hold (api.ServerConfig.ConnsPerAddr). default: 64 of 256.
	HTTPConnsPerAddr int
	// EventsFile is the events setting: the command opens it (- for its
	// stdin) as Events.
	EventsFile string
	// LogLevel and LogJSON are the daemon's own log (the command makes the
	// logger from them).
	LogLevel string
	LogJSON  bool
	// Events, when set, is read as NDJSON events until EOF (--events FILE|-).
	Events io.Reader
	// ReplayWindow drops waiting steps more than this past due at start.
	// default: 1h.
	ReplayWindow time.Duration
	// MaxStepOutput is the largest output (bytes) a step may return for
	// its run's later steps (steps.<name>); a larger one fails the step.
	// A run's pending record carries its outputs. default: 64 KiB; at most
	// MaxStepOutputLimit.
	MaxStepOutput int
	// State bounds the entities' states (host/state) and names the
	// entities of topics that carry many.
	State State
	// Location is where the daemon is: the sun's triggers need it.
	Location Location
	// MemoryLimitMB is a soft limit on the process's Go memory in MiB
	// (runtime/debug.SetMemoryLimit): near it the garbage collector runs
	// more often instead of letting the heap grow, which is what keeps a
	// device's peak RSS close to its idle one (the scooter example: 41 MB
	// peak through a burst without, 28 MB with 16). Plugins' linear memory
	// and compiled code are outside it. default: 0, none (or GOMEMLIMIT).
	MemoryLimitMB int64
	// CompileCacheMB bounds the compilation cache under the data directory
	// (cache/wazero), in MiB: at start, the code compiled longest ago is
	// removed until the rest fits. default: 64; -1: no bound.
	CompileCacheMB int64
	// ReplayClock says when the wall clock is trusted to judge waiting steps:
	// "now" (default) or "after-last-write" (wait until the clock reads at
	// least the newest record's write time: for devices without an RTC).
	ReplayClock string
	// Workers runs rules' steps. default: the CPUs less one (at least one),
	// leaving a P free for timers while plugins run (see RATIONALE.md).
	Workers int
	// QueueCapacity bounds queued triggers; past it new triggers are
	// refused and counted. default: 1024.
	QueueCapacity int
	// MaxEventSize bounds an event's JSON in bytes. default: 256 KiB.
	MaxEventSize int
	// Limits are every plugin's defaults; Plugins override per plugin.
	Limits wasm.Limits
	// Plugins holds per-plugin grants and limits. Default: nothing granted.
	Plugins map[string]PluginConfig
	// Interpreter runs plugins on wazero's interpreter.
	Interpreter bool
	// Watch reloads plugins and rules when their files change.
	Watch bool
	// ReloadDebounce is how long the watcher waits after a file's last
	// change before reloading. default: reload.DefaultDebounce.
	ReloadDebounce time.Duration
	// StoreWait is how long a start retries a store that does not answer
	// (a Redis still coming up) before it gives up. default: 1m.
	StoreWait time.Duration
	// ObserveAction, when set, is called after every action call with what
	// went in and came out (sdk/ruletest records them for assertions). It
	// runs on the worker that made the call.
	ObserveAction func(observe.ActionCall)
	// SeeEvents, when set, sees every event on the in-process bus from the
	// moment the bus opens, before any step runs (sdk/ruletest: what a
	// replayed step publishes at start is seen too).
	SeeEvents func(*bus.Event)
	// Clock runs the daemon's timers. default: the wall clock. Tests set a
	// sched.Virtual.
	Clock Clock
	// ReloadBackoff is the first wait before a plugin file that failed to
	// load is tried again; it doubles with each failure in a row, up to a
	// minute. default: 1s.
	ReloadBackoff time.Duration
	// RulesRefresh is how often the rules directory is read again whatever
	// else happened (the fallback for lost change events). default:
	// reload.DefaultRulesRefresh; negative: never.
	RulesRefresh time.Duration
	// NoExecLog turns the execution log off (benchmarks; a device that
	// cannot spare the writes).
	NoExecLog bool
	// NoLatencyMetrics leaves out the plugin-call and step latency
	// histograms of /metrics (two clock reads and an atomic add per call;
	// benchmarks measure what they cost). The counters stay.
	NoLatencyMetrics bool
	// MQTT makes a broker a source of events and a sink of what rules
	// publish (host/mqtt); nil: none.
	MQTT *MQTT
	// HTTP, when set, answers plugins' outbound requests instead of
	// host/outbound (sdk/ruletest's recording stub: a test reaches no
	// network); the grant is still checked, the allow-lists are not.
	HTTP wasm.HTTP
	// Signatures say where files must be signed, by which keys (host/trust).
	Signatures Signatures
	// ExecLog sizes the execution log's writer and bounds what it keeps.
	// default: runlog's defaults (a queue of 8192 entries; 5000 runs, 5 per
	// rule per outcome, 64 MiB).
	ExecLog runlog.Options
	// Audit bounds the audit trail (host/audit): its entries and their
	// age. default: audit.DefaultRetention (100,000, a year).
	Audit audit.Retention
	// Traces sends runs to an OpenTelemetry collector (host/traces); off
	// while its Endpoint is "".
	Traces traces.Config
	// HistoryStep is how far apart the console's charts' points are
	// (host/history); 0: a minute. Tests shorten it.
	HistoryStep time.Duration
	// Origins say where each setting was last given, by its key with a
	// plugin's name for * (plugin.expr.grant): "ruled.yaml:4:9" (its
	// value's line and column), "$RULED_MQTT" or "--mqtt". Load, ApplyEnv
	// and FlagSet.Apply fill it, so that Validate's mistakes name the
	// place to mend.
	Origins map[string]string
}

// Signatures are the settings of what runs: where a file must be signed
// to load, the keys trusted, the ids revoked. Validate reads them into
// Gate.
type Signatures struct {
	// Require are the places (trust.Places; "true" for all) whose files
	// must be signed by a trusted key.
	Require []string
	// Trusted are public keys as ruled keygen prints them.
	Trusted []string
	// Revoked are key ids refused even when Trusted lists them.
	Revoked []string
	// Gate is the keyring applied where signatures are required; set by
	// Validate (nil: nothing required).
	Gate *trust.Gate
}

// gate builds Gate from the settings. An error comes with the key of
// the setting it is about.
func (s *Signatures) gate() (string, error) {
	places, err := trust.ParsePlaces(s.Require)
	if err != nil {
		return "require-signatures", fmt.Errorf("require-signatures: %w", err)
	}
	var keys []trust.PublicKey
	for _, k := range s.Trusted {
		pk, err := trust.ParsePublicKey(k)
		if err != nil {
			return "trusted-keys", fmt.Errorf("trusted-keys: %w", err)
		}
		keys = append(keys, pk)
	}
	ring, err := trust.NewKeyring(keys, s.Revoked)
	if err != nil {
		return "trusted-keys", fmt.Errorf("trusted-keys: %w", err)
	}
	if len(places) == 0 {
		s.Gate = nil
		return "", nil
	}
	g, err := trust.NewGate(ring, places)
	if err != nil {
		return "require-signatures", fmt.Errorf("require-signatures %s: %w", strings.Join(s.Require, " "), err)
	}
	s.Gate = g
	return "", nil
}

// MQTT is a broker as a source of events and a sink of what rules
// publish: what to connect to, as whom, which topic filters to subscribe
// to and which topics to publish.
type MQTT struct {
	// Brokers are mqtt://host:port URLs, tried in turn. Required.
	Brokers []string
	// ClientID names the broker's session, which keeps what this process
	// has not acknowledged while it is away: it must not change across
	// restarts. default: "ruled-" and the host's name.
	ClientID string
	// PublishClientID is the client id of the connection that publishes,
	// when there is one of its own (mqtt.Config.PublishClientID).
	// default: ClientID and "-out".
	PublishClientID    string
	Username, Password string // the password: the mqtt.password setting ($RULED_MQTT_PASSWORD)
	// KeepAlive and SessionExpiry: defaults 30s and 24h.
	KeepAlive, SessionExpiry time.Duration
	// Subscribe are the topic filters ("scooter/+/telemetry"). Required
	// unless Publish is given.
	Subscribe []string
	// QoS is 1 (the default: a message is acknowledged once it is
	// accepted) or 2.
	QoS byte
	// AtMostOnce subscribes at QoS 0 instead (the config file's `qos: 0`):
	// the broker sends each message once and forgets it, so one in flight
	// when ruled stops or the connection drops is lost. For telemetry
	// whose next reading replaces a lost one, at less cost per message.
	AtMostOnce bool
	// IDField is the payload field whose string or number is a message's
	// event id (a device's message id, say); "" leaves the payload's
	// fields as data and gives the event an id of its own. A message with
	// an idempotency-key user property (what ruled's own publishes carry)
	// takes that first.
	IDField string
	// NonJSON is what a payload that is not a JSON object becomes: "wrap"
	// (default: {"payload": "<text>"}) or "refuse" (counted, acknowledged).
	NonJSON string
	// Publish are the ruled topic patterns whose events, published by
	// steps, go to the broker ("light.>" → light/…), each with its QoS
	// (default 1) and retain flag.
	Publish []MQTTRoute
	// Share is the MQTT 5 shared subscription group the subscriptions
	// join, so that the broker hands each message to one process of the
	// group. default: "ruled" in a fleet (Shards > 0), where every member
	// subscribing on its own would accept every message once per member;
	// none outside one.
	Share string
	// OutboxLimit bounds the messages kept while the broker is away;
	// past it a publishing step fails. default: 10,000.
	OutboxLimit int
	// TLS: the CA file that verifies the broker (default: the system's)
	// and a client certificate and key (PEM) to present, for mqtts://
	// brokers.
	CAFile, CertFile, KeyFile string
}

// MQTTRoute is one publish route of the MQTT settings.
type MQTTRoute struct {
	Topic  string // a ruled topic pattern
	QoS    byte   // 0, 1 or 2 (the config file's and --mqtt-publish's default: 1)
	Retain bool
	// AtMostOnce keeps the route's messages in memory only, not in the
	// store's outbox (QoS 0 routes only): no write and no fsync a
	// message, and a kill loses what the broker has not taken yet.
	AtMostOnce bool
}

// PluginConfig is the operator's word on one plugin.
type PluginConfig struct {
	Grant  []abi.Capability
	Limits wasm.Limits
	// HTTP is where the plugin may send requests, with the http grant:
	// its hosts, those allowed to lead to a private address, and the
	// bodies' bounds (host/outbound). default: nowhere.
	HTTP outbound.Policy
}

// Validate fills in defaults and checks what cannot work.
// MaxStepOutputLimit bounds MaxStepOutput: a plugin's result is at most
// 16 MiB (its limits' result bound), and a run's record carries every
// output it keeps.
const MaxStepOutputLimit = 16 << 20

// LogValueLimit bounds ExecLog.Value: a node is written whole each time
// it changes, and a log of megabyte nodes is a log of few runs.
const LogValueLimit = 1 << 20

func (c *Config) Validate() error {
	p := &problems{c: c}
	if c.CompileCacheMB < -1 {
		p.add("compile-cache-mb", "compile-cache-mb is %d; want MiB, or -1 for no bound", c.CompileCacheMB)
	}
	if c.MaxStepOutput < 0 || c.MaxStepOutput > MaxStepOutputLimit {
		p.add("max-step-output-kb", "max-step-output-kb is %d; want KiB from 1 to %d, or 0 for the default (64)", c.MaxStepOutput>>10, MaxStepOutputLimit>>10)
	}
	if c.ExecLog.Value < 0 || c.ExecLog.Value > LogValueLimit {
		p.add("exec-log.value-kb", "exec-log value-kb (--log-value-kb) is %d; want KiB from 1 to %d, or 0 for the default (4)", c.ExecLog.Value>>10, LogValueLimit>>10)
	}
	if l := c.Location; l.HasLatitude != l.HasLongitude {
		given := "location.latitude"
		if l.HasLongitude {
			given = "location.longitude"
		}
		p.add(given, "location needs both latitude and longitude (--latitude, --longitude)")
	} else if s, ok := l.Sun(); ok {
		if err := s.Check(); err != nil {
			p.add(p.first("location.latitude", "location.longitude", "location.elevation"), "location: %v", err)
		}
	}
	if c.MemoryLimitMB < 0 {
		p.add("memory-limit-mb", "memory-limit-mb is %d; want MiB above 0, or 0 for none", c.MemoryLimitMB)
	}
	if c.RedisURL != "" && c.RulesDir == "" && c.PluginsDir == "" && c.DataDir != "" {
		c.Deployed = true
	}
	if c.Deployed {
		rules, plugins := filepath.Join(c.DataDir, "deployed", "rules"), filepath.Join(c.DataDir, "deployed", "plugins")
		switch {
		case c.RedisURL == "":
			p.add("", "deployed rules and plugins need --redis: `ruled deploy` puts them there")
		case c.DataDir == "":
			p.add("", "--data required")
		case (c.RulesDir != "" && c.RulesDir != rules) || (c.PluginsDir != "" && c.PluginsDir != plugins):
			p.add(p.first("rules", "plugins"), "--rules and --plugins are read from Redis when deployed; give neither")
		default:
			c.RulesDir, c.PluginsDir = rules, plugins
		}
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"rules", c.RulesDir}, {"plugins", c.PluginsDir}, {"data", c.DataDir}} {
		if f.v == "" {
			missing = append(missing, "--"+f.name)
		}
	}
	if len(missing) > 0 && !c.Deployed {
		p.add("", "%s required", strings.Join(missing, ", "))
	}
	if c.TokensFile != "" {
		if toks, scopes, err := ReadTokens(c.TokensFile); err != nil {
			p.err("tokens-file", err)
		} else {
			c.Tokens, c.TokenScopes = toks, scopes
		}
	}
	// The API's bind and tokens, checked here — before the store opens and
	// the plugins compile — rather than when the server starts.
	if c.HTTPAddr != "" {
		if err := api.CheckBind(c.HTTPAddr, c.Token); err != nil && (c.Token != "" || len(c.Tokens) == 0) {
			p.add(p.first("http", "token"), "http %s: %v", c.HTTPAddr, err)
		}
		for name, tok := range c.Tokens {
			if err := api.CheckBind(c.HTTPAddr, tok); err != nil {
				p.add("tokens-file", "tokens-file %s: token %q: %v", c.TokensFile, name, err)
			}
		}
	} else if c.Token != "" && len(c.Token) < api.MinTokenLen {
		p.add("token", "token: %d characters; use at least %d", len(c.Token), api.MinTokenLen)
	}
	switch {
	case (c.TLSCert == "") != (c.TLSKey == ""):
		p.add(p.first("tls-cert", "tls-key"), "--tls-cert and --tls-key go together")
	case c.TLSCert != "" && c.HTTPAddr == "":
		p.add("tls-cert", "--tls-cert serves the TCP API: give --http too")
	}
	if key, err := c.Signatures.gate(); err != nil {
		p.add(key, "%v", err)
	}
	if c.ReplayWindow <= 0 {
		c.ReplayWindow = time.Hour
	}
	switch {
	case c.Shards < 0:
		p.add("shards", "%d shards", c.Shards)
	case c.Shards > 0 && c.RedisURL == "":
		p.add("shards", "--shards needs --redis: a fleet shares its work over Redis")
	}
	switch c.ReplayClock {
	case "":
		c.ReplayClock = "now"
	case "now", "after-last-write":
	default:
		p.add("replay-clock", "replay clock %q: want now or after-last-write", c.ReplayClock)
	}
	if c.Workers <= 0 {
		c.Workers = max(1, runtime.NumCPU()-1)
	}
	if c.QueueCapacity <= 0 {
		c.QueueCapacity = 1024
	}
	if c.ReloadDebounce <= 0 {
		c.ReloadDebounce = reload.DefaultDebounce
	}
	if c.RulesRefresh == 0 {
		c.RulesRefresh = reload.DefaultRulesRefresh
	}
	if c.StoreWait <= 0 {
		c.StoreWait = time.Minute
	}
	if c.ReloadBackoff <= 0 {
		c.ReloadBackoff = time.Second
	}
	if m := c.MQTT; m != nil {
		m.validate(p)
		if m.Share == "" && c.Shards > 0 {
			m.Share = "ruled"
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Plugins)) {
		pc := c.Plugins[name]
		for _, cp := range pc.Grant {
			if !validCap(cp) {
				p.add("plugin."+name+".grant", "plugin %s: unknown capability %q (have %v)", name, cp, abi.Capabilities)
			}
		}
		for _, h := range pc.HTTP.Hosts {
			if err := outbound.CheckHost(h); err != nil {
				p.add("plugin."+name+".http.hosts", "plugin %s: %v", name, err)
			}
		}
		for _, h := range pc.HTTP.Private {
			if err := outbound.CheckHost(h); err != nil {
				p.add("plugin."+name+".http.private", "plugin %s: %v", name, err)
			}
		}
		if pc.HTTP.MaxRequest > maxHTTPBody || pc.HTTP.MaxResponse > maxHTTPBody {
			p.add(p.first("plugin."+name+".http.max-request", "plugin."+name+".http.max-response"), "plugin %s: http bodies are bounded at %d MiB at most", name, maxHTTPBody>>20)
		}
	}
	return p.join()
}

// FileOrigin splits an origin (Config.Origins) the config file gave,
// "path:line:col", into its parts; ok is false for another origin ($RULED_X,
// --flag). A path may hold colons of its own.
func FileOrigin(origin string) (path string, line, col int, ok bool) {
	parts := strings.Split(origin, ":")
	n := len(parts)
	if n < 3 {
		return "", 0, 0, false
	}
	line, err1 := strconv.Atoi(parts[n-2])
	col, err2 := strconv.Atoi(parts[n-1])
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return strings.Join(parts[:n-2], ":"), line, col, true
}

// problems gathers Validate's mistakes, every one of them rather than the
// first: an operator mends a config in one round, not one per start.
type problems struct {
	c    *Config
	errs []problem
}

// problem is one mistake and where it was made, for the order they are
// told in: the file's by line, then the environment's, the flags', the
// daemon's own.
type problem struct {
	where string
	err   error
}

// add is a mistake about the setting key: it names where key was given
// (the file's line, $RULED_…, --flag), or "daemon" when it was not.
func (p *problems) add(key, format string, args ...any) {
	where := "daemon"
	if o := p.c.Origins[key]; key != "" && o != "" {
		where = o
	}
	p.errs = append(p.errs, problem{where, fmt.Errorf(where+": "+format, args...)})
}

// join is the mistakes, in the order they were made in.
func (p *problems) join() error {
	rank := func(where string) (int, int, int) {
		switch {
		case where == "daemon":
			return 3, 0, 0
		case strings.HasPrefix(where, "--"):
			return 2, 0, 0
		case strings.HasPrefix(where, "$"):
			return 1, 0, 0
		}
		_, line, col, _ := FileOrigin(where)
		return 0, line, col
	}
	slices.SortStableFunc(p.errs, func(a, b problem) int {
		ra, la, ca := rank(a.where)
		rb, lb, cb := rank(b.where)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e.err
	}
	return errors.Join(errs...)
}

// err is add with an error that names its own subject.
func (p *problems) err(key string, err error) { p.add(key, "%v", err) }

// first is the first of keys given anywhere, for a mistake two settings
// make together; "" when none was.
func (p *problems) first(keys ...string) string {
	for _, k := range keys {
		if p.c.Origins[k] != "" {
			return k
		}
	}
	return ""
}

// maxHTTPBody is the largest bound a plugin's request or response body
// may be given: what the ABI's http_request carries.
const maxHTTPBody = 16 << 20

// HTTPPolicy is where plugin may send requests (outbound.Config.Policy):
// false when it is allowed no host.
func (c *Config) HTTPPolicy(plugin string) (outbound.Policy, bool) {
	p := c.Plugins[plugin].HTTP
	return p, len(p.Hosts)+len(p.Private) > 0
}

func validCap(c abi.Capability) bool {
	for _, k := range abi.Capabilities {
		if k == c {
			return true
		}
	}
	return false
}

// PluginOptions is what a plugin's module loads with: its grant, and its
// limits over the defaults (catalog.Config.Options).
func (c *Config) PluginOptions(name string) wasm.Options {
	return wasm.Options{Name: name, Grant: c.Plugins[name].Grant, Limits: c.LimitsFor(name)}
}

// LimitsFor merges a plugin's own limits over the defaults.
func (c *Config) LimitsFor(name string) wasm.Limits {
	l := c.Limits
	p := c.Plugins[name].Limits
	if p.Timeout > 0 {
		l.Timeout = p.Timeout
	}
	if p.IdleTimeout != 0 {
		l.IdleTimeout = p.IdleTimeout
	}
	if p.MemoryPages > 0 {
		l.MemoryPages = p.MemoryPages
	}
	if p.Fuel != 0 {
		l.Fuel = p.Fuel
	}
	if p.Instances > 0 {
		l.Instances = p.Instances
	}
	if p.InitTimeout > 0 {
		l.InitTimeout = p.InitTimeout
	}
	if p.StackBytes > 0 {
		l.StackBytes = p.StackBytes
	}
	return l
}

func (m *MQTT) validate(p *problems) {
	switch {
	case len(m.Brokers) == 0:
		p.add(p.first("mqtt.subscribe", "mqtt.publish", "mqtt.qos", "mqtt.client-id"), "mqtt: give a broker (--mqtt mqtt://host:1883)")
	case len(m.Subscribe) == 0 && len(m.Publish) == 0:
		p.add("mqtt.brokers", "mqtt: give a topic filter to subscribe to (--mqtt-subscribe 'scooter/#') or a topic to publish (--mqtt-publish 'light.>')")
	}
	switch {
	case (m.CertFile == "") != (m.KeyFile == ""):
		p.add(p.first("mqtt.tls.cert", "mqtt.tls.key"), "mqtt: a client certificate needs its key, and a key its certificate")
	case (m.CAFile != "" || m.CertFile != "") && len(m.Brokers) > 0 && !slices.ContainsFunc(m.Brokers, func(b string) bool { return strings.HasPrefix(b, "mqtts://") }):
		p.add("mqtt.brokers", "mqtt: TLS settings need an mqtts:// broker (mqtt:// is plain TCP)")
	}
	switch {
	case m.QoS > 2:
		p.add("mqtt.qos", "mqtt: QoS %d: want 0, 1 or 2", m.QoS)
	case m.QoS == 0:
		m.QoS = 1
	}
	switch m.NonJSON {
	case "":
		m.NonJSON = "wrap"
	case "wrap", "refuse":
	default:
		p.add("mqtt.non-json", "mqtt: non-json %q: want wrap or refuse", m.NonJSON)
	}
	for _, b := range m.Brokers {
		if _, err := mqtt.ParseBroker(b); err != nil {
			p.err("mqtt.brokers", err)
		}
	}
	for _, r := range m.Publish {
		if strings.ContainsAny(r.Topic, "/+#") {
			hint := ""
			if pat, err := mqtt.Pattern(r.Topic); err == nil {
				hint = fmt.Sprintf(" (%s)", pat)
			}
			p.add("mqtt.publish", "mqtt: publish %q: a publish route is a ruled topic pattern, not an MQTT filter: dots and * and > instead of /, + and #%s", r.Topic, hint)
		} else if _, err := rules.ParsePattern(r.Topic); err != nil {
			p.add("mqtt.publish", "mqtt: publish %q: %v", r.Topic, err)
		}
		if r.QoS > 2 {
			p.add("mqtt.publish", "mqtt: publish %q: QoS %d: want 0, 1 or 2", r.Topic, r.QoS)
		}
		if r.AtMostOnce && r.QoS != 0 {
			p.add("mqtt.publish", "mqtt: publish %q: at-most-once is for QoS 0 routes; QoS %d promises the message arrives", r.Topic, r.QoS)
		}
	}
	if m.ClientID == "" {
		host, _ := os.Hostname()
		m.ClientID = "ruled-" + host
	}
}

// Client is the MQTT client's config (host/mqtt) from these settings,
// decoding with dec, keeping its outbox in outbox and logging to log. It
// reads the TLS files, and names the one it cannot use.
func (m *MQTT) Client(dec *bus.Decoder, outbox mqtt.Hasher, log mqtt.Logger) (mqtt.Config, error) {
	if dec == nil {
		dec = &bus.Decoder{}
	}
	var subs []mqtt.Subscription
	qos := m.QoS
	if m.AtMostOnce {
		qos = 0
	}
	for _, f := range m.Subscribe {
		subs = append(subs, mqtt.Subscription{Filter: f, QoS: qos})
	}
	var routes []mqtt.Route
	for _, r := range m.Publish {
		routes = append(routes, mqtt.Route{Pattern: rules.Pattern(r.Topic), QoS: r.QoS, Retain: r.Retain, AtMostOnce: r.AtMostOnce})
	}
	c := mqtt.Config{Brokers: m.Brokers, ClientID: m.ClientID, PublishClientID: m.PublishClientID, Username: m.Username, Password: m.Password,
		KeepAlive: m.KeepAlive, SessionExpiry: m.SessionExpiry, Subscribe: subs, WrapNonJSON: m.NonJSON == "wrap",
		Publish: routes, Outbox: outbox, OutboxLimit: m.OutboxLimit, Share: m.Share, Log: log,
		// Its own decoder: a device's payload does not name the event.
		Decoder: &bus.Decoder{MaxSize: dec.MaxSize, Now: dec.Now, IDField: cmp.Or(m.IDField, bus.NoID)}}
	if m.CAFile == "" && m.CertFile == "" {
		return c, nil
	}
	c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	if m.CAFile != "" {
		pem, err := os.ReadFile(m.CAFile)
		if err != nil {
			return c, fmt.Errorf("mqtt: ca: %w", err)
		}
		c.TLS.RootCAs = x509.NewCertPool()
		if !c.TLS.RootCAs.AppendCertsFromPEM(pem) {
			return c, fmt.Errorf("mqtt: ca %s: no PEM certificate in it", m.CAFile)
		}
	}
	if m.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(m.CertFile, m.KeyFile)
		if err != nil {
			return c, fmt.Errorf("mqtt: client certificate: %w", err)
		}
		c.TLS.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// CompileCacheBytes is CompileCacheMB as wasm.Config.CacheMaxBytes takes
// it: 0 the default, -1 no bound, else bytes.
func (c *Config) CompileCacheBytes() int64 {
	if c.CompileCacheMB <= 0 {
		return c.CompileCacheMB
	}
	return c.CompileCacheMB << 20
}
