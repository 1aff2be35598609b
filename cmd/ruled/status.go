package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/engine"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
)

// apiGet fetches a path from the daemon whose data dir is data, through its
// unix socket.
func apiGet(ctx context.Context, data, path string, v any) error {
	return apiDo(ctx, data, "GET", path, nil, v)
}

// apiDo sends a request to the daemon whose data dir is data, through its
// unix socket, and decodes the JSON answer into v. An answer other than 200
// is an error carrying the daemon's own words.
func apiDo(ctx context.Context, data, method, path string, body any, v any) error {
	_, err := apiDoHeader(ctx, data, method, path, body, v)
	return err
}

// apiDoHeader is apiDo that also returns the answer's header.
func apiDoHeader(ctx context.Context, data, method, path string, body any, v any) (http.Header, error) {
	c := socketClient(data, 10*time.Second)
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://ruled"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, noDaemonError{fmt.Errorf("no ruled running with --data %s (%v)", data, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	if v == nil || resp.StatusCode == http.StatusNoContent {
		return resp.Header, nil
	}
	return resp.Header, json.NewDecoder(resp.Body).Decode(v)
}

// socketClient talks HTTP to the daemon whose data dir is data, through
// its unix socket; timeout 0 is none (a stream).
func socketClient(data string, timeout time.Duration) *http.Client {
	sock := filepath.Join(data, api.SocketName)
	// One request a command: no connection kept open for a next one.
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
}

// noDaemonError is a request no daemon answered: a command that can read
// the store itself does so instead.
type noDaemonError struct{ error }

func (e noDaemonError) Unwrap() error { return e.error }

func dataFlag(fs interface {
	String(string, string, string) *string
}) *string {
	return fs.String("data", os.Getenv("RULED_DATA"), "the daemon's data directory (default $RULED_DATA)")
}

// serviceDataDir is where the systemd unit keeps the daemon's data
// (dist/ruled.service): the CLI's data directory when neither --data nor
// $RULED_DATA names one and a daemon's store or socket is there.
const serviceDataDir = "/var/lib/ruled"

