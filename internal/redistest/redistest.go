package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Config says how to start a server. The zero Config is an in-memory server:
// no RDB snapshots, no append-only file, nothing left behind.
type Config struct {
	// Persistent turns on the append-only file with appendfsync always, in a
	// directory under t.TempDir(), so that a Stop or a Kill followed by
	// Restart finds every write the server acknowledged.
	Persistent bool
	// Args are extra redis-server arguments, appended last so they win,
	// e.g. []string{"--notify-keyspace-events", "KEA"}.
	Args []string
	// Cluster starts the server with cluster mode on (StartCluster joins
	// such servers into a cluster): its port is picked so that its cluster
	// bus port, 10000 higher, is free too.
	Cluster bool
}

// Server is one redis-server process on 127.0.0.1. Its methods are for the
// test goroutine that started it; they are not safe for concurrent use.
type Server struct {
	t    testing.TB
	cfg  Config
	bin  string
	dir  string // the server's working directory (its AOF, its logs)
	port int
	p    *proc // the running process, nil when stopped
	runs int   // processes started, to name their log files
}

// proc is one run of the server. done is closed by the goroutine waiting for
// the process, after it has set err.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// Timeouts for a server to answer PING after its start and to exit after
// SIGTERM. Generous: a loaded CI machine is slow, and both normally take
// milliseconds.
const (
	readyTimeout = 15 * time.Second
	stopTimeout  = 15 * time.Second
)

var errAddrInUse = errors.New("address in use")

// Start starts an in-memory redis-server on a free loopback port and waits
// until it answers PING. The server is killed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Config{})
}

// StartWith is Start with a Config.
//
// The port is picked by listening on 127.0.0.1:0 and closing the listener
// before the server binds it, so another process can take it in between;
// a start that fails with "Address already in use" is retried on a new port.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: redis-server not found (CI=true; .ci/tools.sh installs it): %v", err)
		}
		t.Skipf("redistest: redis-server not found, skipping: %v", err)
	}
	s := &Server{t: t, cfg: cfg, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.Kill)
	for attempt := 1; ; attempt++ {
		pick := freePort
		if cfg.Cluster {
			pick = clusterPort
		}
		if s.port, err = pick(); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		err = s.start()
		if err == nil {
			return s
		}
		if !errors.Is(err, errAddrInUse) || attempt == 5 {
			t.Fatalf("redistest: %v", err)
		}
	}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL (database 0, no password).
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Dir is the server's working directory, where a persistent server keeps its
// append-only file and every run leaves its log (redis-<n>.log).
func (s *Server) Dir() string { return s.dir }

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	if s.p == nil {
		return false
	}
	select {
	case <-s.p.done:
		return false
	default:
		return true
	}
}

// Stop shuts the server down with SIGTERM, the way an operator would (a
// persistent server flushes its append-only file), and waits for it to exit.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	s.signal(syscall.SIGTERM)
}

// Kill ends the server with SIGKILL, a crash or a power cut as far as the
// server is concerned, and waits for it to exit. Killing a stopped server
// does nothing.
func (s *Server) Kill() {
	s.t.Helper()
	s.signal(syscall.SIGKILL)
}

// Restart stops the server if it is running and starts it again on the same
// port and in the same directory, then waits until it answers PING. A
// persistent server comes back with its data; an in-memory one, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	// The port was ours a moment ago; if another process took it in
	// between there is nothing to do but fail, since clients hold the address.
	var err error
	for attempt := 1; attempt <= 20; attempt++ {
		if err = s.start(); !errors.Is(err, errAddrInUse) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) signal(sig syscall.Signal) {
	p := s.p
	if p == nil {
		return
	}
	s.p = nil
	select {
	case <-p.done:
		s.t.Errorf("redistest: server on %s had already exited: %v\n%s", s.Addr(), p.err, tail(p.log))
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		s.t.Errorf("redistest: server on %s did not exit within %s of %v\n%s", s.Addr(), stopTimeout, sig, tail(p.log))
	}
}

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	s.runs++
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.runs))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--daemonize", "no",
		"--logfile", "", "--databases", "16",
	}
	if s.cfg.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
	}
	if s.cfg.Persistent {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, s.cfg.Args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile // *os.File: no copying goroutine
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	p := &proc{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { // ends when the process exits; see the package doc
		p.err = cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-p.done:
			out := tail(logPath)
			if strings.Contains(out, "Address already in use") {
				return fmt.Errorf("port %d: %w", s.port, errAddrInUse)
			}
			return fmt.Errorf("redis-server on port %d exited before answering PING: %v\n%s", s.port, p.err, out)
		default:
		}
		if ping(s.Addr()) == nil {
			s.p = p
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("redis-server on port %d did not answer PING within %s\n%s", s.port, readyTimeout, tail(logPath))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ping sends a PING in RESP and wants +PONG, or -NOAUTH from a server
// started with a password. A server still loading its append-only file
// answers -LOADING, which is not ready.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// tail returns the last lines of a log file, for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
