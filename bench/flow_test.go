package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/ruled-dev/ruled/internal/mqtttest"
)

// TestFlowAgainstNodeRED runs one flow on ruled and on Node-RED 4.1, on
// the same mosquitto and machine, in interleaved rounds (issue 39's
// headline comparison): MQTT in on sensor/+/temp (QoS 1), a condition
// (temp > 30), MQTT out on alert/<device>/temp (QoS 1). Each round starts
// each engine afresh and measures
//
//   - saturated: flowMessages messages published as fast as a device with
//     64 in flight can (half of them hot), the broker queueing what the
//     engine has not taken; alerts/s until the last alert, and the engine
//     process's CPU time (user+system) per message;
//   - latency: 1,000 hot messages a second for five seconds; the time from
//     a publish to its alert at a listener, p50 and p99;
//   - the engine's resident memory idle and at its peak.
//
// Both run as a user would start them: ruled with its defaults (one
// worker on two cores, the embedded store, the execution log on, the
// outbox), Node-RED with its (an mqtt in, a switch, a change, an mqtt out
// node). They do not promise the same: Node-RED acknowledges a message
// when it arrives and keeps nothing, ruled when its run is queued, and
// it writes each alert to its outbox (an fsync) before sending it.
//
// RULED_PERF=1 runs it (make bench-nodered; make bench). Node-RED comes
// from npm into .build/nodered the first time (RULED_NODERED=DIR for
// another installation); without npm it skips, saying so. It measures
// and prints the ratios; it does not judge.
func TestFlowAgainstNodeRED(t *testing.T) {
	if os.Getenv("RULED_PERF") == "" {
		t.Skip("RULED_PERF=1 runs the performance measurements")
	}
	red := nodeRED(t)
	ruled := buildRuled(t)
	rounds := envInt("RULED_FLOW_ROUNDS", 3)
	messages := envInt("RULED_FLOW_MESSAGES", 40000)
	broker := mqtttest.Start(t, "max_inflight_messages 1000", "max_queued_messages 0")
	var engines []flowEngine
	all := []flowEngine{ruledEngine{bin: ruled}, nodeREDEngine{red: red}}
	if os.Getenv("RULED_FLOW_LEAN") != "" {
		// ruled with every guarantee it can give up given up: its floor.
		all = append(all, ruledEngine{bin: ruled, lean: true})
	}
	for _, e := range all {
		if only := os.Getenv("RULED_FLOW_ENGINE"); only == "" || only == e.name() {
			engines = append(engines, e)
		}
	}
	got := map[string][]flowResult{}
	for r := 1; r <= rounds; r++ {
		for _, e := range engines {
			res := runFlow(t, broker, e, r, messages)
			t.Logf("flow round %d %-8s saturated: %6.0f alerts/s, CPU %5.1f µs/msg, lost %d | latency at 1,000/s: p50 %v p99 %v | RSS idle %d MiB, peak %d MiB",
				r, e.name(), res.alertsPerSec, res.cpuPerMsg, res.lost, res.p50, res.p99, res.idleRSS>>20, res.peakRSS>>20)
			got[e.name()] = append(got[e.name()], res)
		}
	}
	if len(engines) < 2 {
		return
	}
	med := func(name string, f func(flowResult) float64) float64 {
		var v []float64
		for _, r := range got[name] {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rate := func(r flowResult) float64 { return r.alertsPerSec }
	cpu := func(r flowResult) float64 { return r.cpuPerMsg }
	p99 := func(r flowResult) float64 { return float64(r.p99) }
	t.Logf("flow medians: ruled %.0f alerts/s %.1f µs CPU/msg p99 %v; Node-RED %.0f alerts/s %.1f µs CPU/msg p99 %v",
		med("ruled", rate), med("ruled", cpu), time.Duration(med("ruled", p99)),
		med("node-red", rate), med("node-red", cpu), time.Duration(med("node-red", p99)))
	t.Logf("flow ratios ruled/Node-RED: alerts/s %.2f× (target ≥ 1.5×), CPU per message %.2f× (target ≤ 0.5×)",
		med("ruled", rate)/med("node-red", rate), med("ruled", cpu)/med("node-red", cpu))
	if len(got["ruled-lean"]) > 0 {
		t.Logf("flow floor (ruled-lean: QoS 0 in and out, at-most-once, no execution log, no latency histograms) %.0f alerts/s %.1f µs CPU/msg p99 %v; ratios to Node-RED: alerts/s %.2f×, CPU per message %.2f×",
			med("ruled-lean", rate), med("ruled-lean", cpu), time.Duration(med("ruled-lean", p99)),
			med("ruled-lean", rate)/med("node-red", rate), med("ruled-lean", cpu)/med("node-red", cpu))
	}
}

// flowResult is one engine's figures in one round.
type flowResult struct {
	alertsPerSec     float64
	cpuPerMsg        float64 // µs
	lost             int
	p50, p99         time.Duration
	idleRSS, peakRSS int64
}

// flowEngine starts one engine on the broker, subscribed to sensor/+/temp
// and publishing alerts; the returned command is its process.
type flowEngine interface {
	name() string
	start(t *testing.T, brokerURL, dir string, round int) *exec.Cmd
}

// runFlow starts e, waits until an alert comes back, and measures.
func runFlow(t *testing.T, b *mqtttest.Broker, e flowEngine, round, messages int) flowResult {
	dir := t.TempDir()
	cmd := e.start(t, b.URL(), dir, round)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	l := listen(t, b, fmt.Sprintf("flow-listener-%s-%d", e.name(), round))
	dev := b.Device(t)
	ctx := context.Background()
	// Ready: a probe's alert came back. Until the engine has subscribed,
	// the broker keeps no probe for it.
	deadline := time.Now().Add(90 * time.Second)
	for l.probes.Load() == 0 {
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(dir, "engine.log"))
			t.Fatalf("%s: no alert within 90 s\n%s", e.name(), out)
		}
		dev.Publish(ctx, &paho.Publish{Topic: "sensor/probe/temp", QoS: 1, Payload: []byte(`{"device":"probe","temp":99,"sent":0}`)})
		time.Sleep(250 * time.Millisecond)
	}
	// Warm up (Node-RED's JIT, ruled's heap), then let both settle.
	publishFlow(t, dev, messages/4)
	l.waitQuiet(2 * time.Second)
	idle := rss(cmd.Process.Pid, "VmRSS")

	l.reset()
	cpu0 := cpuTicks(cmd.Process.Pid)
	start := time.Now()
	publishFlow(t, dev, messages)
	want := messages / 2
	last := l.waitFor(want, 20*time.Second)
	cpu1 := cpuTicks(cmd.Process.Pid)
	res := flowResult{lost: want - int(l.alerts.Load()), idleRSS: idle}
	res.alertsPerSec = float64(l.alerts.Load()) / last.Sub(start).Seconds()
	res.cpuPerMsg = float64(cpu1-cpu0) * 1e6 / float64(clockTicks) / float64(messages)
	if res.lost > 0 {
		out, _ := os.ReadFile(filepath.Join(dir, "engine.log"))
		t.Logf("%s lost %d alerts; its log's end:\n%s", e.name(), res.lost, out[max(0, len(out)-4000):])
	}

	l.reset()
	l.keepLatency.Store(true)
	const rate, seconds = 1000, 5
	tick := time.NewTicker(time.Second / rate)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range rate * seconds {
		<-tick.C
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := fmt.Appendf(nil, `{"device":"d%d","temp":35,"sent":%d}`, i%100, time.Now().UnixNano())
			dev.Publish(ctx, &paho.Publish{Topic: fmt.Sprintf("sensor/d%d/temp", i%100), QoS: 1, Payload: p})
		}()
	}
	tick.Stop()
	wg.Wait()
	l.waitFor(rate*seconds, 20*time.Second)
	lat := l.latencies()
	if len(lat) > 0 {
		slices.Sort(lat)
		res.p50, res.p99 = lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)*99/100].Round(10*time.Microsecond)
	}
	res.peakRSS = rss(cmd.Process.Pid, "VmHWM")
	return res
}

