package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/traces"
	"github.com/ruled-dev/ruled/host/trust"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm"
)

// Every setting of `ruled run` is declared once, in Settings: its key in
// the config file, its flag, its environment variable, its kind, its
// default as an operator reads it, a sentence, and where it lands in a
// Config. The config file's reader (Load), the environment's (ApplyEnv),
// the flags (Flags) and the reference page (Reference, docs/config.md) all
// walk this one table, so a setting cannot exist in one and not the
// others, and every error names the key — with the file and line for the
// config file — rather than a Go type.

// Kind is a setting's type.
type Kind int

const (
	String Kind = iota
	Int
	Float
	Bool
	Duration
	// List is a list of strings: a YAML list, a repeated flag, words of
	// the environment variable separated by spaces.
	List
	// Routes are MQTT publish routes: a YAML list of patterns or of
	// {topic, qos, retain}; a flag or the environment gives patterns, at
	// QoS 1.
	Routes
)

var (
	kindNames   = [...]string{"string", "integer", "number", "boolean", "duration", "list", "routes"}
	kindPhrases = [...]string{"a string", "a whole number", "a number", "true or false", "a duration such as 30s", "a list", "a list of routes"}
)

func (k Kind) String() string { return kindNames[k] }

// phrase is what a value of the kind is, after "want".
func (k Kind) phrase() string { return kindPhrases[k] }

// value is a setting's value once read, in the field its Kind says.
type value struct {
	s      string
	i      int64
	f      float64
	b      bool
	d      time.Duration
	list   []string
	routes []MQTTRoute
}

// Setting is one setting.
type Setting struct {
	// Key is its path in the config file, sections joined by dots
	// (exec-log.runs); a * segment stands for a name the file chooses
	// (plugin.*.grant: plugin: {expr: {grant: [...]}}).
	Key string
	// Flag is the flag of `ruled run`, "" for none (a secret, or a
	// plugin's limit). A flag of a * key takes name=value[,value].
	Flag string
	// Invert: the flag says the opposite of the key (--exec-log=false is
	// exec-log.off: true).
	Invert bool
	// FlagDoc is what an inverted flag does, in its own sense.
	FlagDoc string
	// Negative: a number below 0 means something (compile-cache-mb: -1,
	// no bound); elsewhere it is refused.
	Negative bool
	Kind     Kind
	Default  string // as the reference says it; "" none
	Doc      string
	set      func(c *Config, name string, v value) error
	// clear empties a list's value (for plugin name), so that a source
	// that gives it replaces what an earlier source gave — a flag's grant
	// narrows the file's, it does not add to it.
	clear func(c *Config, name string)
}

// Env is the setting's environment variable: RULED_ and its flag's name
// (or, without a flag, its key's), upper case, - and . as _. It takes
// what the flag takes; a list's words are separated by spaces.
func (s *Setting) Env() string {
	n := s.Flag
	if n == "" {
		n = s.Key
	}
	return "RULED_" + strings.NewReplacer("-", "_", ".", "_", "*", "NAME").Replace(strings.ToUpper(n))
}

