package main

import (
	"context"
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
	"github.com/ruled-dev/ruled/host/store"
)

// cmdLog is `ruled log ls` and `ruled log tree ID`: the execution log, from
// the running daemon or, when none runs, straight from its store (the tree
// a killed process left is readable before anything restarts).
func cmdLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "ls" && args[0] != "tree") {
		return usageError("log: want ls or tree ID")
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
	fmt.Fprintf(stdout, "%d runs\n", len(runs))
	return nil
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
