package mqtt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ruled-dev/ruled/internal/testkit"
)

// countingConn counts its writes, and fails them from failAt on (0: never).
type countingConn struct {
	net.Conn
	writes atomic.Int64
	failAt int64
}

var errBroken = errors.New("broken pipe")

func (c *countingConn) Write(b []byte) (int, error) {
	if n := c.writes.Add(1); c.failAt > 0 && n >= c.failAt {
		return 0, errBroken
	}
	return c.Conn.Write(b)
}

// pipe is a loopback TCP connection: the client end and the server end.
func pipe(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestGatheredWritesKeepPackets: packets written at once by many
// goroutines, each in two parts under the connection's lock as paho
// writes them, arrive whole, each writer's in its order, in fewer
// system calls than packets; Close sends what was unsent.
func TestGatheredWritesKeepPackets(t *testing.T) {
	const writers, each = 8, 500
	client, server := pipe(t)
	cc := &countingConn{Conn: client}
	c := newBufferedConn(cc, client)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Appendf(nil, "w%d:%d", w, i)
				c.Lock()
				c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(body))))
				c.Write(body)
				c.Unlock()
			}
		}()
	}
	got := make(chan map[int][]int, 1)
	go func() {
		r := bufio.NewReader(server)
		seen := map[int][]int{}
		for {
			var n uint16
			if err := binary.Read(r, binary.BigEndian, &n); err != nil {
				got <- seen
				return
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				t.Errorf("a packet cut short: %v", err)
				got <- seen
				return
			}
			var w, i int
			if _, err := fmt.Sscanf(string(body), "w%d:%d", &w, &i); err != nil {
				t.Errorf("a packet mixed with another: %q", body)
			}
			seen[w] = append(seen[w], i)
		}
	}()
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	seen := <-got
	for w := range writers {
		if len(seen[w]) != each {
			t.Fatalf("writer %d: %d packets arrived; want %d", w, len(seen[w]), each)
		}
		for i, n := range seen[w] {
			if n != i {
				t.Fatalf("writer %d: packet %d arrived as number %d", w, n, i)
			}
		}
	}
	if n := cc.writes.Load(); n >= writers*each {
		t.Errorf("%d packets in %d writes; want them gathered", writers*each, n)
	} else {
		t.Logf("%d packets (%d writes of paho's) in %d system calls", writers*each, 2*writers*each, n)
	}
}

// TestGatheredWriteFails: once a write fails, every later write fails
// with its error (paho drops the connection), and Close still returns.
func TestGatheredWriteFails(t *testing.T) {
	client, _ := pipe(t)
	c := newBufferedConn(&countingConn{Conn: client, failAt: 1}, client)
	defer c.Close()
	if _, err := c.Write([]byte("first")); err != nil {
		t.Fatalf("the first write, queued: %v", err)
	}
	testkit.Eventually(t, "the sender's write failed", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.err != nil
	})
	if _, err := c.Write([]byte("later")); !errors.Is(err, errBroken) {
		t.Fatalf("a write after the failure: %v; want %v", err, errBroken)
	}
	if _, err := c.Write(nil); !errors.Is(err, errBroken) {
		t.Errorf("and the next: %v", err)
	}
}
