package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of masters (no replicas) on loopback, each a
// Server started with Config.Cluster, joined with redis-cli --cluster
// create. It is killed when the test ends.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts masters servers (at least 3, Redis Cluster's minimum),
// joins them, and waits until every node reports the cluster ok and every
// slot served.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	if masters < 3 {
		t.Fatalf("redistest: a cluster needs at least 3 masters, not %d", masters)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: redis-cli not found (CI=true; it comes with redis-server's package): %v", err)
		}
		t.Skipf("redistest: redis-cli not found, skipping: %v", err)
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range masters {
		s := StartWith(t, Config{Cluster: true})
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(readyTimeout)
	for _, s := range c.Nodes {
		for {
			info, err := command(s.Addr(), "CLUSTER INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: node %s never reported the cluster ok: %v\n%s", s.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// URL names every node in go-redis's cluster URL form:
// redis://first?addr=second&addr=third.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	u := "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// clusterPort picks a free port whose cluster bus port (10000 higher) is
// free and valid too.
func clusterPort() (int, error) {
	for range 50 {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if port+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no port with a free cluster bus port in 50 tries")
}

// command sends one inline command and returns its reply's text (a bulk
// string's contents, or a status line).
func command(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "$") {
		return strings.TrimSpace(line), nil
	}
	var n int
	if _, err := fmt.Sscanf(line, "$%d", &n); err != nil || n < 0 {
		return "", fmt.Errorf("reply %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
