package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ruled-dev/ruled/host/status"
)

// cmdRule is `ruled rule ls|show|pause|resume|sleep|kill|reset`: the rules'
// lifecycle states, and the operator's commands on them. Commands go to the
// running daemon, which applies them (the state is stored before it takes
// effect) and answers with the rule's status; a refused command changes
// nothing and exits 1 with the daemon's reason.
func cmdRule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("rule: want ls, show ID, or one of " + strings.Join(status.Commands, ", ") + " followed by a rule id")
	}
	verb, args := args[0], args[1:]
	fs := newFlagSet("rule "+verb, stderr)
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	var until, forDur *string
	if verb == "sleep" {
		until = fs.String("until", "", "wake the rule at this time (RFC 3339, e.g. 2026-12-01T06:00:00Z)")
		forDur = fs.String("for", "", "wake the rule after this long (e.g. 90m)")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := needData(data); err != nil {
		return err
	}
	switch {
	case verb == "ls":
		if len(pos) != 0 {
			return usageError("rule ls takes no arguments")
		}
		var rs []status.RuleStatus
		if err := apiGet(ctx, *data, "/v1/rules", &rs); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, rs)
		}
		printRules(stdout, rs, time.Now())
		return nil
	case verb == "show":
		if len(pos) != 1 {
			return usageError("rule show takes one rule id")
		}
		var r status.RuleDetail
		if err := apiGet(ctx, *data, "/v1/rules/"+url.PathEscape(pos[0]), &r); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, r)
		}
		printRule(stdout, r.RuleStatus, time.Now())
		printDefinition(stdout, r)
		return nil
	case slices.Contains(status.Commands, verb):
		if len(pos) != 1 {
			return usageError(fmt.Sprintf("rule %s takes one rule id", verb))
		}
		body := map[string]any{}
		if verb == "sleep" {
			switch {
			case *until == "" && *forDur == "":
				return usageError("rule sleep needs --until TIME or --for DURATION: a rule never sleeps without a deadline")
			case *until != "" && *forDur != "":
				return usageError("rule sleep takes --until or --for, not both")
			case *until != "":
				t, err := time.Parse(time.RFC3339, *until)
				if err != nil {
					return usageError(fmt.Sprintf("rule sleep --until %q: want an RFC 3339 time such as 2026-12-01T06:00:00Z", *until))
				}
				body["until"] = t
			default:
				body["for"] = *forDur
			}
		}
		var r status.RuleStatus
		if err := apiDo(ctx, *data, "POST", "/v1/rules/"+url.PathEscape(pos[0])+"/"+verb, body, &r); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "%s: %s\n", r.ID, stateLine(r, time.Now()))
		return nil
	}
	return usageError(fmt.Sprintf("rule %s: want ls, show, %s", verb, strings.Join(status.Commands, ", ")))
}

func ruleStatus(ctx context.Context, data, id string) (status.RuleStatus, error) {
	var rs []status.RuleStatus
	if err := apiGet(ctx, data, "/v1/rules", &rs); err != nil {
		return status.RuleStatus{}, err
	}
	for _, r := range rs {
		if r.ID == id {
			return r, nil
		}
	}
	return status.RuleStatus{}, fmt.Errorf("no such rule %q", id)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stateLine says a rule's state in words: "sleeping until 06:00:00 (in
// 9m58s)", "failed since ...: reason".
func stateLine(r status.RuleStatus, now time.Time) string {
	var b strings.Builder
	b.WriteString(r.State)
	if r.Until != nil {
		fmt.Fprintf(&b, " until %s (in %s)", r.Until.Format(time.RFC3339), r.Until.Sub(now).Round(time.Second))
	} else if !r.Since.IsZero() {
		fmt.Fprintf(&b, " since %s", r.Since.Format(time.RFC3339))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, ": %s", r.Reason)
	}
	return b.String()
}

