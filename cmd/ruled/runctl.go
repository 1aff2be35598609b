package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/ruled-dev/ruled/host/status"
)

// cmdRunControl is `ruled cancel RUN`, `ruled rerun RUN`, `ruled pending
// now RUN` and `ruled pending drop RUN`: an operator's hand on one run,
// through the running daemon, which records in the run's tree who asked
// (this process's uid, read from the socket).
func cmdRunControl(ctx context.Context, command string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(command, stderr)
	verb := map[string]string{"cancel": "cancel", "rerun": "rerun", "now": "pending now", "drop": "pending drop"}[command]
	what := map[string]string{"cancel": "Cancels the run", "rerun": "Starts the run's rule again on its trigger",
		"now": "Runs the run's waiting step now", "drop": "Drops the run's waiting step"}[command]
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: ruled %s RUN [--data DIR] [--json]\n\n%s, through the running daemon, which\n"+
			"records who asked in the run's tree. RUN is a run's id (ruled log ls, ruled pending ls).\n\nFlags:\n", verb, what)
		fs.PrintDefaults()
	}
	data := dataFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(command + " takes one run id")
	}
	if err := needData(data); err != nil {
		return err
	}
	var res status.RunControl
	if err := apiDo(ctx, *data, "POST", "/v1/runs/"+url.PathEscape(pos[0])+"/"+command, struct{}{}, &res); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	switch command {
	case "rerun":
		fmt.Fprintf(stdout, "run %s started again as %s (by %s)\n", res.Run, res.NewRun, res.By)
	case "cancel":
		fmt.Fprintf(stdout, "run %s cancelled (by %s)\n", res.Run, res.By)
	case "now":
		fmt.Fprintf(stdout, "run %s: its waiting step runs now (by %s)\n", res.Run, res.By)
	case "drop":
		fmt.Fprintf(stdout, "run %s: its waiting step dropped (by %s)\n", res.Run, res.By)
	}
	return nil
}
