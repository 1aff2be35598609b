// Package mqtttest starts a real mosquitto broker on a loopback port the
// test picks, for the tests of the MQTT adapter, and kills it when the test
// ends. Under CI=true a missing mosquitto is a failure (.ci/tools.sh
// installs it); elsewhere the test skips. It owns the broker's process,
// stopped by the test's cleanup, and publishes as a device would (Publish).
// Tests only.
package mqtttest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// Broker is one mosquitto process.
type Broker struct {
	Addr string // host:port
	cmd  *exec.Cmd
	conf string
	bin  string
}

// URL is the broker's mqtt:// URL.
func (b *Broker) URL() string { return "mqtt://" + b.Addr }

// Start starts a broker: anonymous clients allowed, sessions kept in
// memory for as long as it runs.
func Start(t testing.TB) *Broker {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr == nil {
			bin, err = "/usr/sbin/mosquitto", nil
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mqtttest: mosquitto not found (CI=true; .ci/tools.sh installs it): %v", err)
		}
		t.Skipf("mqtttest: mosquitto not found, skipping: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	body := fmt.Sprintf("listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\n", port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Broker{Addr: addr, conf: conf, bin: bin}
	b.start(t)
	t.Cleanup(b.Kill)
	return b
}

func (b *Broker) start(t testing.TB) {
	t.Helper()
	b.cmd = exec.Command(b.bin, "-c", b.conf)
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b.Kill()
			t.Fatalf("mqtttest: mosquitto never listened on %s: %v", b.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the broker at once (its sessions go with it).
func (b *Broker) Kill() {
	if b.cmd != nil && b.cmd.Process != nil {
		b.cmd.Process.Kill()
		b.cmd.Wait()
		b.cmd = nil
	}
}

// Restart kills the broker and starts it again on the same port.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	b.Kill()
	b.start(t)
}

// Publish sends payloads to topic at QoS 1 from a client of its own (a
// device), each acknowledged by the broker before it returns.
func (b *Broker) Publish(t testing.TB, topic string, payloads ...string) {
	t.Helper()
	u, _ := url.Parse(b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 10,
		ClientConfig: paho.ClientConfig{ClientID: "mqtttest-device"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Disconnect(ctx)
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		if _, err := cm.Publish(ctx, &paho.Publish{Topic: topic, Payload: []byte(p), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
}