// Settings are `ruled run`'s settings, in the reference's order.
var Settings = []*Setting{
	// Where things are.
	{Key: "rules", Flag: "rules", Kind: String, Doc: "the directory of rule files (*.yaml), reloaded when they change; none with redis: the rules ruled deploy put there",
		set: func(c *Config, _ string, v value) error { c.RulesDir = v.s; return nil }},
	{Key: "plugins", Flag: "plugins", Kind: String, Doc: "the directory of plugins (*.wasm), reloaded when they change; none with redis: ruled deploy's",
		set: func(c *Config, _ string, v value) error { c.PluginsDir = v.s; return nil }},
	{Key: "data", Flag: "data", Kind: String, Doc: "the data directory: the embedded store, the compilation cache, the API socket",
		set: func(c *Config, _ string, v value) error { c.DataDir = v.s; return nil }},
	{Key: "redis", Flag: "redis", Kind: String, Doc: "put the bus and the store on Redis: redis://host:port/db, or a cluster's redis://a?addr=b&addr=c",
		set: func(c *Config, _ string, v value) error { c.RedisURL = v.s; return nil }},
	{Key: "shards", Flag: "shards", Kind: Int, Doc: "with redis: be one member of a fleet sharing the work in this many shards (the same on every member)",
		set: func(c *Config, _ string, v value) error { c.Shards = int(v.i); return nil }},
	{Key: "events", Flag: "events", Kind: String, Doc: "read NDJSON events from this file (- for stdin) until its end",
		set: func(c *Config, _ string, v value) error { c.EventsFile = v.s; return nil }},

	// The API.
	{Key: "http", Flag: "http", Kind: String, Doc: "also serve the API, the console and /metrics on this TCP address (beyond loopback it needs a token)",
		set: func(c *Config, _ string, v value) error { c.HTTPAddr = v.s; return nil }},
	{Key: "token", Kind: String, Doc: "the API's bearer token, named default in what its commands leave (at least 16 characters); a secret: give it by the environment",
		set: func(c *Config, _ string, v value) error { c.Token = v.s; return nil }},
	{Key: "tokens-file", Flag: "tokens-file", Kind: String, Doc: "named API tokens, a line each: NAME TOKEN [SCOPES] (mode 600); scopes read, events, control, audit or all, comma-separated (none given: read); each command says which token sent it",
		set: func(c *Config, _ string, v value) error { c.TokensFile = v.s; return nil }},
	{Key: "tls-cert", Flag: "tls-cert", Kind: String, Doc: "serve the TCP API over TLS with this certificate (PEM; with tls-key)",
		set: func(c *Config, _ string, v value) error { c.TLSCert = v.s; return nil }},
	{Key: "tls-key", Flag: "tls-key", Kind: String, Doc: "the TLS certificate's private key (PEM)",
		set: func(c *Config, _ string, v value) error { c.TLSKey = v.s; return nil }},
	{Key: "http-rate", Flag: "http-rate", Kind: Float, Default: "50", Doc: "requests per second each client may make to the TCP API (burst: twice that)",
		set: func(c *Config, _ string, v value) error {
			if v.f <= 0 {
				return fmt.Errorf("want a rate above 0")
			}
			c.HTTPRate, c.HTTPBurst = v.f, max(int(2*v.f), 1)
			return nil
		}},
	{Key: "http-conns-per-address", Flag: "http-conns-per-address", Kind: Int, Default: "64", Doc: "connections one client address may hold of the TCP API's 256 (behind a proxy every client has the proxy's: raise it to 256)",
		set: func(c *Config, _ string, v value) error {
			if v.i < 1 || v.i > 256 {
				return fmt.Errorf("want 1 to 256")
			}
			c.HTTPConnsPerAddr = int(v.i)
			return nil
		}},

	// Runs and their waiting steps.
	{Key: "workers", Flag: "workers", Kind: Int, Default: "CPUs - 1, at least 1", Doc: "workers running conditions and steps",
		set: func(c *Config, _ string, v value) error { c.Workers = int(v.i); return nil }},
	{Key: "queue", Flag: "queue", Kind: Int, Default: "1024", Doc: "jobs waiting for a worker at most; past it ingest answers 503 and inputs wait",
		set: func(c *Config, _ string, v value) error { c.QueueCapacity = int(v.i); return nil }},
	{Key: "replay-window", Flag: "replay-window", Kind: Duration, Default: "1h", Doc: "at start, drop waiting steps more than this past due",
		set: func(c *Config, _ string, v value) error { c.ReplayWindow = v.d; return nil }},
	{Key: "replay-clock", Flag: "replay-clock", Kind: String, Default: "now", Doc: "when to trust the clock for replay: now, or after-last-write (a device without a real-time clock)",
		set: func(c *Config, _ string, v value) error { c.ReplayClock = v.s; return nil }},
	{Key: "store-wait", Flag: "store-wait", Kind: Duration, Default: "1m", Doc: "at start, retry a store that does not answer (a Redis coming up) this long",
		set: func(c *Config, _ string, v value) error { c.StoreWait = v.d; return nil }},
	{Key: "max-step-output-kb", Flag: "max-step-output-kb", Kind: Int, Default: "64", Doc: "the largest output in KiB a step may return for its run's later steps; a larger one fails the step",
		set: func(c *Config, _ string, v value) error { c.MaxStepOutput = int(v.i) << 10; return nil }},

	// Entities' states.
	{Key: "state.max-entities", Flag: "state-max-entities", Kind: Int, Negative: true, Default: "10000", Doc: "the most entities whose state is kept; a new one past it is refused, logged and counted (-1: keep no state)",
		set: func(c *Config, _ string, v value) error {
			if v.i < -1 {
				return fmt.Errorf("want a count of entities, or -1 for none")
			}
			c.State.MaxEntities = int(v.i)
			return nil
		}},
	{Key: "state.max-kb", Flag: "state-max-kb", Kind: Int, Default: "8192", Doc: "the most KiB the entities' states take together, each counted with 160 bytes of its own; past it a state is refused, logged and counted",
		set: func(c *Config, _ string, v value) error { c.State.MaxBytes = int(v.i) << 10; return nonNegative(v.i) }},
	{Key: "state.forget-after", Flag: "state-forget-after", Kind: Duration, Default: "24h", Doc: "a full state table forgets the entities not reported this long to make room for new ones",
		set: func(c *Config, _ string, v value) error { c.State.ForgetAfter = v.d; return nil }},
	{Key: "state.keys", Flag: "state-key", Kind: List, Doc: "topics that carry many entities, each with the field that names one: scooter.telemetry=vehicle makes scooter.telemetry/sc-42",
		clear: func(c *Config, _ string) { c.State.Keys = nil },
		set: func(c *Config, _ string, v value) error {
			for _, s := range v.list {
				k, err := state.ParseKeyRule(s)
				if err != nil {
					return err
				}
				c.State.Keys = append(c.State.Keys, k)
			}
			return nil
		}},

	// Where the daemon is: the sun's triggers and sun.<path>.
	{Key: "location.latitude", Flag: "latitude", Kind: Float, Doc: "where the daemon is, in degrees north (south negative), for the sun's triggers (on: {sun: sunset}) and sun.<path> in conditions; with longitude",
		set: func(c *Config, _ string, v value) error {
			c.Location.Latitude, c.Location.HasLatitude = v.f, true
			return nil
		}},
	{Key: "location.longitude", Flag: "longitude", Kind: Float, Doc: "where the daemon is, in degrees east (west negative); with latitude",
		set: func(c *Config, _ string, v value) error {
			c.Location.Longitude, c.Location.HasLongitude = v.f, true
			return nil
		}},
	{Key: "location.elevation", Flag: "elevation", Kind: Float, Default: "0", Doc: "metres the daemon's place stands above the land around it (a hilltop, a tower; not the height above sea level of a plateau): from higher up the sun rises earlier and sets later",
		set: func(c *Config, _ string, v value) error { c.Location.Elevation = v.f; return nil }},

	// What runs: signatures (host/trust, docs/security.md).
	{Key: "require-signatures", Flag: "require-signatures", Kind: List, Default: "none", Doc: "where a file must be signed by a trusted key to load: plugins, rules, deploy (true: all three); a file refused keeps the last good version serving",
		clear: func(c *Config, _ string) { c.Signatures.Require = nil },
		set: func(c *Config, _ string, v value) error {
			if _, err := trust.ParsePlaces(v.list); err != nil {
				return err
			}
			c.Signatures.Require = append(c.Signatures.Require, v.list...)
			return nil
		}},
	{Key: "trusted-keys", Flag: "trusted-key", Kind: List, Doc: "public keys whose signatures are trusted, as ruled keygen prints them (ed25519:<id>:<base64>); several for a rotation",
		clear: func(c *Config, _ string) { c.Signatures.Trusted = nil },
		set: func(c *Config, _ string, v value) error {
			for _, k := range v.list {
				if _, err := trust.ParsePublicKey(k); err != nil {
					return err
				}
			}
			c.Signatures.Trusted = append(c.Signatures.Trusted, v.list...)
			return nil
		}},
	{Key: "revoked-keys", Flag: "revoked-key", Kind: List, Doc: "ids of keys no longer trusted, even where trusted-keys still lists them: what they signed is refused, a waiting step on it dropped",
		clear: func(c *Config, _ string) { c.Signatures.Revoked = nil },
		set: func(c *Config, _ string, v value) error {
			c.Signatures.Revoked = append(c.Signatures.Revoked, v.list...)
			return nil
		}},

	{Key: "audit.max-entries", Flag: "audit-max-entries", Kind: Int, Default: "100000", Doc: "the audit trail keeps at most this many entries: commands, deploys, files refused; the oldest go first",
		set: func(c *Config, _ string, v value) error { c.Audit.MaxEntries = int(v.i); return nonNegative(v.i) }},
	{Key: "audit.max-age", Flag: "audit-max-age", Kind: Duration, Default: "8760h", Doc: "the audit trail forgets entries older than this",
		set: func(c *Config, _ string, v value) error { c.Audit.MaxAge = v.d; return nil }},

	// Reloads.
	{Key: "watch", Flag: "watch", Kind: Bool, Default: "true", Doc: "reload plugins and rules when their files change",
		set: func(c *Config, _ string, v value) error { c.Watch = v.b; return nil }},
	{Key: "reload-debounce", Flag: "reload-debounce", Kind: Duration, Default: "250ms", Doc: "wait this long after a file's last change before reloading",
		set: func(c *Config, _ string, v value) error { c.ReloadDebounce = v.d; return nil }},
	{Key: "rules-refresh", Flag: "rules-refresh", Kind: Duration, Default: "1m", Doc: "read the rules directory again this often whatever else happened (-1s: never)",
		set: func(c *Config, _ string, v value) error { c.RulesRefresh = v.d; return nil }},

	// Memory and plugins.
	{Key: "memory-limit-mb", Flag: "memory-limit-mb", Kind: Int, Default: "none, or GOMEMLIMIT", Doc: "a soft limit on the daemon's Go memory in MiB: the GC works harder near it (plugins' memory, bounded by their caps, is apart)",
		set: func(c *Config, _ string, v value) error { c.MemoryLimitMB = v.i; return nil }},
	{Key: "compile-cache-mb", Flag: "compile-cache-mb", Kind: Int, Negative: true, Default: "64", Doc: "bound the compilation cache in the data directory, in MiB: the oldest compiled code goes first (-1: no bound)",
		set: func(c *Config, _ string, v value) error { c.CompileCacheMB = v.i; return nil }},
	{Key: "interpreter", Flag: "interpreter", Kind: Bool, Doc: "run plugins on wazero's interpreter (slower; for a device that forbids writable executable memory)",
		set: func(c *Config, _ string, v value) error { c.Interpreter = v.b; return nil }},
	{Key: "plugin.*.grant", Flag: "grant", Kind: List, Doc: "the capabilities a plugin is granted: publish, kv, fire, http",
		clear: func(c *Config, name string) { c.plugin(name, func(p *PluginConfig) { p.Grant = nil }) },
		set: func(c *Config, name string, v value) error {
			for _, g := range v.list {
				if !isCapability(g) {
					return fmt.Errorf("unknown capability %q (want one of %v)", g, abi.Capabilities)
				}
			}
			return c.plugin(name, func(p *PluginConfig) {
				for _, g := range v.list {
					p.Grant = append(p.Grant, abi.Capability(g))
				}
			})
		}},
	{Key: "plugin.*.http.hosts", Flag: "http-allow", Kind: List, Doc: "hosts a plugin granted http may send requests to (api.example.com, *.example.com)",
		clear: func(c *Config, name string) { c.plugin(name, func(p *PluginConfig) { p.HTTP.Hosts = nil }) },
		set: func(c *Config, name string, v value) error {
			return c.plugin(name, func(p *PluginConfig) { p.HTTP.Hosts = append(p.HTTP.Hosts, v.list...) })
		}},
	{Key: "plugin.*.http.private", Flag: "http-allow-private", Kind: List, Doc: "hosts a plugin may reach on a private, loopback or link-local address, by name (host[:port])",
		clear: func(c *Config, name string) { c.plugin(name, func(p *PluginConfig) { p.HTTP.Private = nil }) },
		set: func(c *Config, name string, v value) error {
			return c.plugin(name, func(p *PluginConfig) { p.HTTP.Private = append(p.HTTP.Private, v.list...) })
		}},
	{Key: "plugin.*.http.max-request", Kind: Int, Default: "1 MiB", Doc: "the largest request body a plugin may send, in bytes",
		set: func(c *Config, name string, v value) error {
			return c.plugin(name, func(p *PluginConfig) { p.HTTP.MaxRequest = int(v.i) })
		}},
	{Key: "plugin.*.http.max-response", Kind: Int, Default: "1 MiB", Doc: "the largest response body a plugin may read, in bytes",
		set: func(c *Config, name string, v value) error {
			return c.plugin(name, func(p *PluginConfig) { p.HTTP.MaxResponse = int(v.i) })
		}},

	// The execution log.
	{Key: "exec-log.off", Flag: "exec-log", Invert: true, FlagDoc: "keep the execution log (ruled log ls|tree, the console's runs)", Kind: Bool, Default: "false", Doc: "keep no execution log (ruled log ls|tree, the console's runs)",
		set: func(c *Config, _ string, v value) error { c.NoExecLog = v.b; return nil }},
	{Key: "exec-log.runs", Flag: "log-runs", Kind: Int, Default: "5000", Doc: "runs the execution log keeps",
		set: func(c *Config, _ string, v value) error { c.ExecLog.Retention.Runs = int(v.i); return nonNegative(v.i) }},
	{Key: "exec-log.keep", Flag: "log-keep", Kind: Int, Default: "5", Doc: "newest runs per rule per outcome kept beyond exec-log.runs",
		set: func(c *Config, _ string, v value) error { c.ExecLog.Retention.Keep = int(v.i); return nonNegative(v.i) }},
	{Key: "exec-log.max-mb", Flag: "log-max-mb", Kind: Int, Default: "64", Doc: "the execution log's size cap in MiB, hard",
		set: func(c *Config, _ string, v value) error {
			c.ExecLog.Retention.Bytes = v.i << 20
			return nonNegative(v.i)
		}},
	{Key: "exec-log.value-kb", Flag: "log-value-kb", Kind: Int, Default: "4", Doc: "the largest event, step input or output and condition values in KiB a node keeps; a larger one is only measured",
		set: func(c *Config, _ string, v value) error { c.ExecLog.Value = int(v.i) << 10; return nonNegative(v.i) }},
	{Key: "otlp.endpoint", Flag: "otlp-endpoint", Kind: String, Doc: "send every run as a trace to this OpenTelemetry collector, over OTLP/HTTP (http://localhost:4318; the path /v1/traces unless the URL names one); empty: send none",
		set: func(c *Config, _ string, v value) error {
			c.Traces.Endpoint = v.s
			if v.s == "" {
				return nil
			}
			_, err := traces.CheckEndpoint(v.s)
			return err
		}},
	{Key: "otlp.headers", Flag: "otlp-headers", Kind: String, Doc: "headers sent to the collector with every request, as OTEL_EXPORTER_OTLP_HEADERS writes them: name=value pairs separated by commas, a value percent-encoded where it holds a comma or a percent sign (x-api-key=KEY,authorization=Bearer abc); an API key: put it in the config file, not on a command line others can read",
		set: func(c *Config, _ string, v value) error {
			hs, err := traces.ParseHeaders(v.s)
			c.Traces.Headers = hs
			return err
		}},
	{Key: "otlp.sample-ratio", Flag: "otlp-sample-ratio", Kind: Float, Default: "1", Doc: "the share of runs sent whose trigger came without a traceparent, 0 to 1, decided by trace id (a run goes whole or not at all); a run under a sender's trace follows its sampled flag",
		set: func(c *Config, _ string, v value) error {
			if !(v.f >= 0 && v.f <= 1) { // NaN too
				return fmt.Errorf("want 0 to 1")
			}
			c.Traces.Ratio = v.f
			return nil
		}},
	{Key: "otlp.compression", Flag: "otlp-compression", Kind: String, Default: "gzip", Doc: "gzip or none: none for a collector on the device or its network, where bytes are cheap and the device's CPU is not",
		set: func(c *Config, _ string, v value) error {
			switch v.s {
			case "gzip", "none":
				c.Traces.Uncompressed = v.s == "none"
				return nil
			}
			return fmt.Errorf("want gzip or none")
		}},
	{Key: "otlp.max-queue", Flag: "otlp-max-queue", Kind: Int, Default: "2048", Doc: "spans waiting to be sent; past it a span is dropped and counted (a collector that is down costs this much memory, no more)",
		set: func(c *Config, _ string, v value) error { c.Traces.MaxQueue = int(v.i); return atLeastOne(v.i) }},
	{Key: "otlp.max-batch", Flag: "otlp-max-batch", Kind: Int, Default: "512", Doc: "spans sent in one request at most; a batch goes when full or a second after its first span",
		set: func(c *Config, _ string, v value) error { c.Traces.MaxBatch = int(v.i); return atLeastOne(v.i) }},
	{Key: "otlp.timeout", Flag: "otlp-timeout", Kind: Duration, Default: "10s", Doc: "the longest one request to the collector may take; a failed one is tried again three times, then its spans are counted failed",
		set: func(c *Config, _ string, v value) error {
			if v.d < 100*time.Millisecond {
				return fmt.Errorf("want 100ms or more")
			}
			c.Traces.Timeout = v.d
			return nil
		}},
	{Key: "latency-metrics", Flag: "latency-metrics", Kind: Bool, Default: "true", Doc: "observe plugin-call and step latency histograms for /metrics",
		set: func(c *Config, _ string, v value) error { c.NoLatencyMetrics = !v.b; return nil }},

	// The daemon's own log.
	{Key: "log-level", Flag: "log-level", Kind: String, Default: "info", Doc: "the daemon's log level: trace, debug, info, warn, error",
		set: func(c *Config, _ string, v value) error {
			switch v.s {
			case "trace", "debug", "info", "warn", "error":
				c.LogLevel = v.s
				return nil
			}
			return fmt.Errorf("want trace, debug, info, warn or error, got %q", v.s)
		}},
	{Key: "log-json", Flag: "log-json", Kind: Bool, Doc: "log as JSON (with a priority journald reads when under systemd)",
		set: func(c *Config, _ string, v value) error { c.LogJSON = v.b; return nil }},

	// An MQTT broker.
	{Key: "mqtt.brokers", Flag: "mqtt", Kind: List, Doc: "the MQTT broker(s) to connect to: mqtt://host:1883 or mqtts://",
		clear: func(c *Config, _ string) { c.mqtt().Brokers = nil },
		set: func(c *Config, _ string, v value) error {
			c.mqtt().Brokers = append(c.mqtt().Brokers, v.list...)
			return nil
		}},
	{Key: "mqtt.subscribe", Flag: "mqtt-subscribe", Kind: List, Doc: "MQTT topic filters to take events from: scooter/+/telemetry becomes scooter.*.telemetry",
		clear: func(c *Config, _ string) { c.mqtt().Subscribe = nil },
		set: func(c *Config, _ string, v value) error {
			c.mqtt().Subscribe = append(c.mqtt().Subscribe, v.list...)
			return nil
		}},
	{Key: "mqtt.publish", Flag: "mqtt-publish", Kind: Routes,
		clear: func(c *Config, _ string) { c.mqtt().Publish = nil }, Doc: "ruled topic patterns whose events steps publish go to the broker (light.> goes to light/…): patterns, or {topic, qos, retain, at-most-once} (at-most-once: a QoS 0 route's messages kept in memory, not in the store)",
		set: func(c *Config, _ string, v value) error {
			c.mqtt().Publish = append(c.mqtt().Publish, v.routes...)
			return nil
		}},
	{Key: "mqtt.qos", Flag: "mqtt-qos", Kind: Int, Default: "1", Doc: "the subscriptions' QoS: 1 or 2 (each message acknowledged once accepted), or 0 (at most once)",
		set: func(c *Config, _ string, v value) error {
			if v.i > 2 {
				return fmt.Errorf("want 0, 1 or 2, got %d", v.i)
			}
			c.mqtt().QoS, c.mqtt().AtMostOnce = byte(v.i), v.i == 0
			return nil
		}},
	{Key: "mqtt.client-id", Flag: "mqtt-client-id", Kind: String, Default: "ruled-<hostname>", Doc: "the MQTT session's client id, the same across restarts",
		set: func(c *Config, _ string, v value) error { c.mqtt().ClientID = v.s; return nil }},
	{Key: "mqtt.publish-client-id", Flag: "mqtt-publish-client-id", Kind: String, Default: "<client-id>-out", Doc: "the client id of the connection that publishes what rules send, when ruled also subscribes: the broker's answers to it do not wait behind the messages it sends ruled",
		set: func(c *Config, _ string, v value) error { c.mqtt().PublishClientID = v.s; return nil }},
	{Key: "mqtt.username", Flag: "mqtt-username", Kind: String, Doc: "the MQTT username",
		set: func(c *Config, _ string, v value) error { c.mqtt().Username = v.s; return nil }},
	{Key: "mqtt.password", Kind: String, Doc: "the MQTT password; a secret: give it by the environment",
		set: func(c *Config, _ string, v value) error { c.mqtt().Password = v.s; return nil }},
	{Key: "mqtt.keep-alive", Flag: "mqtt-keep-alive", Kind: Duration, Default: "30s", Doc: "the MQTT keep-alive",
		set: func(c *Config, _ string, v value) error { c.mqtt().KeepAlive = v.d; return nil }},
	{Key: "mqtt.session-expiry", Flag: "mqtt-session-expiry", Kind: Duration, Default: "24h", Doc: "how long the broker keeps the session, and what it holds for it, while ruled is away",
		set: func(c *Config, _ string, v value) error { c.mqtt().SessionExpiry = v.d; return nil }},
	{Key: "mqtt.id-field", Flag: "mqtt-id-field", Kind: String, Doc: "the payload field (a path) whose string or number is a message's event id; none: every field is data and the event gets an id of its own",
		set: func(c *Config, _ string, v value) error { c.mqtt().IDField = v.s; return nil }},
	{Key: "mqtt.non-json", Flag: "mqtt-non-json", Kind: String, Default: "wrap", Doc: "a message that is not JSON (text, a number): wrap (as {topic, payload: its text}) or refuse; one that opens as JSON ({ or [) is held to the event decoder's rules, as over HTTP",
		set: func(c *Config, _ string, v value) error { c.mqtt().NonJSON = v.s; return nil }},
	{Key: "mqtt.outbox-limit", Flag: "mqtt-outbox-limit", Kind: Int, Default: "10000", Doc: "messages the outbox holds for the broker at most; past it a publish fails",
		set: func(c *Config, _ string, v value) error { c.mqtt().OutboxLimit = int(v.i); return nil }},
	{Key: "mqtt.share-group", Flag: "mqtt-share-group", Kind: String, Doc: "subscribe as this shared group ($share/<group>/…): a fleet's members split the messages",
		set: func(c *Config, _ string, v value) error { c.mqtt().Share = v.s; return nil }},
	{Key: "mqtt.tls.ca", Flag: "mqtt-ca", Kind: String, Default: "the system's", Doc: "a PEM file of the CA that signed the mqtts:// broker's certificate",
		set: func(c *Config, _ string, v value) error { c.mqtt().CAFile = v.s; return nil }},
	{Key: "mqtt.tls.cert", Flag: "mqtt-cert", Kind: String, Doc: "a PEM client certificate file to present to the mqtts:// broker (with mqtt.tls.key)",
		set: func(c *Config, _ string, v value) error { c.mqtt().CertFile = v.s; return nil }},
	{Key: "mqtt.tls.key", Flag: "mqtt-key", Kind: String, Doc: "the client certificate's private key file (PEM)",
		set: func(c *Config, _ string, v value) error { c.mqtt().KeyFile = v.s; return nil }},
}

