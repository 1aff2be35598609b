package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/daemon"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
)

// cmdLog is `ruled log ls` and `ruled log tree ID`: the execution log, from
// the running daemon or, when none runs, straight from its store (the tree
// a killed process left is readable before anything restarts).
func cmdLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "ls" && args[0] != "tree" && args[0] != "why") {
		return usageError("log: want ls, tree ID or why RULE")
	}
	verb, args := args[0], args[1:]
	fs := newFlagSet("log "+verb, stderr)
	data := dataFlag(fs)
	redisURL := fs.String("redis", "", "read the log from Redis when no daemon runs")
	asJSON := fs.Bool("json", false, "print JSON")
	var rule, outcome, since *string
	var limit *int
	if verb == "ls" {
		rule = fs.String("rule", "", "only this rule's runs")
		outcome = fs.String("outcome", "", "only runs that ended so: ok, failed, cancelled, dropped, interrupted, unlogged (or running)")
		since = fs.String("since", "", "only runs started since: an RFC 3339 time or a duration back (2h)")
		limit = fs.Int("limit", runlog.DefaultLimit, "at most this many runs")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := needData(data); err != nil && *redisURL == "" {
		return err
	}
	if verb == "why" {
		return logWhy(ctx, *data, pos, *asJSON, stdout)
	}
	if verb == "tree" {
		if len(pos) != 1 {
			return usageError("log tree takes one run id")
		}
		var rows []runlog.Row
		err := apiGet(ctx, *data, "/v1/runs/"+url.PathEscape(pos[0])+"/tree", &rows)
		if isNoDaemon(err) {
			err = fromStore(*data, *redisURL, func(r runlog.Reader) (err error) {
				rows, err = runlog.Tree(r, pos[0])
				return err
			})
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, rows)
		}
		return runlog.Render(stdout, rows, false)
	}
	if len(pos) != 0 {
		return usageError("log ls takes no arguments")
	}
	q := url.Values{}
	for k, v := range map[string]string{"rule": *rule, "outcome": *outcome, "since": *since, "limit": strconv.Itoa(*limit)} {
		if v != "" {
			q.Set(k, v)
		}
	}
	f, err := api.ParseRunFilter(q, time.Now())
	if err != nil {
		return usageError("log ls: " + err.Error())
	}
	var runs []runlog.Run
	err = apiGet(ctx, *data, "/v1/runs?"+q.Encode(), &runs)
	if isNoDaemon(err) {
		err = fromStore(*data, *redisURL, func(r runlog.Reader) (err error) {
			runs, err = runlog.List(r, f)
			return err
		})
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, runs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tRULE\tOUTCOME\tSTARTED\tTOOK\tTRIGGER\tERROR")
	for _, e := range runs {
		took := "-"
		if !e.Ended.IsZero() {
			took = e.Ended.Sub(e.Started).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Rule, e.Outcome, e.Started.Format(time.RFC3339), took, e.Topic, e.Error)
	}
	tw.Flush()
	fmt.Fprintln(stdout, plural(len(runs), "run"))
	return nil
}

// logWhy is `ruled log why RULE`: the triggers the rule turned away, by
// reason, from the running daemon (it keeps them in memory, not in the
// store: there is nothing to read when none runs).
func logWhy(ctx context.Context, data string, pos []string, asJSON bool, stdout io.Writer) error {
	if len(pos) != 1 {
		return usageError("log why takes one rule id")
	}
	var ws []seq.WhyNot
	err := apiGet(ctx, data, "/v1/rules/"+url.PathEscape(pos[0])+"/why", &ws)
	if isNoDaemon(err) {
		return fmt.Errorf("%w (the reasons a rule turned triggers away are kept by the running daemon, in memory)", err)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, ws)
	}
	if len(ws) == 0 {
		fmt.Fprintf(stdout, "rule %s turned no trigger away since the daemon started\n", pos[0])
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, w := range ws {
		fmt.Fprintf(tw, "%s: %s\n", w.Reason, plural(int(w.Count), "trigger"))
		for _, ns := range w.Last {
			saw := ""
			if len(ns.Values) > 0 {
				var c bytes.Buffer
				json.Compact(&c, ns.Values)
				saw = "saw " + c.String()
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", ns.At.Format(time.RFC3339Nano), ns.Topic, ns.EventID, cmp.Or(ns.Key, "-"), saw)
		}
	}
	return tw.Flush()
}

// isNoDaemon reports whether err says no daemon answers on the socket.
func isNoDaemon(err error) bool {
	var nd noDaemonError
	return errors.As(err, &nd)
}

// fromStore reads the log from the store a stopped daemon left: its log/,
// or Redis.
func fromStore(data, redisURL string, read func(runlog.Reader) error) error {
	if redisURL != "" {
		r, err := store.OpenRedis(redisURL, store.RedisOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		return read(r.Log())
	}
	dir := filepath.Join(data, daemon.LogDir)
	if _, err := os.Stat(dir); err == nil {
		l, err := store.OpenSegmentLog(dir, true)
		if err != nil {
			return err
		}
		defer l.Close()
		return read(l)
	}
	// A data directory from before the segment log, not started since.
	path := filepath.Join(data, daemon.OldLogFile)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no ruled running with --data %s, and no execution log there (%v)", data, err)
	}
	b, err := store.OpenBoltLog(path, store.BoltOptions{})
	if err != nil {
		return err
	}
	defer b.Close()
	return read(b)
}
