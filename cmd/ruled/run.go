package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/config"
	"github.com/ruled-dev/ruled/host/daemon"
)

const runUsage = `Usage: ruled run --rules DIR --plugins DIR --data DIR [flags]
       ruled run --redis URL --data DIR [--shards N] [flags]   (rules and plugins from ruled deploy)

Runs the daemon: loads the plugins and rules, replays the steps that were
waiting when it last stopped, and serves events from the bus, the HTTP API
(POST /v1/events) and --events. SIGTERM or SIGINT stop it; durable steps
waiting then fire after the next start.

Flags:
`

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), runUsage); fs.PrintDefaults() }
	var cfg daemon.Config
	var grants, mqttBrokers, mqttSubs, mqttPubs, httpAllow, httpPrivate multi
	configFile := fs.String("config", "", "a YAML config file (flags given here override it)")
	rulesDir := fs.String("rules", "", "directory of rule files (*.yaml); none, with --redis: the rules ruled deploy put there")
	pluginsDir := fs.String("plugins", "", "directory of plugins (*.wasm); none, with --redis: the plugins ruled deploy put there")
	dataDir := fs.String("data", os.Getenv("RULED_DATA"), "data directory: embedded store, compilation cache, API socket (default $RULED_DATA)")
	redisURL := fs.String("redis", "", "put the bus and pending records on Redis: redis://host:port/db")
	shards := fs.Int("shards", 0, "with --redis: be one member of a fleet sharing the work in this many shards (the same on every member)")
	httpAddr := fs.String("http", "", "also serve the API on this TCP address (non-loopback needs $RULED_TOKEN)")
	tlsCert := fs.String("tls-cert", "", "serve the TCP API over TLS with this certificate (PEM; with --tls-key)")
	tokensFile := fs.String("tokens-file", "", "named API tokens, a line each: NAME TOKEN (mode 600); each command names the token that sent it")
	tlsKey := fs.String("tls-key", "", "the TLS certificate's private key (PEM)")
	httpRate := fs.Float64("http-rate", 0, "requests per second each client may make to the TCP API (default 50, burst 100)")
	window := fs.Duration("replay-window", 0, "drop waiting steps more than this past due at start (default 1h)")
	rulesRefresh := fs.Duration("rules-refresh", 0, "read the rules directory again this often whatever else happened (default 1m; -1s: never)")
	execLog := fs.Bool("exec-log", true, "keep the execution log (ruled log ls|tree)")
	latency := fs.Bool("latency-metrics", true, "observe plugin-call and step latency histograms for /metrics")
	logRuns := fs.Int("log-runs", 0, "runs the execution log keeps (default 5000)")
	logKeep := fs.Int("log-keep", 0, "newest runs per rule per outcome kept beyond --log-runs (default 5)")
	logValueKB := fs.Int("log-value-kb", 0, "the largest event, step input or output and condition values in KiB a run's log node keeps; a larger one is only measured (default 4)")
	logMB := fs.Int64("log-max-mb", 0, "the execution log's size cap in MiB, hard (default 64)")
	cacheMB := fs.Int64("compile-cache-mb", 0, "bound the compilation cache in the data directory, in MiB: the oldest compiled code goes first (default 64; -1 no bound)")
	outKB := fs.Int("max-step-output-kb", 0, "the largest output in KiB a step may return for its run's later steps (steps.<name>); a larger one fails the step (default 64)")
	memMB := fs.Int64("memory-limit-mb", 0, "a soft limit on the daemon's Go memory in MiB: the GC works harder near it (default none, or GOMEMLIMIT)")
	storeWait := fs.Duration("store-wait", 0, "at start, retry a store that does not answer (a Redis coming up) this long (default 1m)")
	clock := fs.String("replay-clock", "", "when to trust the clock for replay: now, or after-last-write (default now)")
	events := fs.String("events", "", "read NDJSON events from this file (- for stdin) until its end")
	workers := fs.Int("workers", 0, "workers running steps (default: CPUs - 1, at least 1)")
	fs.Var(&mqttBrokers, "mqtt", "connect to this MQTT broker: `mqtt://host:1883` or mqtts:// (repeatable; with --mqtt-subscribe or --mqtt-publish)")
	fs.Var(&mqttSubs, "mqtt-subscribe", "an MQTT topic `filter` to take events from, at QoS 1: scooter/+/telemetry becomes scooter.*.telemetry (repeatable)")
	fs.Var(&mqttPubs, "mqtt-publish", "send what steps publish on this ruled topic `pattern` to the broker, at QoS 1: light.> goes to light/… (repeatable)")
	mqttClient := fs.String("mqtt-client-id", "", "the MQTT session's client id, the same across restarts (default ruled-<hostname>)")
	mqttUser := fs.String("mqtt-username", "", "the MQTT username (the password: $RULED_MQTT_PASSWORD)")
	mqttCA := fs.String("mqtt-ca", "", "a PEM `file` of the CA that signed the mqtts:// broker's certificate (default: the system's)")
	mqttCert := fs.String("mqtt-cert", "", "a PEM client certificate `file` to present to the mqtts:// broker (with --mqtt-key)")
	mqttKey := fs.String("mqtt-key", "", "the client certificate's private key `file` (PEM)")
	mqttKeepAlive := fs.Duration("mqtt-keep-alive", 0, "the MQTT keep-alive (default 30s)")
	mqttExpiry := fs.Duration("mqtt-session-expiry", 0, "how long the broker keeps the session, and what it holds for it, while ruled is away (default 24h)")
	fs.Var(&grants, "grant", "grant capabilities to a plugin: `plugin=cap[,cap]` (repeatable; publish, kv, fire, http)")
	fs.Var(&httpAllow, "http-allow", "hosts a plugin granted http may send requests to: `plugin=host[,host]` (api.example.com, *.example.com; repeatable)")
	fs.Var(&httpPrivate, "http-allow-private", "hosts a plugin may reach on a private, loopback or link-local address, by name: `plugin=host[:port][,host]` (repeatable)")
	level := fs.String("log-level", "info", "log level: trace, debug, info, warn, error")
	logJSON := fs.Bool("log-json", false, "log as JSON")
	interp := fs.Bool("interpreter", false, "run plugins on wazero's interpreter")
	watch := fs.Bool("watch", true, "reload plugins and rules when their files change")
	debounce := fs.Duration("reload-debounce", 0, "wait this long after a file's last change before reloading (default 250ms)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("run takes no arguments, got %q", pos))
	}
	if *configFile != "" {
		if err := config.Load(*configFile, &cfg); err != nil {
			return err
		}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.RulesDir, *rulesDir)
	set(&cfg.PluginsDir, *pluginsDir)
	set(&cfg.DataDir, *dataDir)
	set(&cfg.RedisURL, *redisURL)
	set(&cfg.HTTPAddr, *httpAddr)
	set(&cfg.TLSCert, *tlsCert)
	set(&cfg.TokensFile, *tokensFile)
	set(&cfg.TLSKey, *tlsKey)
	set(&cfg.ReplayClock, *clock)
	if *window > 0 {
		cfg.ReplayWindow = *window
	}
	if *rulesRefresh != 0 {
		cfg.RulesRefresh = *rulesRefresh
	}
	if !*execLog {
		cfg.NoExecLog = true
	}
	if !*latency {
		cfg.NoLatencyMetrics = true
	}
	if *logRuns > 0 {
		cfg.ExecLog.Retention.Runs = *logRuns
	}
	if *logKeep > 0 {
		cfg.ExecLog.Retention.Keep = *logKeep
	}
	if *logValueKB > 0 {
		cfg.ExecLog.Value = *logValueKB << 10
	}
	if *cacheMB != 0 {
		cfg.CompileCacheMB = *cacheMB
	}
	if *memMB > 0 {
		cfg.MemoryLimitMB = *memMB
	}
	if *outKB != 0 {
		cfg.MaxStepOutput = *outKB << 10
	}
	if cfg.MemoryLimitMB > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimitMB << 20)
	}
	if *logMB > 0 {
		cfg.ExecLog.Retention.Bytes = *logMB << 20
	}
	if *httpRate > 0 {
		cfg.HTTPRate, cfg.HTTPBurst = *httpRate, max(int(2**httpRate), 1)
	}
	if *storeWait > 0 {
		cfg.StoreWait = *storeWait
	}
	if *workers > 0 {
		cfg.Workers = *workers
	}
	if *shards > 0 {
		cfg.Shards = *shards
	}
	cfg.Interpreter = cfg.Interpreter || *interp
	cfg.Watch = *watch
	if *debounce > 0 {
		cfg.ReloadDebounce = *debounce
	}
	if len(mqttBrokers)+len(mqttSubs)+len(mqttPubs) > 0 || *mqttClient+*mqttUser+*mqttCA+*mqttCert+*mqttKey != "" ||
		*mqttKeepAlive+*mqttExpiry > 0 {
		if cfg.MQTT == nil {
			cfg.MQTT = &config.MQTT{}
		}
		m := cfg.MQTT
		m.Brokers = append(m.Brokers, mqttBrokers...)
		m.Subscribe = append(m.Subscribe, mqttSubs...)
		for _, p := range mqttPubs {
			m.Publish = append(m.Publish, config.MQTTRoute{Topic: p, QoS: 1})
		}
		set(&m.ClientID, *mqttClient)
		set(&m.Username, *mqttUser)
		set(&m.CAFile, *mqttCA)
		set(&m.CertFile, *mqttCert)
		set(&m.KeyFile, *mqttKey)
		if *mqttKeepAlive > 0 {
			m.KeepAlive = *mqttKeepAlive
		}
		if *mqttExpiry > 0 {
			m.SessionExpiry = *mqttExpiry
		}
	}
	for _, g := range grants {
		if err := cfg.ParseGrant(g); err != nil {
			return usageError(err.Error())
		}
	}
	for i, a := range append(httpAllow, httpPrivate...) {
		if err := cfg.ParseHTTPAllow(a, i >= len(httpAllow)); err != nil {
			return usageError("--http-allow " + err.Error())
		}
	}
	switch *events {
	case "":
	case "-":
		cfg.Events = stdin
	default:
		f, err := os.Open(*events)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Events = f
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "ruled", Output: logOutput(stderr), Level: hclog.LevelFromString(*level), JSONFormat: *logJSON})
	d, err := daemon.New(cfg, log)
	if err != nil {
		return usageError(err.Error())
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	st := d.Status()
	n := notifyReady(ctx, d, readyStatus(len(st.Rules), len(st.Plugins)), log)
	<-ctx.Done()
	n.stop()
	return d.Stop()
}