// limitSettings are a plugin's limits: every plugin's under limits. (and
// --limit-<name>), one plugin's under plugin.<name>. (the file only: a
// flag for each limit of each plugin would be a wall).
func limitSettings() []*Setting {
	var out []*Setting
	for _, l := range []struct {
		key, def, doc string
		kind          Kind
		set           func(l *wasm.Limits, v value) error
	}{
		{"timeout", "1s", "deadline of a call", Duration, func(l *wasm.Limits, v value) error { l.Timeout = v.d; return nil }},
		{"init-timeout", "10s", "deadline of a module's start", Duration, func(l *wasm.Limits, v value) error { l.InitTimeout = v.d; return nil }},
		{"memory-pages", "512 (32 MiB)", "memory at most, in 64 KiB pages (at most 65536: 4 GiB)", Int, func(l *wasm.Limits, v value) error {
			if v.i > 65536 {
				return fmt.Errorf("%d pages is over WebAssembly's 65536 (4 GiB)", v.i)
			}
			l.MemoryPages = uint32(v.i)
			return nil
		}},
		{"stack-kb", "a quarter of its memory", "call stack at most, in KiB", Int, func(l *wasm.Limits, v value) error { l.StackBytes = int(v.i) << 10; return nil }},
		{"fuel", "from the deadline", "fuel (instructions, weighted) a call may burn at most (-1: unlimited, the deadline alone)", Int, func(l *wasm.Limits, v value) error { l.Fuel = v.i; return nil }},
		{"instances", "2", "instances at once", Int, func(l *wasm.Limits, v value) error { l.Instances = int(v.i); return nil }},
		{"idle-timeout", "1m", "time an idle instance is kept, but one (never: keep them)", Duration, func(l *wasm.Limits, v value) error { l.IdleTimeout = v.d; return nil }},
	} {
		l := l
		out = append(out,
			&Setting{Key: "limits." + l.key, Flag: "limit-" + l.key, Kind: l.kind, Negative: l.key == "fuel", Default: l.def, Doc: "every plugin: " + l.doc,
				set: func(c *Config, _ string, v value) error { return l.set(&c.Limits, v) }},
			&Setting{Key: "plugin.*." + l.key, Kind: l.kind, Negative: l.key == "fuel", Default: "limits." + l.key, Doc: "one plugin: " + l.doc,
				set: func(c *Config, name string, v value) error {
					var err error
					if perr := c.plugin(name, func(p *PluginConfig) { err = l.set(&p.Limits, v) }); perr != nil {
						return perr
					}
					return err
				}})
	}
	return out
}

