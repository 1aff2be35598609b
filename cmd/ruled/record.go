package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const recordUsage = `Usage: ruled record [--data DIR] [--out FILE] [--for DURATION]

Records every event the running daemon dispatches — from the bus, HTTP
ingest or its events file, and what its rules publish — as NDJSON with
timestamps, until Ctrl-C or --for. A scenario replays the capture
(replay: FILE) against other rules or plugins and shows what they would
have done differently. Lines: {"at":T,"event":{...}} for an event from
outside, with "by":"rule/step" for one a rule published; {"end":T} when
recording stopped.

Flags:
`

func cmdRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("record", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), recordUsage); fs.PrintDefaults() }
	data := dataFlag(fs)
	out := fs.String("out", "-", "the capture file (- for stdout)")
	dur := fs.Duration("for", 0, "stop after this long (default: at Ctrl-C)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := needData(data); err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("record takes no arguments, got %q", pos))
	}
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://ruled/v1/events/watch", nil)
	if err != nil {
		return err
	}
	resp, err := socketClient(*data, 0).Do(req)
	if err != nil {
		return fmt.Errorf("no ruled running with --data %s (%v)", *data, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	w := stdout
	name := "stdout"
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w, name = f, *out
	}
	fmt.Fprintf(stderr, "recording the events of the daemon at %s to %s; Ctrl-C stops\n", *data, name)
	began := time.Now()
	var in, byRules, dropped int64
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var l struct {
				By      string `json:"by"`
				Dropped int64  `json:"dropped"`
			}
			json.Unmarshal(line, &l)
			switch {
			case l.Dropped > 0:
				dropped += l.Dropped
			case l.By != "":
				byRules++
			default:
				in++
			}
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
		}
		if err != nil {
			break // Ctrl-C, --for, or the daemon stopped
		}
	}
	end, _ := json.Marshal(map[string]time.Time{"end": time.Now()})
	if _, err := w.Write(append(end, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "recorded %d events from outside and %d the rules published in %v\n", in, byRules, time.Since(began).Round(time.Millisecond))
	if dropped > 0 {
		return fmt.Errorf("the recorder fell behind and lost %d events: the capture is incomplete", dropped)
	}
	if ctx.Err() == nil {
		fmt.Fprintln(stderr, "the daemon stopped the stream")
	}
	return nil
}
