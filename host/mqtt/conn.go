package mqtt

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
)

// buffered reports whether every broker is dialed over TCP or TLS, the
// connections dialBuffered makes (autopaho dials WebSockets itself, and
// everything through the proxy all_proxy names).
func buffered(urls []*url.URL) bool {
	if os.Getenv("all_proxy") != "" {
		return false
	}
	for _, u := range urls {
		switch strings.ToLower(u.Scheme) {
		case "mqtt", "tcp", "mqtts", "ssl", "tls":
		default:
			return false
		}
	}
	return true
}

// dialBuffered dials a broker over TCP, or TLS for mqtts, ssl and tls, and
// returns a bufferedConn: reads through a buffer, writes gathered.
func dialBuffered(tlsCfg *tls.Config, timeout time.Duration) func(context.Context, autopaho.ClientConfig, *url.URL) (net.Conn, error) {
	return func(ctx context.Context, _ autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		switch strings.ToLower(u.Scheme) {
		case "mqtts", "ssl", "tls":
			c, err := (&tls.Dialer{Config: tlsCfg}).DialContext(ctx, "tcp", u.Host)
			if err != nil {
				return nil, err
			}
			return newBufferedConn(c, c), nil // a TLS connection reads from its decrypted record already
		}
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		return newBufferedConn(c, bufio.NewReaderSize(c, 32<<10)), nil
	}
}

// maxUnsent is the most bytes a bufferedConn holds unsent: past it a
// packet's writer waits, as it would for a full socket buffer.
const maxUnsent = 1 << 20

// bufferedConn is a broker connection that spares paho its system calls.
//
// Reads go through a buffer: paho reads a packet's fixed header a byte at
// a time, a read system call each, and a profile of MQTT ingest at QoS 1
// put a fifth of the process's CPU in them.
//
// Writes are gathered: paho writes every packet on its own, a system call
// each — every acknowledgement of a message taken, every publish —, and a
// profile of the MQTT flow put 14% of the process's CPU in them (issue
// 39). A packet is appended to the unsent bytes, and a sender goroutine
// writes whatever has gathered, in order, in one call: what paho writes
// while the sender is in a system call goes out in the next. paho holds
// the connection's lock (Lock, a sync.Locker) across the parts of one
// packet, so no other packet falls between them.
//
// A failed write fails every later one (paho then drops the connection).
// Close sends what is unsent first, within a second, then closes: paho's
// DISCONNECT, written just before, reaches the broker.
//
// The sender goroutine is the connection's: Close stops it and waits for it.
type bufferedConn struct {
	net.Conn
	r io.Reader

	packet sync.Mutex // paho's Lock: one packet's writes together

	mu      sync.Mutex
	drained *sync.Cond // on mu: the sender took the unsent bytes
	unsent  []byte
	spare   []byte // the sender's last batch, reused
	err     error  // the first failed write's
	closed  bool

	kick chan struct{} // 1-buffered: there is something to send
	done chan struct{} // closed by Close
	gone chan struct{} // closed when the sender has ended
	once sync.Once
}

func newBufferedConn(c net.Conn, r io.Reader) *bufferedConn {
	b := &bufferedConn{Conn: c, r: r, kick: make(chan struct{}, 1), done: make(chan struct{}), gone: make(chan struct{})}
	b.drained = sync.NewCond(&b.mu)
	go b.send()
	return b
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// Lock and Unlock make it the sync.Locker paho holds while it writes a
// packet's parts.
func (c *bufferedConn) Lock()   { c.packet.Lock() }
func (c *bufferedConn) Unlock() { c.packet.Unlock() }

// Write queues b for the sender. It waits while maxUnsent bytes are
// unsent, and fails once a write has failed or the connection is closed.
func (c *bufferedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	for len(c.unsent) >= maxUnsent && c.err == nil && !c.closed {
		c.drained.Wait()
	}
	switch {
	case c.err != nil:
		err := c.err
		c.mu.Unlock()
		return 0, err
	case c.closed:
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	c.unsent = append(c.unsent, b...)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default: // the sender is already told
	}
	return len(b), nil
}

// send writes what gathered until Close, then what is left.
func (c *bufferedConn) send() {
	defer close(c.gone)
	for {
		select {
		case <-c.kick:
			c.flush()
		case <-c.done:
			c.flush()
			return
		}
	}
}

// flush writes the unsent bytes, in batches, until there are none.
func (c *bufferedConn) flush() {
	for {
		c.mu.Lock()
		if len(c.unsent) == 0 || c.err != nil {
			c.mu.Unlock()
			return
		}
		batch := c.unsent
		c.unsent = c.spare[:0]
		c.mu.Unlock()
		_, err := c.Conn.Write(batch)
		c.mu.Lock()
		c.spare = batch[:0]
		if err != nil {
			c.err = err
			c.unsent = nil
		}
		c.drained.Broadcast()
		c.mu.Unlock()
	}
}

// Close sends what is unsent (within a second), stops the sender and
// closes the connection.
func (c *bufferedConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.drained.Broadcast()
		c.mu.Unlock()
		c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		close(c.done)
		<-c.gone
	})
	err := c.Conn.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
