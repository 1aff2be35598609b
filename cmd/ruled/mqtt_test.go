package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/ruled-dev/ruled/host/mqtt"
	"github.com/ruled-dev/ruled/internal/mqtttest"
)

// TestMQTTKill9: a device publishes 200 jobs over MQTT (QoS 1) to a ruled
// whose rule has a durable step; the process is killed with SIGKILL while
// it takes them, and a new one starts on the same data and MQTT session.
// Every job fires: what the first process acknowledged it had journaled or
// recorded, and what it had not acknowledged the broker delivers again.
// Repeats are allowed (at least once) and counted.
func TestMQTTKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const n = 200
	b := mqtttest.Start(t)
	rules, plugins := fixture(t, durableRules)
	data := t.TempDir()
	args := []string{"--rules", rules, "--plugins", plugins, "--mqtt", b.URL(), "--mqtt-subscribe", "job/#",
		"--mqtt-client-id", "ruled-kill9"}
	a := startRuled(t, data, args...)
	a.waitLog("mqtt: connected and subscribed", 1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dev := b.Device(t)
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := dev.Publish(ctx, &paho.Publish{Topic: "job/start", QoS: 1,
				Payload: []byte(fmt.Sprintf(`{"n":"m%d"}`, i))}); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	a.waitLogWithin("FIRST m", n/4, time.Minute)
	a.kill()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	dev.Disconnect(ctx)
	took := strings.Count(a.out.String(), "FIRST m")

	b2 := startRuled(t, data, args...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := fired(a.out.String(), b2.out.String())
		missing := 0
		for i := 1; i <= n; i++ {
			if got["m"+strconv.Itoa(i)] == 0 {
				missing++
			}
		}
		if missing == 0 {
			repeats := 0
			for _, c := range got {
				repeats += c - 1
			}
			t.Logf("%d jobs: the killed process started %d; all fired after the restart, %d repeats", n, took, repeats)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs never fired", missing, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const relayRules = `
- id: relay
  on: job.start
  mode: parallel
  max: 1000
  steps:
    - name: first
      do: log.log
      with: {message: "FIRST {{n}}"}
    - name: out
      after: 1s
      durable: true
      do: publish.publish
      with: {topic: "out.job", payload: {n: "{{n}}"}}
`

// TestMQTTRelayKill9: jobs in over MQTT, out over MQTT through a durable
// step, and a SIGKILL in the middle. Every job's message reaches the
// listener: what the killed process had published but the broker had not
// acknowledged, its outbox kept in the store and the next process sends;
// what waited in a durable step is replayed; what it had not taken the
// broker delivers again. Repeats (at least once) are counted: those that
// carry the same idempotency key are the outbox's, a consumer drops them.
func TestMQTTRelayKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const n = 200
	b := mqtttest.Start(t)
	l := b.Listen(t, "out/#")
	rules, plugins := fixture(t, relayRules, "publish")
	data := t.TempDir()
	args := []string{"--rules", rules, "--plugins", plugins, "--mqtt", b.URL(), "--mqtt-subscribe", "job/#",
		"--mqtt-publish", "out.>", "--mqtt-client-id", "ruled-relay", "--mqtt-session-expiry", "1h", "--grant", "publish=publish"}
	a := startRuled(t, data, args...)
	a.waitLog("mqtt: connected and subscribed", 1)
	for i := 1; i <= n; i++ {
		b.Publish(t, "job/start", fmt.Sprintf(`{"n":"m%d"}`, i))
		if i == n/2 {
			// Half in, and some of them out: kill it mid-stream.
			deadline := time.Now().Add(time.Minute)
			for len(l.Messages()) < n/8 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			a.kill()
		}
	}
	before := len(l.Messages())
	c := startRuled(t, data, args...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		byN, keys := map[string]int{}, map[string]int{}
		for _, m := range l.Messages() {
			byN[m.Payload]++
			keys[m.User[mqtt.PropKey]]++
		}
		var missing []string
		for i := 1; i <= n; i++ {
			if byN[fmt.Sprintf(`{"n":"m%d"}`, i)] == 0 {
				missing = append(missing, fmt.Sprintf("m%d", i))
			}
		}
		if len(missing) == 0 {
			repeats, sameKey := 0, 0
			for _, c := range byN {
				repeats += c - 1
			}
			for _, c := range keys {
				sameKey += c - 1
			}
			t.Logf("%d jobs: %d out before the kill; all out after the restart, %d repeats (%d of them under one idempotency key)",
				n, before, repeats, sameKey)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs never came out (%d before the kill): %s\nthe killed process:\n%s\nthe next:\n%s\nits metrics:\n%s\nthe broker:\n%s",
				len(missing), n, before, strings.Join(missing, " "), a.out.String(), c.out.String(), c.metricLines("ruled_mqtt", "ruled_pending", "ruled_runs"), b.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHomeExample: the home example as a user runs it — `ruled run
// --config examples/home/ruled.yaml --mqtt mqtt://127.0.0.1:PORT` — with a
// door sensor played by mosquitto_pub: the hall light's command reaches the
// broker, and the webhook reaches a local server. The one change to the
// example is the webhook's URL (ntfy.sh → the local server, allowed with
// --http-allow-private): this machine has no internet.
func TestHomeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	pub, err := exec.LookPath("mosquitto_pub")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("mosquitto_pub not found (CI=true; .ci/tools.sh installs mosquitto-clients)")
		}
		t.Skip("mosquitto_pub not installed")
	}
	b := mqtttest.Start(t)
	light := b.Listen(t, "zigbee2mqtt/+/set")
	var mu sync.Mutex
	var hooks []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooks = append(hooks, r.Method+" "+r.URL.Path+" "+r.Header.Get("Title")+" "+string(body))
		mu.Unlock()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	src, err := os.ReadFile("../../examples/home/rules/home.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, plugins := fixture(t, strings.ReplaceAll(string(src), "https://ntfy.sh/", srv.URL+"/"), "publish", "http", "expr")
	startRuled(t, t.TempDir(), "--config", "../../examples/home/ruled.yaml", "--rules", rules, "--plugins", plugins,
		"--mqtt", b.URL(), "--http-allow-private", "http="+u.Host).waitLog("mqtt: connected and subscribed", 1)
	host, port, _ := net.SplitHostPort(b.Addr)
	if out, err := exec.Command(pub, "-h", host, "-p", port, "-q", "1", "-t", "zigbee2mqtt/front_door",
		"-m", `{"contact":false,"battery":97}`).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub: %v\n%s", err, out)
	}
	got := light.Wait(1)
	if len(got) != 1 || got[0].Topic != "zigbee2mqtt/hall_light/set" || got[0].Payload != `{"state":"ON"}` {
		t.Fatalf("the light got %+v", got)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(hooks)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooks) != 1 || hooks[0] != "POST /ruled-home-example Front door The front door opened (battery 97%)." {
		t.Errorf("the webhook got %q", hooks)
	}
}
