package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"github.com/hashicorp/go-hclog"
)

// What `ruled run` tells systemd when it runs as a service (Type=notify,
// dist/ruled.service): READY=1 once the daemon is ready — replay done,
// the bus up: the moment GET /readyz first answers 200 —, WATCHDOG=1
// every half of WatchdogSec while the engine answers (daemon.Alive), and
// STOPPING=1 when it stops. Outside systemd ($NOTIFY_SOCKET unset) each
// is nothing.

// alive is what the watchdog asks of the daemon.
type alive interface {
	Ready(ctx context.Context) error
	Alive(ctx context.Context) error
}

// notifier talks to systemd's notify socket. Its watchdog goroutine ends
// with stop.
type notifier struct {
	log  hclog.Logger
	quit chan struct{}
	wg   sync.WaitGroup
}

// notifyReady says READY=1 (with a STATUS line) and starts the watchdog
// when systemd asked for one ($WATCHDOG_USEC). It returns once the
// daemon is ready, or ctx ends.
func notifyReady(ctx context.Context, d alive, status string, log hclog.Logger) *notifier {
	n := &notifier{log: log, quit: make(chan struct{})}
	for d.Ready(ctx) != nil { // Start returned: only a store or bus still coming back delays it
		select {
		case <-ctx.Done():
			return n
		case <-time.After(100 * time.Millisecond):
		}
	}
	n.send("READY=1\nSTATUS=" + status)
	every, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("systemd's watchdog settings are unreadable; no watchdog", "error", err)
	}
	if every <= 0 {
		return n
	}
	n.wg.Add(1)
	go n.watchdog(d, every/2)
	return n
}

// watchdog pings systemd every interval while the engine answers within
// it; an engine that does not is left to systemd, which restarts the
// service once WatchdogSec passes without a ping.
func (n *notifier) watchdog(d alive, interval time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), interval)
			err := d.Alive(ctx)
			cancel()
			if err != nil {
				n.log.Error("the engine does not answer: no watchdog ping (systemd restarts the service if it goes on)", "error", err)
				continue
			}
			n.send("WATCHDOG=1")
		}
	}
}

// stop says STOPPING=1 and ends the watchdog.
func (n *notifier) stop() {
	close(n.quit)
	n.wg.Wait()
	n.send("STOPPING=1")
}

func (n *notifier) send(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		n.log.Warn("cannot tell systemd", "state", strings.SplitN(state, "\n", 2)[0], "error", err)
	}
}

// journalWriter prefixes each log line with its syslog priority (<3> for
// an error … <7> for debug and trace), which journald reads from a
// service's stderr (SyslogLevelPrefix), so that `journalctl -p err`
// shows the errors. hclog hands it each line with its level
// (hclog.LevelWriter).
type journalWriter struct{ w io.Writer }

// LevelWrite implements hclog.LevelWriter.
func (j journalWriter) LevelWrite(level hclog.Level, p []byte) (int, error) {
	prio := "<6>"
	switch level {
	case hclog.Error:
		prio = "<3>"
	case hclog.Warn:
		prio = "<4>"
	case hclog.Debug, hclog.Trace:
		prio = "<7>"
	}
	// One Write for the whole line: journald takes a line's prefix from its
	// first bytes, and another writer's line must not come between.
	var b bytes.Buffer
	b.Grow(len(prio) + len(p))
	b.WriteString(prio)
	b.Write(p)
	if _, err := j.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (j journalWriter) Write(p []byte) (int, error) { return j.LevelWrite(hclog.Info, p) }

// logOutput is w, prefixed for journald when w is the stream systemd
// connected to the journal: $JOURNAL_STREAM names its device and inode,
// which w (a file) must have — a service whose stderr was redirected
// elsewhere gets plain lines.
func logOutput(w io.Writer) io.Writer {
	js := os.Getenv("JOURNAL_STREAM")
	f, ok := w.(*os.File)
	if js == "" || !ok {
		return w
	}
	dev, ino, ok := strings.Cut(js, ":")
	fdev, fino, known := fileID(f)
	if !ok || !known || dev != strconv.FormatUint(fdev, 10) || ino != strconv.FormatUint(fino, 10) {
		return w
	}
	return journalWriter{w}
}

// readyStatus is the STATUS= line systemctl status shows once ready.
func readyStatus(rules, plugins int) string {
	return fmt.Sprintf("running: %d rules, %d plugins", rules, plugins)
}
