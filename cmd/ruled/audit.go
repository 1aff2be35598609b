package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/store"
)

const auditUsage = `Usage: ruled audit [verify] [--data DIR | --redis URL] [flags]

Shows the audit trail: every command the API served or refused for its
token's scope, every deploy, every file refused for its signature — who,
from where, when, what. Without --redis it asks the daemon running on
--data; with it, it reads the fleet's trail in Redis (ruled deploy's
entries are there).

ruled audit verify reads the whole trail and checks its hash chain: an
entry changed, or removed from the middle, is named (exit 1). It prints
the head, the last entry's hash: keep it elsewhere, and give it later as
--head to check the trail still holds it — a trail written again from
before it, or cut back past it, does not. (What came after it can still
have been written again by someone with the store: note heads often.)

Flags:
`

// auditSource reads the trail: the daemon's API, or Redis.
type auditSource func(ctx context.Context, from uint64, limit int) (*store.AuditChain, error)

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verify := len(args) > 0 && args[0] == "verify"
	if verify {
		args = args[1:]
	}
	fs := newFlagSet("audit", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), auditUsage); fs.PrintDefaults() }
	data := dataFlag(fs)
	redisURL := fs.String("redis", "", "read the fleet's trail in this Redis instead of asking a daemon")
	limit := fs.Int("limit", 50, "show the newest this many entries (at most "+strconv.Itoa(store.MaxAuditRead)+")")
	from := fs.Uint64("from", 0, "show the entries from this seq on, oldest first")
	asJSON := fs.Bool("json", false, "print the entries and where they sit in the chain as JSON")
	head := fs.String("head", "", "with verify: a head noted earlier, which must still be in the chain")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && pos[0] == "verify" {
		verify, pos = true, nil
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("audit takes no arguments but verify, got %q", pos))
	}
	var src auditSource
	if *redisURL != "" {
		r, err := store.OpenRedis(*redisURL, store.RedisOptions{})
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		defer r.Close()
		src = r.Audit().AuditRead
	} else {
		if err := needData(data); err != nil {
			return err
		}
		src = func(ctx context.Context, from uint64, limit int) (*store.AuditChain, error) {
			var ch store.AuditChain
			err := apiGet(ctx, *data, fmt.Sprintf("%s?from=%d&limit=%d", api.AuditPath, from, limit), &ch)
			return &ch, err
		}
	}
	if verify {
		return auditVerify(ctx, src, *head, stdout)
	}
	ch, err := src(ctx, *from, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, ch)
	}
	if len(ch.Entries) == 0 {
		fmt.Fprintln(stdout, "the audit trail is empty")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tWHO\tFROM\tWHAT\tDETAIL")
	for _, e := range ch.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.At.Local().Format(time.RFC3339), e.Who, e.From, e.What, e.Detail)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "entries %d to %d of %d to %d kept\n", ch.Entries[0].Seq, ch.Entries[len(ch.Entries)-1].Seq, ch.First, ch.Last)
	return nil
}

// auditVerify reads the whole chain, a page at a time, and checks it.
// The anchor comes with the first page, in the same read: an append that
// trims the oldest between two reads cannot make them disagree. Later
// pages only add entries after the first page's.
func auditVerify(ctx context.Context, src auditSource, noted string, stdout io.Writer) error {
	page, err := src(ctx, 1, store.MaxAuditRead)
	if err != nil {
		return err
	}
	switch {
	case page.Last == 0 && len(page.Entries) > 0:
		// Entries without a head: the head was removed, which would
		// otherwise hide any edit as "empty".
		return fmt.Errorf("audit: the trail holds entries %d on, but its head is gone: it was removed", page.Entries[0].Seq)
	case page.Last == 0:
		fmt.Fprintln(stdout, "the audit trail is empty")
		if noted != "" {
			return fmt.Errorf("audit: the head %s noted is not in the trail: it was emptied", short(noted))
		}
		return nil
	}
	anchor := page.Anchor
	all := page.Entries
	for len(page.Entries) == store.MaxAuditRead {
		next := page.Entries[len(page.Entries)-1].Seq + 1
		if next > page.Last {
			break
		}
		if page, err = src(ctx, next, store.MaxAuditRead); err != nil {
			return err
		}
		all = append(all, page.Entries...)
	}
	if len(all) == 0 {
		return fmt.Errorf("audit: the head says %d entries were written, and none is kept: they were removed", page.Last)
	}
	head, err := audit.Verify(all, anchor)
	if err != nil {
		return err
	}
	switch last := all[len(all)-1].Seq; {
	case last < page.Last:
		return fmt.Errorf("audit: the trail ends at entry %d but its head says %d: entries were removed from its end", last, page.Last)
	case last == page.Last && head != page.Head:
		return fmt.Errorf("audit: the entries end at %s but the head says %s: the last entry or the head was changed", short(head), short(page.Head))
	}
	seen := noted == "" || noted == anchor
	for _, e := range all {
		seen = seen || e.Hash == noted
	}
	fmt.Fprintf(stdout, "audit trail intact: entries %d to %d (%d)", all[0].Seq, all[len(all)-1].Seq, len(all))
	if anchor != "" {
		fmt.Fprintf(stdout, ", after %d trimmed by retention", all[0].Seq-1)
	}
	fmt.Fprintf(stdout, "\nhead %s\n", head)
	if !seen {
		return fmt.Errorf("audit: the head %s noted is not in the trail: it was trimmed by retention since, or entries from it on were removed or written again", short(noted))
	}
	return nil
}
