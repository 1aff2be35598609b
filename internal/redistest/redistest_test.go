package redistest_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/redistest"
)

// do sends one command in RESP and returns its reply flattened to text
// (an array's elements joined by spaces, a nil as "(nil)"), so the test
// needs no client library.
func do(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	reply, err := readReply(bufio.NewReader(c))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return reply
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '$', '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "(nil)", nil
		}
		if line[0] == '$' {
			body := make([]byte, n+2)
			_, err := io.ReadFull(r, body)
			return string(body[:n]), err
		}
		elems := make([]string, n)
		for i := range elems {
			if elems[i], err = readReply(r); err != nil {
				return "", err
			}
		}
		return strings.Join(elems, " "), nil
	}
	return line, nil
}

func TestStart(t *testing.T) {
	s := redistest.Start(t)
	if got := do(t, s.Addr(), "PING"); got != "+PONG" {
		t.Fatalf("PING = %q; want +PONG", got)
	}
	if want := "redis://" + s.Addr(); s.URL() != want {
		t.Errorf("URL() = %q; want %q", s.URL(), want)
	}
	for _, kv := range [][2]string{{"appendonly", "no"}, {"save", ""}, {"bind", "127.0.0.1"}} {
		want := kv[0] + " " + kv[1]
		if got := do(t, s.Addr(), "CONFIG", "GET", kv[0]); got != want {
			t.Errorf("CONFIG GET %s = %q; want %q", kv[0], got, want)
		}
	}
}

func TestTwoServers(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("both servers on %s", a.Addr())
	}
	do(t, a.Addr(), "SET", "k", "a")
	if got := do(t, b.Addr(), "GET", "k"); got != "(nil)" {
		t.Errorf("GET k on the second server = %q; want $-1 (nil)", got)
	}
}

func TestRestart(t *testing.T) {
	tests := []struct {
		name       string
		persistent bool
		end        func(*redistest.Server)
		want       string
	}{
		{"in memory, stop", false, (*redistest.Server).Stop, "(nil)"},
		{"persistent, stop", true, (*redistest.Server).Stop, "v"},
		{"persistent, kill", true, (*redistest.Server).Kill, "v"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.StartWith(t, redistest.Config{Persistent: tc.persistent})
			addr := s.Addr()
			if tc.persistent {
				want := "appendfsync always"
				if got := do(t, addr, "CONFIG", "GET", "appendfsync"); got != want {
					t.Fatalf("CONFIG GET appendfsync = %q; want %q", got, want)
				}
			}
			if got := do(t, addr, "SET", "k", "v"); got != "+OK" {
				t.Fatalf("SET = %q", got)
			}
			tc.end(s)
			if s.Running() {
				t.Fatal("Running() after the server ended")
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Fatalf("%s still accepts connections after the server ended", addr)
			}
			s.Restart()
			if s.Addr() != addr {
				t.Fatalf("Addr() = %s after Restart; want %s", s.Addr(), addr)
			}
			if got := do(t, addr, "GET", "k"); got != tc.want {
				t.Errorf("GET k after restart = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestStopTwice(t *testing.T) {
	s := redistest.Start(t)
	s.Stop()
	s.Stop()
	s.Kill()
	if s.Running() {
		t.Fatal("Running() after Stop")
	}
}

func TestExtraArgs(t *testing.T) {
	s := redistest.StartWith(t, redistest.Config{Args: []string{"--notify-keyspace-events", "KEA"}})
	got := do(t, s.Addr(), "CONFIG", "GET", "notify-keyspace-events")
	if !strings.HasPrefix(got, "notify-keyspace-events ") || !strings.Contains(got, "K") {
		t.Fatalf("CONFIG GET notify-keyspace-events = %q; want the flags given", got)
	}
}

// TestMissingServer: without redis-server on PATH a test skips, unless CI=true.
func TestMissingServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	var skipped bool
	t.Run("start", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		redistest.Start(t)
		t.Error("Start returned without redis-server on PATH")
	})
	if !skipped {
		t.Error("Start did not skip the test without redis-server on PATH")
	}
}

// TestCluster: three masters that know each other and serve every slot;
// a key whose slot another node serves is redirected there.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	if len(c.Addrs()) != 3 || !strings.Contains(c.URL(), "?addr=") {
		t.Fatalf("addrs %v url %s", c.Addrs(), c.URL())
	}
	for _, a := range c.Addrs() {
		info := do(t, a, "CLUSTER", "INFO")
		if !strings.Contains(info, "cluster_known_nodes:3") || !strings.Contains(info, "cluster_slots_ok:16384") {
			t.Errorf("%s: %s", a, info)
		}
	}
	moved := 0
	for i := range 20 {
		if strings.HasPrefix(do(t, c.Addrs()[0], "SET", fmt.Sprint("k", i), "v"), "-MOVED") {
			moved++
		}
	}
	if moved == 0 || moved == 20 {
		t.Errorf("%d of 20 keys moved from the first node; want some, not all", moved)
	}
}