// publishFlow publishes n messages on sensor/d<i%100>/temp, 64 in flight,
// every second one hot (temp 35) and the others not (25).
func publishFlow(t *testing.T, dev *autopaho.ConnectionManager, n int) {
	ctx := context.Background()
	next := make(chan int, 64)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				temp := 25
				if i%2 == 1 {
					temp = 35
				}
				p := fmt.Appendf(nil, `{"device":"d%d","temp":%d,"sent":0}`, i%100, temp)
				if _, err := dev.Publish(ctx, &paho.Publish{Topic: fmt.Sprintf("sensor/d%d/temp", i%100), QoS: 1, Payload: p}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// alertListener counts the alerts on alert/#, probes apart, and keeps
// each alert's latency when asked to.
type alertListener struct {
	alerts, probes atomic.Int64
	lastAt         atomic.Int64 // unix ns of the newest alert
	keepLatency    atomic.Bool
	mu             sync.Mutex
	lat            []time.Duration
}

func listen(t *testing.T, b *mqtttest.Broker, id string) *alertListener {
	l := &alertListener{}
	u, _ := url.Parse(b.URL())
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{}, 1)
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30,
		CleanStartOnInitialConnection: true,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			if _, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "alert/#", QoS: 1}}}); err == nil {
				subscribed <- struct{}{}
			}
		},
		ClientConfig: paho.ClientConfig{ClientID: id,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				now := time.Now()
				if pr.Packet.Topic == "alert/probe/temp" {
					l.probes.Add(1)
					return true, nil
				}
				if l.keepLatency.Load() {
					var m struct{ Sent int64 }
					if json.Unmarshal(pr.Packet.Payload, &m) == nil && m.Sent > 0 {
						l.mu.Lock()
						l.lat = append(l.lat, now.Sub(time.Unix(0, m.Sent)))
						l.mu.Unlock()
					}
				}
				l.alerts.Add(1)
				l.lastAt.Store(now.UnixNano())
				return true, nil
			}}}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-cm.Done() })
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the alert listener never subscribed")
	}
	return l
}

