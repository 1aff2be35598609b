package config

// The config file (--config): its shape is every flag, plus the
// per-plugin grants and limits flags cannot express well. It is read into
// a Config before the flags are applied, so flags win.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/outbound"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/regular"
)

// fileConfig is the config file's shape: every flag, plus the per-plugin
// grants and limits flags cannot express well.
type fileConfig struct {
	Rules        string                      `yaml:"rules"`
	Plugins      string                      `yaml:"plugins"`
	Data         string                      `yaml:"data"`
	Redis        string                      `yaml:"redis"`
	Shards       int                         `yaml:"shards"`
	HTTP         string                      `yaml:"http"`
	TLSCert      string                      `yaml:"tls-cert"`
	TLSKey       string                      `yaml:"tls-key"`
	TokensFile   string                      `yaml:"tokens-file"`
	ReplayWindow string                      `yaml:"replay-window"`
	StoreWait    string                      `yaml:"store-wait"`
	RulesRefresh string                      `yaml:"rules-refresh"`
	ExecLog      *fileExecLog                `yaml:"exec-log"`
	ReplayClock  string                      `yaml:"replay-clock"`
	Workers      int                         `yaml:"workers"`
	MemoryLimit  int64                       `yaml:"memory-limit-mb"`
	CompileCache int64                       `yaml:"compile-cache-mb"`
	StepOutput   int                         `yaml:"max-step-output-kb"`
	Queue        int                         `yaml:"queue"`
	Limits       fileLimits                  `yaml:"limits"`
	Plugin       map[string]filePluginConfig `yaml:"plugin"`
	MQTT         *fileMQTT                   `yaml:"mqtt"`
}

// fileMQTT is the mqtt section: a broker as a source of events.
type fileMQTT struct {
	Brokers       []string `yaml:"brokers"`
	ClientID      string   `yaml:"client-id"`
	Username      string   `yaml:"username"`
	Password      string   `yaml:"password"`
	KeepAlive     string   `yaml:"keep-alive"`
	SessionExpiry string   `yaml:"session-expiry"`
	Subscribe     []string `yaml:"subscribe"`
	QoS           *byte    `yaml:"qos"` // absent: 1; 0: at most once
	NonJSON       string   `yaml:"non-json"`
	Publish       []struct {
		Topic  string `yaml:"topic"`
		QoS    *byte  `yaml:"qos"` // absent: 1
		Retain bool   `yaml:"retain"`
	} `yaml:"publish"`
	OutboxLimit int    `yaml:"outbox-limit"`
	Share       string `yaml:"share-group"`
	TLS         struct {
		CA   string `yaml:"ca"`
		Cert string `yaml:"cert"`
		Key  string `yaml:"key"`
	} `yaml:"tls"`
}

// fileExecLog is the execution log's section: off, or its bounds.
type fileExecLog struct {
	Off   bool  `yaml:"off"`
	Runs  int   `yaml:"runs"`
	Keep  int   `yaml:"keep"`
	MaxMB int64 `yaml:"max-mb"`
	// ValueKB bounds each value a node keeps (runlog.Options.Value).
	ValueKB int `yaml:"value-kb"`
}

type filePluginConfig struct {
	Grant      []string `yaml:"grant"`
	fileLimits `yaml:",inline"`
	HTTP       struct {
		Hosts       []string `yaml:"hosts"`
		Private     []string `yaml:"private"`
		MaxRequest  int      `yaml:"max-request"`
		MaxResponse int      `yaml:"max-response"`
	} `yaml:"http"`
}

type fileLimits struct {
	Timeout     string `yaml:"timeout"`
	InitTimeout string `yaml:"init-timeout"`
	MemoryPages uint32 `yaml:"memory-pages"`
	StackKB     int    `yaml:"stack-kb"`
	Fuel        int64  `yaml:"fuel"`
	Instances   int    `yaml:"instances"`
	IdleTimeout string `yaml:"idle-timeout"` // "never" keeps instances
}

