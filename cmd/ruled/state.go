package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/status"
)

// cmdStateLs is `ruled state ls`: the entities' states the running
// daemon keeps, in id order.
func cmdStateLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("state ls", stderr)
	data := dataFlag(fs)
	prefix := fs.String("prefix", "", "only entities whose ids start with this (door., scooter.telemetry/)")
	limit := fs.Int("limit", api.DefaultStateLimit, fmt.Sprintf("list at most this many (1 to %d)", api.MaxStateLimit))
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments, got %q", fs.Name(), pos))
	}
	if *limit < 1 || *limit > api.MaxStateLimit {
		return usageError(fmt.Sprintf("--limit %d: want 1 to %d", *limit, api.MaxStateLimit))
	}
	if err := needData(data); err != nil {
		return err
	}
	q := url.Values{"limit": {strconv.Itoa(*limit)}}
	if *prefix != "" {
		q.Set("prefix", *prefix)
	}
	var list []status.Entity
	h, err := apiDoHeader(ctx, *data, "GET", "/v1/state?"+q.Encode(), nil, &list)
	if err != nil {
		return err
	}
	total, _ := strconv.Atoi(h.Get(api.TotalHeader))
	if *asJSON {
		if total > len(list) {
			fmt.Fprintf(stderr, "%d entities; the first %d listed (--limit)\n", total, len(list))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tCHANGED\tSEEN\tSTATE")
	for _, e := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, e.Changed.Format(time.RFC3339), e.Seen.Format(time.RFC3339), clip(compact(e.State), 80))
	}
	tw.Flush()
	if total > len(list) {
		fmt.Fprintf(stdout, "%d entities; the first %d listed (--limit)\n", total, len(list))
	} else {
		fmt.Fprintf(stdout, "%d entities\n", len(list))
	}
	return nil
}

// cmdStateShow is `ruled state show ID`: one entity's state whole.
func cmdStateShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("state show", stderr)
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("state show: want one entity id (ruled state ls lists them)")
	}
	if err := needData(data); err != nil {
		return err
	}
	var e status.Entity
	if err := apiGet(ctx, *data, "/v1/state/"+url.PathEscape(pos[0]), &e); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	}
	fmt.Fprintf(stdout, "%s (topic %s)\nlast changed %s, last seen %s\n", e.ID, e.Topic,
		e.Changed.Format(time.RFC3339Nano), e.Seen.Format(time.RFC3339Nano))
	var pretty any
	if json.Unmarshal(e.State, &pretty) == nil {
		b, _ := json.MarshalIndent(pretty, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return nil
}

// cmdStateRm is `ruled state rm ID...`: the running daemon forgets the
// entities' states (a sensor taken away or renamed); each one's next
// report is a first one.
func cmdStateRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("state rm", stderr)
	data := dataFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("state rm: want one or more entity ids (ruled state ls lists them)")
	}
	if err := needData(data); err != nil {
		return err
	}
	for _, id := range pos {
		if err := apiDo(ctx, *data, "DELETE", "/v1/state/"+url.PathEscape(id), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "forgot %s\n", id)
	}
	return nil
}

// compact is JSON on one line (the API's answer is indented).
func compact(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// clip is s cut to n bytes, marked.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// cmdWindow is `ruled window show NAME [KEY]` (a window's value for a
// key: its count, sum, avg …; no KEY for a window of one value) and
// `ruled window ls NAME` (its keys).
func cmdWindow(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("window "+sub, stderr)
	data := dataFlag(fs)
	limit := fs.Int("limit", api.DefaultStateLimit, "list at most this many keys (ls)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := needData(data); err != nil {
		return err
	}
	switch {
	case sub == "ls" && len(pos) == 1:
		var k api.WindowKeys
		if err := apiGet(ctx, *data, fmt.Sprintf("/v1/windows/%s?limit=%d", url.PathEscape(pos[0]), *limit), &k); err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(k)
		}
		for _, key := range k.Keys {
			fmt.Fprintln(stdout, key)
		}
		if k.Total > len(k.Keys) {
			fmt.Fprintf(stdout, "%d keys; the first %d listed (--limit)\n", k.Total, len(k.Keys))
		} else {
			fmt.Fprintln(stdout, plural(k.Total, "key"))
		}
		return nil
	case sub == "show" && (len(pos) == 1 || len(pos) == 2):
		key := ""
		if len(pos) == 2 {
			key = pos[1]
		}
		var v api.WindowValue
		if err := apiGet(ctx, *data, "/v1/windows/"+url.PathEscape(pos[0])+"?key="+url.QueryEscape(key), &v); err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		var pretty any
		json.Unmarshal(v.Value, &pretty)
		b, _ := json.MarshalIndent(pretty, "", "  ")
		if key != "" {
			fmt.Fprintf(stdout, "window %s, key %s\n%s\n", v.Window, key, b)
		} else {
			fmt.Fprintf(stdout, "window %s\n%s\n", v.Window, b)
		}
		return nil
	case sub == "ls":
		return usageError("window ls: want one window's name (ruled status lists them)")
	default:
		return usageError("window show: want a window's name and, for a window kept per key, the key (ruled window ls NAME lists them)")
	}
}