func (l *alertListener) reset() {
	l.alerts.Store(0)
	l.mu.Lock()
	l.lat = nil
	l.mu.Unlock()
}

func (l *alertListener) latencies() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lat)
}

// waitFor waits until n alerts came, or none came for quiet; it returns
// the time of the newest.
func (l *alertListener) waitFor(n int, quiet time.Duration) time.Time {
	seen, since := int64(-1), time.Now()
	for l.alerts.Load() < int64(n) {
		if c := l.alerts.Load(); c != seen {
			seen, since = c, time.Now()
		} else if time.Since(since) > quiet {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Unix(0, l.lastAt.Load())
}

// waitQuiet waits until no alert came for d.
func (l *alertListener) waitQuiet(d time.Duration) {
	for {
		c := l.alerts.Load()
		time.Sleep(d)
		if l.alerts.Load() == c {
			return
		}
	}
}

// ruledEngine is bin/ruled on the flow's rule, with its defaults; lean,
// with what an operator may give up given up (RULED_FLOW_LEAN=1): QoS 0
// in (nothing journaled) and out (at-most-once: no outbox write), no
// execution log, no latency histograms — the floor of what the flow
// costs in ruled, the sandboxed plugin call and the MQTT client included.
type ruledEngine struct {
	bin  string
	lean bool
}

func (e ruledEngine) name() string {
	if e.lean {
		return "ruled-lean"
	}
	return "ruled"
}

const flowRule = `- id: hot
  on: sensor.*.temp
  when: temp > 30
  key: device
  mode: queue # every hot message an alert, each device's in order
  max: 1000
  steps:
    - name: alert
      do: publish.publish
      with:
        topic: "alert.{{device}}.temp"
        payload: {device: "{{device}}", temp: "{{temp}}", sent: "{{sent}}"}
`

func (e ruledEngine) start(t *testing.T, brokerURL, dir string, round int) *exec.Cmd {
	for _, d := range []string{"rules", "plugins"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	writeFile(t, filepath.Join(dir, "rules", "flow.yaml"), flowRule)
	for _, p := range []string{"expr", "publish"} {
		wasm, err := os.ReadFile(filepath.Join("..", "plugins", "build", p+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "plugins", p+".wasm"), string(wasm))
	}
	route := "{topic: alert.>, qos: 1}"
	if e.lean {
		route = "{topic: alert.>, qos: 0, at-most-once: true}"
	}
	writeFile(t, filepath.Join(dir, "ruled.yaml"), fmt.Sprintf(`rules: %[1]s/rules
plugins: %[1]s/plugins
data: %[1]s/data
mqtt:
  brokers: [%[2]s]
  client-id: ruled-flow-%[3]d
  session-expiry: 1s # gone with the round: the broker queues nothing for it in the next ones
  subscribe: [sensor/+/temp]
  publish: [%[4]s]
plugin:
  publish: {grant: [publish]}
`, dir, brokerURL, round, route))
	args := []string{"run", "--config", filepath.Join(dir, "ruled.yaml")}
	if e.lean {
		args = append(args, "--mqtt-qos", "0", "--exec-log=false", "--latency-metrics=false")
	}
	return startLogged(t, dir, e.bin, args...)
}

// nodeREDEngine is Node-RED on the same flow, as its editor writes it.
type nodeREDEngine struct{ red string }

func (nodeREDEngine) name() string { return "node-red" }

func (e nodeREDEngine) start(t *testing.T, brokerURL, dir string, round int) *exec.Cmd {
	u, _ := url.Parse(brokerURL)
	flows := fmt.Sprintf(`[
 {"id":"tab","type":"tab","label":"flow"},
 {"id":"broker","type":"mqtt-broker","broker":%q,"port":%q,"clientid":"node-red-flow-%d","autoConnect":true,"usetls":false,
  "protocolVersion":"4","keepalive":"60","cleansession":true,"birthTopic":"","closeTopic":"","willTopic":""},
 {"id":"in","type":"mqtt in","z":"tab","topic":"sensor/+/temp","qos":"1","datatype":"json","broker":"broker","nl":false,"rap":true,"rh":0,"inputs":0,"wires":[["hot"]]},
 {"id":"hot","type":"switch","z":"tab","property":"payload.temp","propertyType":"msg","rules":[{"t":"gt","v":"30","vt":"num"}],"checkall":"true","repair":false,"outputs":1,"wires":[["topic"]]},
 {"id":"topic","type":"change","z":"tab","rules":[{"t":"change","p":"topic","pt":"msg","from":"sensor/","fromt":"str","to":"alert/","tot":"str"}],"wires":[["out"]]},
 {"id":"out","type":"mqtt out","z":"tab","topic":"","qos":"1","retain":"false","broker":"broker","wires":[]}
]`, u.Hostname(), u.Port(), round)
	writeFile(t, filepath.Join(dir, "flows.json"), flows)
	writeFile(t, filepath.Join(dir, "settings.js"), fmt.Sprintf(`module.exports = {
  uiHost: "127.0.0.1", uiPort: 0, flowFile: "flows.json", userDir: %q,
  httpAdminRoot: false, httpNodeRoot: false, credentialSecret: false,
  logging: {console: {level: "warn", metrics: false, audit: false}},
};
`, dir))
	return startLogged(t, dir, "node", e.red, "--settings", filepath.Join(dir, "settings.js"), "--userDir", dir)
}

// startLogged starts name with args, its output in dir/engine.log.
func startLogged(t *testing.T, dir, name string, args ...string) *exec.Cmd {
	log, err := os.Create(filepath.Join(dir, "engine.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// nodeRED is the path of Node-RED's red.js: RULED_NODERED's, or one npm
// installs into .build/nodered.
func nodeRED(t *testing.T) string {
	dir := os.Getenv("RULED_NODERED")
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join("..", ".build", "nodered"))
	}
	red := filepath.Join(dir, "node_modules", "node-red", "red.js")
	if _, err := os.Stat(red); err == nil {
		return red
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is missing: no Node-RED to compare with (apt install npm)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is missing: no Node-RED to compare with (apt install nodejs)")
	}
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--omit=dev", "--prefix", dir, "node-red@4.1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm could not install Node-RED (%v): no comparison\n%s", err, out)
	}
	return red
}

// buildRuled builds cmd/ruled into the test's directory.
func buildRuled(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "ruled")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ruled")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ruled: %v\n%s", err, out)
	}
	return bin
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times.
const clockTicks = 100

// cpuTicks is pid's user and system time, in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime is field 14, the 12th after the name
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

// rss is a size line of /proc/PID/status (VmRSS, VmHWM), in bytes.
func rss(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func writeFile(t *testing.T, path, body string) {
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
