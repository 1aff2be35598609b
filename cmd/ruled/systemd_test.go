package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

// TestSystemdNotify: run as a Type=notify service would be, `ruled run`
// tells the notify socket READY=1 only once GET /readyz answers 200,
// pings the watchdog at half its interval, and says STOPPING=1 on
// SIGTERM (and RELOADING=1, READY=1 around a SIGHUP's reload, which
// the process survives); its log lines on the journal's stream carry their priority
// (<3> for an error, <6> info, <7> debug), and are plain elsewhere.
func TestSystemdNotify(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := fixture(t, "- id: r\n  on: job\n  steps: [{do: log.log, with: {message: hi}}]\n")
	os.WriteFile(filepath.Join(rules, "broken.yaml"), []byte("- id: broken\n  on: job\n"), 0o644) // an error line
	dir, err := os.MkdirTemp("", "sd")                                                            // a short path: a socket's is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "cache"), 0o755)
	os.Symlink(plugintest.CacheDir(), filepath.Join(data, "cache", "wazero"))
	logf, err := os.Create(filepath.Join(t.TempDir(), "journal"))
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	syscall.Fstat(int(logf.Fd()), &st)
	cmd := exec.Command(os.Args[0], "run", "--data", data, "--rules", rules, "--plugins", plugins, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "RULED_BE_MAIN=1", "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=400000",
		"JOURNAL_STREAM="+uintString(uint64(st.Dev))+":"+uintString(uint64(st.Ino)))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()

	next := func(within time.Duration) string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(within))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("no notification: %v\n%s", err, b)
		}
		return string(buf[:n])
	}
	first := next(3 * time.Minute) // a cold compilation cache compiles the plugins first
	if !strings.HasPrefix(first, "READY=1\nSTATUS=running: 1 rules, 1 plugins") {
		t.Fatalf("first notification %q; want READY=1", first)
	}
	resp, err := socketClient(data, 5*time.Second).Get("http://ruled/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("READY=1 said, but /readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	for i := 0; i < 3; i++ {
		if got := next(2 * time.Second); got != "WATCHDOG=1" {
			t.Fatalf("notification %q; want WATCHDOG=1", got)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("3 watchdog pings took %v; want about 600ms (every WatchdogSec/2)", took)
	}
	// SIGHUP reads the rules and plugins again; the process goes on.
	cmd.Process.Signal(syscall.SIGHUP)
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "READY=1" {
		if got := next(30 * time.Second); got != "WATCHDOG=1" {
			seen = append(seen, got)
		}
	}
	if strings.Join(seen, " ") != "RELOADING=1 READY=1" {
		t.Errorf("on SIGHUP: %q; want RELOADING=1 READY=1", seen)
	}
	select {
	case <-done:
		t.Fatal("SIGHUP ended the process")
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for {
		got := next(30 * time.Second)
		if got == "STOPPING=1" {
			break
		}
		if got != "WATCHDOG=1" {
			t.Fatalf("notification %q while stopping; want STOPPING=1", got)
		}
	}
	<-done
	b, _ := os.ReadFile(logf.Name())
	out := string(b)
	for _, want := range []string{"<3>", "<6>", "<7>"} {
		if !strings.Contains(out, "\n"+want) && !strings.HasPrefix(out, want) {
			t.Errorf("no line with priority %s:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "<") {
			t.Errorf("a line without its priority: %q", line)
		}
		if strings.Contains(line, "[ERROR]") && !strings.HasPrefix(line, "<3>") {
			t.Errorf("an error line not at <3>: %q", line)
		}
	}
}

func uintString(v uint64) string { return strconv.FormatUint(v, 10) }