// printRules is the rules table: the state with its since or until, the
// errors counting against the budget, held steps and the run counters.
func printRules(w io.Writer, rs []status.RuleStatus, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSTATE\tSINCE/UNTIL\tERRORS\tHELD\tACTIVE\tSTARTED\tDONE\tFAILED\tCANCELLED\tSUPPRESSED\tREFUSED")
	for _, r := range rs {
		when := "since " + r.Since.Format(time.RFC3339)
		if r.Since.IsZero() {
			when = "-"
		}
		if r.Until != nil {
			when = "until " + r.Until.Format(time.RFC3339)
		}
		s := r.Stats
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", r.ID, r.State, when, r.Counted, r.Held,
			s.Active, s.Started, s.Completed, s.Failed, s.Cancelled, s.Suppressed, s.Refused)
	}
	tw.Flush()
	for _, r := range rs {
		if r.Reason != "" {
			fmt.Fprintf(w, "%s %s: %s\n", r.ID, r.State, r.Reason)
		}
		if n := len(r.Errors); n > 0 {
			e := r.Errors[n-1]
			fmt.Fprintf(w, "%s last error (%s ago, %d kept): %s\n", r.ID, now.Sub(e.Time).Round(time.Second), n, e.Err)
		}
	}
}

// printRule is one rule whole: state, counters, recent errors and the way
// it came to its state.
func printRule(w io.Writer, r status.RuleStatus, now time.Time) {
	fmt.Fprintf(w, "rule %s (%s)\n", r.ID, r.File)
	fmt.Fprintf(w, "  state     %s\n", stateLine(r, now))
	s := r.Stats
	fmt.Fprintf(w, "  runs      started %d, done %d, failed %d, cancelled %d, active %d\n",
		s.Started, s.Completed, s.Failed, s.Cancelled, s.Active)
	fmt.Fprintf(w, "  triggers  %d suppressed by single mode, cooldown or throttle, %d refused (the rule's state or max), %d held until it runs again\n",
		s.Suppressed, s.Refused, s.HeldTriggers)
	if s.Debounced > 0 || s.Throttled > 0 {
		fmt.Fprintf(w, "  flow      %d replaced by a later one (debounce), %d waiting for the throttle\n", s.Debounced, s.Throttled)
	}
	for _, sc := range r.Schedules {
		next := "not read yet"
		if sc.Next != nil {
			next = "next " + sc.Next.Format(time.RFC3339) + " (in " + sc.Next.Sub(now).Round(time.Second).String() + ")"
		}
		fmt.Fprintf(w, "  schedule  %s, missed: %s, %s\n", sc.Schedule, sc.Missed, next)
	}
	fmt.Fprintf(w, "  errors    %d since the daemon started, %d counting against the budget, %d steps held\n", s.Errors, r.Counted, r.Held)
	fmt.Fprintf(w, "  workers   %d jobs, %.3f s of worker time, longest wait %s, %d waiting now\n",
		r.Workers.Ran, r.Workers.Seconds, r.Workers.LongestWait, r.Workers.Queued)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "    %s  %s\n", e.Time.Format(time.RFC3339), e.Err)
	}
	if len(r.History) > 0 {
		fmt.Fprintln(w, "  history")
		for _, h := range r.History {
			by := ""
			if h.By != "" {
				by = "  by " + h.By
			}
			fmt.Fprintf(w, "    %s  %s%s\n", h.Time.Format(time.RFC3339), h, by)
		}
	}
}

// printDefinition is what a rule says of itself and its text as its file
// has it.
func printDefinition(w io.Writer, r status.RuleDetail) {
	if r.Description != "" {
		fmt.Fprintf(w, "  about     %s\n", r.Description)
	}
	fmt.Fprintf(w, "  defined   %s\n", r.At)
	if r.Source != "" {
		fmt.Fprintln(w, "  definition")
		for _, line := range strings.Split(strings.TrimRight(r.Source, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}