func (l fileLimits) limits(where string) (wasm.Limits, error) {
	out := wasm.Limits{MemoryPages: l.MemoryPages, StackBytes: l.StackKB << 10, Fuel: l.Fuel, Instances: l.Instances}
	for _, d := range []struct {
		name, v string
		to      *time.Duration
	}{{"timeout", l.Timeout, &out.Timeout}, {"init-timeout", l.InitTimeout, &out.InitTimeout},
		{"idle-timeout", l.IdleTimeout, &out.IdleTimeout}} {
		if d.v == "" {
			continue
		}
		if d.name == "idle-timeout" && d.v == "never" {
			*d.to = -1
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil {
			return out, fmt.Errorf("%s: %s: %w", where, d.name, err)
		}
		*d.to = v
	}
	return out, nil
}

// Load reads a YAML config file into c; flags given on the
// command line are applied after it by the caller, so they win. Unknown keys
// are errors.
func Load(path string, c *Config) error {
	b, err := regular.ReadFile(path, 1<<20)
	if err != nil {
		return fmt.Errorf("daemon: config: %w", err)
	}
	var f fileConfig
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && err != io.EOF {
		return fmt.Errorf("daemon: config %s: %w", path, err)
	}
	c.RulesDir, c.PluginsDir, c.DataDir, c.RedisURL, c.HTTPAddr = f.Rules, f.Plugins, f.Data, f.Redis, f.HTTP
	c.TLSCert, c.TLSKey = f.TLSCert, f.TLSKey
	c.TokensFile = f.TokensFile
	c.ReplayClock, c.Workers, c.QueueCapacity, c.Shards = f.ReplayClock, f.Workers, f.Queue, f.Shards
	c.MemoryLimitMB, c.CompileCacheMB = f.MemoryLimit, f.CompileCache
	c.MaxStepOutput = f.StepOutput << 10
	if f.ReplayWindow != "" {
		if c.ReplayWindow, err = time.ParseDuration(f.ReplayWindow); err != nil {
			return fmt.Errorf("daemon: config %s: replay-window: %w", path, err)
		}
	}
	if f.RulesRefresh != "" {
		if c.RulesRefresh, err = time.ParseDuration(f.RulesRefresh); err != nil {
			return fmt.Errorf("daemon: config %s: rules-refresh: %w", path, err)
		}
	}
	if e := f.ExecLog; e != nil {
		if e.Runs < 0 || e.Keep < 0 || e.MaxMB < 0 || e.ValueKB < 0 {
			return fmt.Errorf("daemon: config %s: exec-log: runs, keep, max-mb and value-kb must not be negative", path)
		}
		c.ExecLog.Value = e.ValueKB << 10
		c.NoExecLog = e.Off
		c.ExecLog.Retention = runlog.Retention{Runs: e.Runs, Keep: e.Keep, Bytes: e.MaxMB << 20}
	}
	if f.StoreWait != "" {
		if c.StoreWait, err = time.ParseDuration(f.StoreWait); err != nil {
			return fmt.Errorf("daemon: config %s: store-wait: %w", path, err)
		}
	}
	if c.Limits, err = f.Limits.limits(path + ": limits"); err != nil {
		return fmt.Errorf("daemon: config %w", err)
	}
	if m := f.MQTT; m != nil {
		c.MQTT = &MQTT{Brokers: m.Brokers, ClientID: m.ClientID, Username: m.Username, Password: m.Password,
			Subscribe: m.Subscribe, NonJSON: m.NonJSON, OutboxLimit: m.OutboxLimit, Share: m.Share,
			CAFile: m.TLS.CA, CertFile: m.TLS.Cert, KeyFile: m.TLS.Key}
		if m.QoS != nil {
			c.MQTT.QoS, c.MQTT.AtMostOnce = *m.QoS, *m.QoS == 0
		}
		for _, r := range m.Publish {
			qos := byte(1)
			if r.QoS != nil {
				qos = *r.QoS
			}
			c.MQTT.Publish = append(c.MQTT.Publish, MQTTRoute{Topic: r.Topic, QoS: qos, Retain: r.Retain})
		}
		for _, d := range []struct {
			name, v string
			to      *time.Duration
		}{{"keep-alive", m.KeepAlive, &c.MQTT.KeepAlive}, {"session-expiry", m.SessionExpiry, &c.MQTT.SessionExpiry}} {
			if d.v == "" {
				continue
			}
			if *d.to, err = time.ParseDuration(d.v); err != nil {
				return fmt.Errorf("daemon: config %s: mqtt: %s: %w", path, d.name, err)
			}
		}
	}
	c.Plugins = map[string]PluginConfig{}
	for name, p := range f.Plugin {
		pc := PluginConfig{}
		for _, g := range p.Grant {
			pc.Grant = append(pc.Grant, abi.Capability(g))
		}
		if pc.Limits, err = p.fileLimits.limits(path + ": plugin " + name); err != nil {
			return fmt.Errorf("daemon: config %w", err)
		}
		pc.HTTP = outbound.Policy{Hosts: p.HTTP.Hosts, Private: p.HTTP.Private, MaxRequest: p.HTTP.MaxRequest, MaxResponse: p.HTTP.MaxResponse}
		c.Plugins[name] = pc
	}
	return nil
}

// ParseHTTPAllow reads one --http-allow (private: --http-allow-private)
// flag, "plugin=host[,host]", into the plugin's HTTP policy.
func (c *Config) ParseHTTPAllow(s string, private bool) error {
	name, hosts, ok := strings.Cut(s, "=")
	if !ok || name == "" || hosts == "" {
		return fmt.Errorf("%q: want plugin=host[,host] (host: api.example.com, *.example.com, 192.168.1.20:8123)", s)
	}
	if c.Plugins == nil {
		c.Plugins = map[string]PluginConfig{}
	}
	pc := c.Plugins[name]
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if private {
			pc.HTTP.Private = append(pc.HTTP.Private, h)
		} else {
			pc.HTTP.Hosts = append(pc.HTTP.Hosts, h)
		}
	}
	c.Plugins[name] = pc
	return nil
}

// ParseGrant reads a --grant flag, "plugin=cap,cap", into c.
func (c *Config) ParseGrant(s string) error {
	name, caps, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("--grant %q: want plugin=capability[,capability]", s)
	}
	if c.Plugins == nil {
		c.Plugins = map[string]PluginConfig{}
	}
	pc := c.Plugins[name]
	for _, cp := range strings.Split(caps, ",") {
		if cp = strings.TrimSpace(cp); cp != "" {
			pc.Grant = append(pc.Grant, abi.Capability(cp))
		}
	}
	c.Plugins[name] = pc
	return nil
}
