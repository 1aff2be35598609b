package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/mqtttest"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// backpressureRules: one rule whose step keeps the only worker busy, one
// with a durable step (its events are journaled first), both triggered by
// every event.
const backpressureRules = `
- id: slow
  on: job
  mode: parallel
  max: 100000
  steps:
    - do: gozoo.busy
      with: {ms: 1}
- id: kept
  on: job
  mode: parallel
  max: 100000
  steps:
    - name: later
      after: 1h
      durable: true
      do: log.log
      with: {message: "later {{n}}"}
`

func backpressureConfig(t *testing.T) Config {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), backpressureRules)
	return Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: withZoo(t, pluginsDir(t)),
		DataDir: filepath.Join(dir, "data"), Workers: 1, QueueCapacity: 4,
		Plugins: map[string]PluginConfig{"gozoo": {Limits: wasm.Limits{Timeout: time.Minute, Fuel: -1}}}}
}

// jobLines is n job events, one a line.
func jobLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"topic":"job","id":"e%d","n":%d}`+"\n", i, i)
	}
	return b.String()
}

// waitRan waits until the slow rule completed n runs and the durable one
// started n (its runs wait an hour), none refused by the pool.
func waitRan(t *testing.T, d *testDaemon, n int) {
	t.Helper()
	// Not eventually's 20 s: one worker runs these under -race beside the
	// other packages' tests.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if d.eng.Runner().RuleStats("slow").Completed == uint64(n) && d.eng.Runner().RuleStats("kept").Started == uint64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs of slow done and %d of kept started; want %d each", d.eng.Runner().RuleStats("slow").Completed,
				d.eng.Runner().RuleStats("kept").Started, n)
		}
	}
	if r := d.eng.Pool().Refused(); r != 0 {
		t.Errorf("the pool refused %d triggers", r)
	}
}

// TestEventsFileWaitsForRoom: --events has no client to tell "busy": with
// one worker and a queue of four, a file of 300 events is read to its end,
// waiting for room, and every event runs both its rules. (It stopped at the
// first full queue: "accepted=1110 ... the worker queue is full".)
func TestEventsFileWaitsForRoom(t *testing.T) {
	const n = 300
	cfg := backpressureConfig(t)
	cfg.Events = strings.NewReader(jobLines(n))
	d := startDaemon(t, cfg)
	select {
	case <-d.EventsDone():
	case <-time.After(2 * time.Minute):
		t.Fatal("the events file was not read to its end")
	}
	if !strings.Contains(d.logs.String(), fmt.Sprintf("accepted=%d rejected=0", n)) {
		t.Fatalf("events input did not take every line:\n%s", d.logs.String())
	}
	waitRan(t, d, n)
	if st := d.Status(); st.Journal.Busy != 0 {
		t.Errorf("%d events refused busy from a file", st.Journal.Busy)
	}
}

// TestRedisBusWaitsForRoom: an event published straight to the Redis bus
// has no client either: the subscription waits for room instead of letting
// the pool refuse its triggers.
func TestRedisBusWaitsForRoom(t *testing.T) {
	const n = 200
	cfg := backpressureConfig(t)
	srv := redistest.Start(t)
	cfg.RedisURL = srv.URL()
	d := startDaemon(t, cfg)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { client.Close() })
	rb := bus.NewRedis(client, bus.RedisConfig{})
	var dec bus.Decoder
	for _, line := range strings.Split(strings.TrimSpace(jobLines(n)), "\n") {
		e, err := dec.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := rb.Publish(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	waitRan(t, d, n)
}

// TestRedisRestartRunsWhatItAccepts: after a Redis restart, while this
// daemon's bus subscription is not back yet, another subscriber's presence
// once let ingest answer 202 for events that then sat in the journal until
// the next start. Now an accepted event is run by this process: ingest and
// /readyz refuse while the subscription is down, and a journaled event
// lost in the gap is dispatched once the subscription is back.
func TestRedisRestartRunsWhatItAccepts(t *testing.T) {
	cfg := backpressureConfig(t)
	cfg.Workers, cfg.QueueCapacity = 2, 10000
	srv := redistest.Start(t)
	cfg.RedisURL = srv.URL()
	// backpressureRules: every event journaled for kept (its durable rule).
	d := startDaemon(t, cfg)
	other := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { other.Close() })
	watcher := other.Subscribe(context.Background(), bus.RedisChannel) // "any other client" on the bus
	t.Cleanup(func() { watcher.Close() })
	if _, err := watcher.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	client := socketClient(cfg.DataDir)
	accepted, notReady := 0, 0
	post := func(i int) {
		resp, err := client.Post("http://ruled/v1/events", "application/json",
			strings.NewReader(fmt.Sprintf(`{"topic":"job","id":"e%d","n":%d}`, i, i)))
		if err != nil {
			return
		}
		resp.Body.Close()
		if resp.StatusCode == 202 {
			accepted++
		}
	}
	i := 0
	for ; i < 50; i++ {
		post(i)
	}
	srv.Restart()
	// The watcher's connection comes back on its own receive.
	go func() {
		for {
			if _, err := watcher.Receive(context.Background()); err != nil && strings.Contains(err.Error(), "closed") {
				return
			}
		}
	}()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); i++ {
		post(i)
		if resp, err := client.Get("http://ruled/readyz"); err == nil {
			if resp.StatusCode != 200 {
				notReady++
			}
			resp.Body.Close()
		}
		time.Sleep(time.Millisecond)
	}
	if accepted <= 50 {
		t.Fatalf("only %d events accepted around the restart", accepted)
	}
	eventually(t, fmt.Sprintf("a run for each of the %d accepted events, in this process", accepted), func() bool {
		return d.eng.Runner().RuleStats("kept").Started >= uint64(accepted)
	})
	if st := d.eng.Runner().RuleStats("kept"); st.Started != uint64(accepted) {
		t.Errorf("%d runs for %d accepted events", st.Started, accepted)
	}
	eventually(t, "the journal empties", func() bool { return d.Status().Journal.Open == 0 })
	t.Logf("%d accepted of %d posted; /readyz refused %d times around the restart", accepted, i, notReady)
}

// TestSlowRuleQueuesBehindItself: one worker, a rule whose plugin takes
// 300 ms a call and a healthy rule beside it. The rules share the worker
// by time, so the healthy rule's runs go as soon as the slow one has used
// more: all ten of them finish while the slow rule has finished at most
// two (in turns by key, each healthy run waited for a slow one: a healthy
// rule's p50 start delay was 25.6 s in outside testing). The slow rule's
// wait and worker time are in its status.
func TestSlowRuleQueuesBehindItself(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: slow
  on: job
  key: n
  mode: parallel
  max: 1000
  steps:
    - do: gozoo.busy
      with: {ms: 300}
- id: healthy
  on: ping
  mode: parallel
  max: 1000
  steps:
    - do: log.log
      with: {message: "pong {{n}}"}
`)
	d := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: withZoo(t, pluginsDir(t)),
		DataDir: filepath.Join(dir, "data"), Workers: 1, QueueCapacity: 1000,
		Plugins: map[string]PluginConfig{"gozoo": {Limits: wasm.Limits{Timeout: time.Minute, Fuel: -1}}}})
	for i := range 10 {
		d.send(t, fmt.Sprintf(`{"topic":"job","n":%d}`, i))
	}
	time.Sleep(50 * time.Millisecond) // the first slow job is on the worker
	for i := range 10 {
		d.send(t, fmt.Sprintf(`{"topic":"ping","n":%d}`, i))
	}
	eventually(t, "the healthy rule's ten runs", func() bool { return d.eng.Runner().RuleStats("healthy").Completed == 10 })
	if done := d.eng.Runner().RuleStats("slow").Completed; done > 2 {
		t.Errorf("the slow rule finished %d runs before the healthy rule's ten; want at most 2", done)
	}
	var slow, healthy status.RuleStatus
	for _, r := range d.Rules() {
		switch r.ID {
		case "slow":
			slow = r
		case "healthy":
			healthy = r
		}
	}
	if slow.Workers.Seconds < 0.2 || slow.Workers.Queued == 0 {
		t.Errorf("the slow rule's share %+v; want its worker time and its queued jobs shown", slow.Workers)
	}
	t.Logf("slow %+v, healthy %+v", slow.Workers, healthy.Workers)
}