// needData settles a command's data directory: --data, $RULED_DATA (the
// flag's default), or serviceDataDir when a daemon lives there; otherwise
// a usage error that says what was tried and what to do.
func needData(data *string) error {
	if *data != "" {
		return nil
	}
	for _, f := range []string{api.SocketName, "ruled.db"} {
		if _, err := os.Stat(filepath.Join(serviceDataDir, f)); err == nil {
			*data = serviceDataDir
			return nil
		}
	}
	return usageError("which daemon? --data is not given, $RULED_DATA is not set, and no daemon keeps its data in " +
		serviceDataDir + ": give the data directory its `ruled run --data DIR` was started with (make run's is .build/run)")
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments, got %q", fs.Name(), pos))
	}
	if err := needData(data); err != nil {
		return err
	}
	var st status.Status
	if err := apiGet(ctx, *data, "/v1/status", &st); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	fmt.Fprintf(stdout, "ruled up since %s, store %s\n", st.Started.Format(time.RFC3339), st.Store)
	if st.Build.Version != "" {
		fmt.Fprintf(stdout, "%s\n", st.Build)
	}
	fmt.Fprintf(stdout, "active runs %d, replayed %d, refused (max) %d, pool queued %d busy %d refused (full) %d\n",
		st.Active, st.Replayed, st.Refused, st.Pool.Queued, st.Pool.Busy, st.Pool.Refused)
	fmt.Fprintf(stdout, "events accepted %d, rejected %d%s (HTTP and --events)\n", st.Events.Accepted, st.Events.TotalRejected(), reasons(st.Events.Rejected))
	if s := st.State; s != nil {
		fmt.Fprintf(stdout, "state: %d entities of %d, %d KiB of %d; %d reports, %d changes; refused %d%s; %d writes, %d unwritten, %d failed\n",
			s.Entities, s.Max, s.Bytes>>10, s.MaxBytes>>10, s.Reports, s.Changes, total(s.Refused), reasons(s.Refused), s.Writes, s.Unwritten, s.WriteFailed)
	}
	if h := st.Holds; h != nil && uint64(h.Running)+h.Began+h.Fired+h.Cancelled+h.Dropped+h.Refused > 0 {
		fmt.Fprintf(stdout, "holds: %d running; %d began, %d fired, %d cancelled, %d dropped (their trigger edited, or stale at a start), %d refused\n",
			h.Running, h.Began, h.Fired, h.Cancelled, h.Dropped, h.Refused)
	}
	for _, w := range st.Windows {
		fmt.Fprintf(stdout, "window %s: %s of %d; %d events counted, %d late, %d from the future, %d refused (full), %d invalid; %d closes since the start\n",
			w.Name, plural(w.Keys, "key"), w.MaxKeys, w.Counted, w.Late, w.Future, w.Full, w.Invalid, w.Closed)
	}
	if f := st.Fleet; f != nil {
		fmt.Fprintf(stdout, "fleet: member %s holds shards %v of %d; %d events waiting in the stream, %d holds running\n",
			f.Member, f.Held, f.Shards, f.Stream, f.Holds)
	}
	if m := st.MQTT; m != nil {
		fmt.Fprintf(stdout, "mqtt: connected %v; received %d, accepted %d, refused %d%s; published %d (written first %d), rejected %d, outbox %d (refused full %d)\n",
			m.Up, m.Received, m.Accepted, total(m.Refused), reasons(m.Refused), m.Published, m.Written, m.Rejected, m.Outbox, m.OutboxFull)
	}
	if h := st.OutboundHTTP; h != nil && h.Requests+h.Failed+uint64(len(h.Refused)) > 0 {
		fmt.Fprintf(stdout, "outbound http: %d answered, %d failed, refused %d%s\n", h.Requests, h.Failed, total(h.Refused), reasons(h.Refused))
	}
	if d := st.Deployment; d != nil {
		fmt.Fprintf(stdout, "deployment %d by %s at %s: %d files\n", d.Version, d.By, d.At.Format(time.RFC3339), len(d.Files))
	}
	if sg := st.Signatures; sg != nil {
		var n uint64
		for _, c := range sg.Counts {
			n += c
		}
		fmt.Fprintf(stdout, "signatures required for %s; trusted keys %s", strings.Join(sg.Required, ", "), strings.Join(sg.Keys, ", "))
		if len(sg.Revoked) > 0 {
			fmt.Fprintf(stdout, "; revoked %s", strings.Join(sg.Revoked, ", "))
		}
		fmt.Fprintf(stdout, "; %s refused now, %s since the start%s\n", plural(len(sg.Refused), "file"), plural(int(n), "refusal"), reasons(sg.Counts))
		for _, f := range sg.Refused {
			fmt.Fprintf(stdout, "  refused (%s): %s\n", f.Place, f.Error)
		}
	}
	if tr := st.Traces; tr != nil {
		fmt.Fprintf(stdout, "traces to %s (sample ratio %g): %d spans exported, %d dropped, %d failed, %d queued\n",
			tr.Endpoint, tr.Ratio, tr.Exported, tr.Dropped, tr.Failed, tr.Queued)
		if tr.LastError != "" {
			fmt.Fprintf(stdout, "  last failure: %s\n", tr.LastError)
		}
	}
	if st.Bus != nil {
		fmt.Fprintf(stdout, "bus: received %d, refused %d%s\n", st.Bus.Accepted, st.Bus.TotalRejected(), reasons(st.Bus.Rejected))
	}
	fmt.Fprintf(stdout, "execution log: %d entries written, %d queued, %d dropped%s\n", st.ExecLog.Written, st.ExecLog.Queued,
		st.ExecLog.DroppedTotal(), reasons(st.ExecLog.Dropped))
	if len(st.Dropped) > 0 {
		keys := make([]string, 0, len(st.Dropped))
		for k := range st.Dropped {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(stdout, "dropped waiting steps:")
		for _, k := range keys {
			fmt.Fprintf(stdout, "  %-48s %d\n", k, st.Dropped[k])
		}
	}
	fmt.Fprintln(stdout)
	printRules(stdout, st.Rules, time.Now())
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	signed := st.Signatures != nil && slices.Contains(st.Signatures.Required, "plugins")
	head := "\nPLUGIN\tDIGEST\tABI\tGRANTED\tINSTANCES"
	if signed {
		head += "\tSIGNED BY"
	}
	fmt.Fprintln(tw, head)
	for _, p := range st.Plugins {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d", p.Name, short(p.Digest), p.ABI, strings.Join(p.Granted, ","), p.Live)
		if signed {
			fmt.Fprintf(tw, "\t%s", cmp.Or(p.SignedBy, "-"))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, p := range st.Invalid {
		fmt.Fprintf(stdout, "invalid rule: %s: %s", p.At, p.Error)
		if p.Hint != "" {
			fmt.Fprintf(stdout, " (hint: %s)", p.Hint)
		}
		fmt.Fprintln(stdout)
	}
	for _, p := range st.Failed {
		fmt.Fprintf(stdout, "plugin not loaded: %s: %s\n", p.File, p.Error)
	}
	return nil
}

// reasons is counts by reason as status prints them: " (reason n, …)"
// in the reasons' order, or nothing when there are none — not Go's map[].
func reasons[K ~string, V ~int | ~uint64](m map[K]V) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[K(k)])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// total is the sum of counts by reason.
func total[K comparable, V ~int | ~uint64](m map[K]V) V {
	var n V
	for _, v := range m {
		n += v
	}
	return n
}

// cmdPending lists the waiting durable steps: from the running daemon, or
// straight from the store when none runs.
func cmdPending(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pending ls", stderr)
	data := dataFlag(fs)
	redisURL := fs.String("redis", "", "read the records from Redis when no daemon runs")
	rule := fs.String("rule", "", "only this rule's waiting steps")
	limit := fs.Int("limit", api.DefaultPendingLimit, fmt.Sprintf("list at most this many, the soonest (1 to %d)", api.MaxPendingLimit))
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments, got %q", fs.Name(), pos))
	}
	if *limit < 1 || *limit > api.MaxPendingLimit {
		return usageError(fmt.Sprintf("--limit %d: want 1 to %d", *limit, api.MaxPendingLimit))
	}
	if err := needData(data); err != nil && *redisURL == "" {
		return err
	}
	var recs []status.PendingRecord
	total := 0
	q := url.Values{"limit": {strconv.Itoa(*limit)}}
	if *rule != "" {
		q.Set("rule", *rule)
	}
	if h, err := apiDoHeader(ctx, *data, "GET", "/v1/pending?"+q.Encode(), nil, &recs); err == nil {
		total, _ = strconv.Atoi(h.Get(api.TotalHeader))
	} else {
		if recs, err = pendingFromStore(*data, *redisURL); err != nil {
			return err
		}
		recs, total = api.PendingPage(recs, *rule, *limit)
	}
	if *asJSON {
		if total > len(recs) {
			// The JSON is the records; a script that wanted them all is
			// told on stderr that it has the soonest only.
			fmt.Fprintf(stderr, "%d waiting; the %d soonest listed (--limit)\n", total, len(recs))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(recs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSTEP\tPASS\tDUE\tIN\tFINGERPRINT\tDIGEST\tRUN")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Rule, r.Step, r.Pass, r.Due.Format(time.RFC3339),
			time.Until(r.Due).Round(time.Second), short(r.Fingerprint), short(r.Digest), r.Run)
	}
	tw.Flush()
	if total > len(recs) {
		fmt.Fprintf(stdout, "%d waiting; the %d soonest listed (--limit)\n", total, len(recs))
	} else {
		fmt.Fprintf(stdout, "%d waiting\n", len(recs))
	}
	return nil
}

func pendingFromStore(data, redisURL string) ([]status.PendingRecord, error) {
	var h seq.Hasher
	if redisURL != "" {
		r, err := store.OpenRedis(redisURL, store.RedisOptions{})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		h = seq.NewClientHasher(r)
	} else {
		b, err := store.OpenBolt(filepath.Join(data, "ruled.db"), store.BoltOptions{})
		if err != nil {
			return nil, err
		}
		defer b.Close()
		h = b
	}
	return engine.ListPending(seq.NewPendingStore(h, seq.Placement{}, nopLog{}))
}

type nopLog struct{}

func (nopLog) Info(string, ...any)  {}
func (nopLog) Warn(string, ...any)  {}
func (nopLog) Error(string, ...any) {}

// cmdPluginLs lists the running daemon's plugins: digest, reload history,
// the last result, and which old digests are kept for what.
func cmdPluginLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plugin ls", stderr)
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments, got %q", fs.Name(), pos))
	}
	if err := needData(data); err != nil {
		return err
	}
	var ps []status.PluginStatus
	if err := apiGet(ctx, *data, "/v1/plugins", &ps); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ps)
	}
	for _, p := range ps {
		state := "loaded"
		if !p.Loaded {
			state = "NOT LOADED"
		}
		fmt.Fprintf(stdout, "%s  %s  %s  abi %s  granted [%s]  instances %d", p.Name, state, short(p.Digest), p.ABI,
			strings.Join(p.Granted, ","), p.Live)
		if p.SignedBy != "" {
			fmt.Fprintf(stdout, "  signed by %s", p.SignedBy)
		}
		fmt.Fprintln(stdout)
		if p.LastError != "" {
			fmt.Fprintf(stdout, "  last reload failed: %s\n", p.LastError)
		}
		for _, ev := range p.History {
			result := "ok"
			if !ev.OK {
				result = "failed: " + ev.Error
			}
			fmt.Fprintf(stdout, "  %s  %s  %s  %s\n", ev.At.Format(time.RFC3339), short(ev.Digest), ev.Took, result)
		}
		for dg, by := range p.Pinned {
			fmt.Fprintf(stdout, "  pinned %s: %d waiting runs, %d pending records\n", short(dg), by.Waiting, by.Records)
		}
	}
	return nil
}

// short is a digest or fingerprint as the CLI shows it: its first 12 hex
// digits, "-" when there is none (a plugin that never loaded has no
// digest), and a shorter one as it is.
func short(digest string) string {
	switch {
	case digest == "":
		return "-"
	case len(digest) > 12:
		return digest[:12]
	}
	return digest
}
