package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// Render writes rows as an indented tree: one line per run and per node,
// with its outcome and how long it took; digests are cut to 12 characters.
// Stable makes the text the same for the same run shape: no times, no
// durations, run ids and digests named by order of appearance (#1, #2…;
// @1, @2…) — what golden tests compare. Lines carry no trailing padding.
func Render(w io.Writer, rows []Row, stable bool) error {
	ids, digests := map[string]string{}, map[string]string{}
	id := func(s string) string {
		if !stable {
			return s
		}
		if _, ok := ids[s]; !ok {
			ids[s] = fmt.Sprintf("#%d", len(ids)+1)
		}
		return ids[s]
	}
	digest := func(s string) string {
		if !stable {
			return "@" + s[:min(12, len(s))]
		}
		if _, ok := digests[s]; !ok {
			digests[s] = fmt.Sprintf("@%d", len(digests)+1)
		}
		return digests[s]
	}
	took := func(d time.Duration) string {
		if stable || d <= 0 {
			return ""
		}
		return fmtDuration(d)
	}
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		indent := strings.Repeat("  ", r.Depth)
		switch {
		case r.Missing != "":
			fmt.Fprintf(tw, "%srun %s\t(not in the log: never started, or deleted)\t\t\t\n", indent, id(r.Missing))
		case r.Run != nil:
			e := r.Run
			var d time.Duration
			if !e.Ended.IsZero() {
				d = e.Ended.Sub(e.Started)
			}
			line := fmt.Sprintf("%srun %s %s\t%s\t%s\t", indent, id(e.ID), e.Rule, e.Outcome, took(d))
			if !stable {
				line += e.Started.Format(time.RFC3339)
			}
			if e.Error != "" {
				line += " " + e.Error
			}
			fmt.Fprintln(tw, line)
		case r.Node != nil:
			n := r.Node
			what := n.Kind
			if n.Name != "" {
				what += " " + n.Name
			}
			if n.Do != "" {
				what += " " + n.Do
			}
			if n.Digest != "" {
				what += " " + digest(n.Digest)
			}
			out := n.Outcome
			if r.Interrupted {
				out = "open (interrupted: the process stopped here)"
			}
			var extra []string
			if n.Kind == KindTrigger && len(n.Input) > 0 {
				extra = append(extra, clip(compact(n.Input), maxShownEvent))
			}
			if len(n.Values) > 0 {
				extra = append(extra, "saw "+clip(compact(n.Values), maxShownOutput))
			}
			if n.Detail != "" {
				extra = append(extra, n.Detail)
			}
			if n.Error != "" {
				extra = append(extra, n.Error)
			}
			// Stable: the node's run and a run this step fired are named as
			// the tree names them (an idempotency key carries its run's id).
			named := func(s string) string {
				if !stable {
					return s
				}
				for _, r := range append([]string{n.Run}, n.Children...) {
					if r != "" {
						s = strings.ReplaceAll(s, r, id(r))
					}
				}
				return s
			}
			for _, e := range n.Effects {
				extra = append(extra, clip(named(e), maxShownOutput))
			}
			if len(n.Output) > 0 {
				extra = append(extra, "→ "+clip(named(compact(n.Output)), maxShownOutput))
			}
			fmt.Fprintf(tw, "%s%d %s\t%s\t%s\t%s\n", indent, n.Seq, what, out, took(n.Took()), strings.Join(extra, "; "))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// tabwriter pads every cell of a column, the last ones too.
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

// compact is v without insignificant space, or as it is when it is not
// JSON.
func compact(v []byte) string {
	var c bytes.Buffer
	if json.Compact(&c, v) == nil {
		return c.String()
	}
	return string(v)
}

// maxShownEvent is how much of a trigger's event its line shows.
const maxShownEvent = 256

// maxShownOutput is how much of a step's output a tree's line shows: the
// start says which answer it was; the whole is in the node (JSON).
const maxShownOutput = 120

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