func init() { Settings = append(Settings, limitSettings()...) }

// Lookup is the setting whose key matches key (a * segment matching any
// name), and that name.
func Lookup(key string) (*Setting, string, bool) {
	parts := strings.Split(key, ".")
	for _, s := range Settings {
		sp := strings.Split(s.Key, ".")
		if len(sp) != len(parts) {
			continue
		}
		name, ok := "", true
		for i := range sp {
			switch {
			case sp[i] == "*":
				name = parts[i]
			case sp[i] != parts[i]:
				ok = false
			}
		}
		if ok {
			return s, name, true
		}
	}
	return nil, "", false
}

// parse reads text (a flag's, the environment's, a YAML scalar's) as the
// setting's kind.
func (s *Setting) parse(text string) (value, error) {
	var v value
	var err error
	switch s.Kind {
	case String:
		v.s = text
	case Int:
		v.i, err = strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return v, fmt.Errorf("want a whole number, got %q", text)
		}
		if v.i < 0 && !s.Negative {
			return v, fmt.Errorf("must not be negative, got %d", v.i)
		}
	case Float:
		v.f, err = strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return v, fmt.Errorf("want a number, got %q", text)
		}
	case Bool:
		v.b, err = strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return v, fmt.Errorf("want true or false, got %q", text)
		}
	case Duration:
		t := strings.TrimSpace(text)
		if strings.HasSuffix(s.Key, "idle-timeout") && t == "never" {
			v.d = -1
			return v, nil
		}
		v.d, err = time.ParseDuration(t)
		if err != nil {
			return v, fmt.Errorf("want a duration such as 30s, 5m or 1h30m, got %q", text)
		}
	case List:
		v.list = strings.Fields(text)
	case Routes:
		for _, p := range strings.Fields(text) {
			v.routes = append(v.routes, MQTTRoute{Topic: p, QoS: 1})
		}
	}
	return v, nil
}