// TestMQTTWaitsForRoom: an MQTT broker has no client to tell "busy"
// either: with one worker and a queue of four, 300 messages at QoS 1 all
// run both their rules — the source stops reading while the queue is
// full (the broker holds what follows) and no trigger is refused.
func TestMQTTWaitsForRoom(t *testing.T) {
	const n = 300
	b := mqtttest.Start(t)
	cfg := backpressureConfig(t)
	cfg.MQTT = &MQTT{Brokers: []string{b.URL()}, ClientID: "ruled-room", Subscribe: []string{"job"}}
	d := startDaemon(t, cfg)
	eventually(t, "subscribed", func() bool { return strings.Contains(d.logs.String(), "connected and subscribed") })
	b.Publish(t, "job", strings.Split(strings.TrimSpace(jobLines(n)), "\n")...)
	waitRan(t, d, n)
	// A group's messages are acknowledged once the group is taken, and
	// its runs may be done before that: wait for the count.
	eventually(t, "every message accepted", func() bool { return d.Status().MQTT.Accepted == n })
	if st := d.Status(); st.Journal.Busy != 0 || st.MQTT.Accepted != n || len(st.MQTT.Refused) != 0 {
		t.Errorf("journal %+v, mqtt %+v", st.Journal, st.MQTT)
	}
}