// given tracks, within one source (the file, the environment, the
// flags), the lists it has given: the first time, a list replaces what an
// earlier source said; after that, it adds (a repeated flag).
type given map[string]bool

// replaces clears s's list for name the first time this source gives it.
func (g given) replaces(c *Config, s *Setting, name string) {
	if g == nil || s.clear == nil || g[s.Key+"\x00"+name] { // nil: no source, only additions
		return
	}
	g[s.Key+"\x00"+name] = true
	s.clear(c, name)
}

// apply is the setting's value landed in c, for the plugin name of a *
// key.
func (s *Setting) apply(c *Config, name string, v value) error {
	if s.Invert {
		v.b = !v.b
	}
	return s.set(c, name, v)
}

// note records in c.Origins that where gave s (for the plugin name of a *
// key): Validate's errors name it.
func (c *Config) note(s *Setting, name, where string) {
	if c.Origins == nil {
		c.Origins = map[string]string{}
	}
	c.Origins[strings.Replace(s.Key, "*", name, 1)] = where
}

func nonNegative(n int64) error {
	if n < 0 {
		return fmt.Errorf("must not be negative, got %d", n)
	}
	return nil
}

func isCapability(s string) bool {
	for _, c := range abi.Capabilities {
		if string(c) == s {
			return true
		}
	}
	return false
}

// plugin changes plugin name's config.
func (c *Config) plugin(name string, f func(*PluginConfig)) error {
	if name == "" {
		return fmt.Errorf("no plugin named")
	}
	if c.Plugins == nil {
		c.Plugins = map[string]PluginConfig{}
	}
	p := c.Plugins[name]
	f(&p)
	c.Plugins[name] = p
	return nil
}

// mqtt is c's MQTT section, made when a setting of it is given.
func (c *Config) mqtt() *MQTT {
	if c.MQTT == nil {
		c.MQTT = &MQTT{}
	}
	return c.MQTT
}

// atLeastOne refuses a count below one.
func atLeastOne(n int64) error {
	if n < 1 {
		return fmt.Errorf("want 1 or more")
	}
	return nil
}
