// Command ruled is the rule runtime's one binary. Each verb is a file here;
// this one only dispatches.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/ruled-dev/ruled/host/rules"
)

const usage = `ruled: a WebAssembly-pluggable rule runtime

Usage:
  ruled run --rules DIR --plugins DIR --data DIR  run the daemon
  ruled run --redis URL --data DIR [--shards N]   run it on the rules and plugins deployed there
  ruled deploy --redis URL DIR                  check DIR/rules against DIR/plugins and put both in Redis
  ruled status [--data DIR]                     the running daemon's rules, plugins and counters
  ruled pending ls [--data DIR]                 the durable steps waiting out their delay
  ruled pending now|drop RUN                    run a run's waiting step now, or drop it
  ruled state ls [--prefix P]                   the entities' states: each one's latest event
  ruled state show ID                           one entity's state, when it last changed and was seen
  ruled state rm ID...                          forget entities' states (a sensor taken away): the next report is a first
  ruled window show NAME [KEY]                  a window's value for a key: count, sum, avg, min, max …
  ruled window ls NAME                          a window's keys
  ruled cancel RUN                              cancel a live run (its steps not yet running)
  ruled rerun RUN                               start a finished run's rule again with its trigger
  ruled log ls [--rule R] [--outcome O] [--since T] the execution log's runs, newest first
  ruled log tree ID                             one run and its sub-runs as a tree
  ruled log why RULE                            why a rule started no run: its turned-away triggers by reason
  ruled rule ls [--data DIR]                    the rules' states, errors and run counters
  ruled rule show ID                            one rule: state, recent errors, its transitions
  ruled rule pause|resume|kill|reset ID         change a rule's lifecycle state
  ruled rule sleep ID --until TIME|--for DUR    put a rule to sleep until a deadline
  ruled call <module.wasm> <function> [flags]   call a condition or action once
  ruled plugin ls [--data DIR]                  the running daemon's plugins, reloads and pinned digests
  ruled plugin inspect <module.wasm> [--json]   show a plugin's digest, ABI and functions
  ruled lint <rules-dir> [--plugins dir]        check rule files, every problem at once
                                               (--config ruled.yaml: with the daemon's grants)
  ruled keygen --out FILE [--id ID]             an ed25519 key: the private half in FILE, the public half printed
  ruled sign --key FILE PATH...                 sign modules and rule files (PATH.sig beside each)
  ruled verify --trust KEY PATH...              check files' signatures against trusted keys (--revoke ID)
  ruled audit [--limit N] [--redis URL]         the audit trail: commands, deploys, files refused — who, from where
  ruled audit verify [--head HASH]              check the audit trail's hash chain
  ruled new plugin NAME [--lang go|as|rust|c]   a plugin's start: a condition, an action, a rule, a scenario, make test
  ruled new rules DIR                           a rule set's start: a rule, the plugins it uses, a scenario
  ruled test [-v] SCENARIO.yaml|DIR...          run scenario files on a virtual clock
  ruled record [--data DIR] [--out FILE]        capture the running daemon's events for a replay
  ruled version [--json]                        this build: version, commit, Go, plugin ABI, SDKs
  ruled completion bash|zsh|fish                the shell's completion script: source <(ruled completion bash)

Run "ruled <verb> -h" for a verb's flags. Exit codes: 0 done, 1 failed,
2 misused (an unknown verb or flag, a missing argument).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes: 0 done, 1 failed (the daemon could not start, a check found
// problems, a test failed, the daemon refused a command — and a bug: a
// panic is reported and exits 1, never with the runtime's 2), 2 misused
// (an unknown verb or flag, a missing argument: the usage says how).
const (
	exitOK     = 0
	exitFailed = 1
	exitMisuse = 2
)

// run executes one command line and returns the exit code (exitOK,
// exitFailed, exitMisuse).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "ruled: internal error (please report it): %v\n%s", v, debug.Stack())
			code = exitFailed
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// ruled help VERB [SUB] is VERB [SUB] -h.
	if (args[0] == "help" || args[0] == "-h" || args[0] == "--help") && len(args) > 1 {
		return run(ctx, append(args[1:], "-h"), stdin, stdout, stderr)
	}
	// A verb of subverbs (ruled pending, ruled rule …) says which it takes:
	// on stdout for -h, on stderr (a misuse) when none or an unknown one is
	// given.
	if subs, group := verbs[args[0]]; group && len(subs) > 0 && args[0] != "completion" {
		switch {
		case len(args) > 1 && isHelp(args[1]):
			fmt.Fprint(stdout, groupUsage(args[0], subs))
			return exitOK
		case len(args) == 1 || !slices.Contains(subs, args[1]):
			if len(args) > 1 {
				fmt.Fprintf(stderr, "ruled: %s: unknown subcommand %q: want %s\n", args[0], args[1], strings.Join(subs, ", "))
			}
			fmt.Fprint(stderr, groupUsage(args[0], subs))
			return exitMisuse
		}
	}
	var err error
	switch verb := args[0]; {
	case verb == "call":
		err = cmdCall(ctx, args[1:], stdin, stdout, stderr)
	case verb == "run":
		err = cmdRun(ctx, args[1:], stdin, stderr)
	case verb == "deploy":
		err = cmdDeploy(ctx, args[1:], stdout, stderr)
	case verb == "status":
		err = cmdStatus(ctx, args[1:], stdout, stderr)
	case verb == "pending" && len(args) > 1 && args[1] == "ls":
		err = cmdPending(ctx, args[2:], stdout, stderr)
	case verb == "pending" && len(args) > 1 && (args[1] == "now" || args[1] == "drop"):
		err = cmdRunControl(ctx, args[1], args[2:], stdout, stderr)
	case verb == "state" && len(args) > 1 && args[1] == "ls":
		err = cmdStateLs(ctx, args[2:], stdout, stderr)
	case verb == "state" && len(args) > 1 && args[1] == "show":
		err = cmdStateShow(ctx, args[2:], stdout, stderr)
	case verb == "state" && len(args) > 1 && args[1] == "rm":
		err = cmdStateRm(ctx, args[2:], stdout, stderr)
	case verb == "window" && len(args) > 1 && (args[1] == "ls" || args[1] == "show"):
		err = cmdWindow(ctx, args[1], args[2:], stdout, stderr)
	case verb == "cancel" || verb == "rerun":
		err = cmdRunControl(ctx, verb, args[1:], stdout, stderr)
	case verb == "log":
		err = cmdLog(ctx, args[1:], stdout, stderr)
	case verb == "rule":
		err = cmdRule(ctx, args[1:], stdout, stderr)
	case verb == "test":
		err = cmdTest(ctx, args[1:], stdout, stderr)
	case verb == "record":
		err = cmdRecord(ctx, args[1:], stdout, stderr)
	case verb == "lint":
		err = cmdLint(ctx, args[1:], stdout, stderr)
	case verb == "keygen":
		err = cmdKeygen(args[1:], stdout, stderr)
	case verb == "sign":
		err = cmdSign(args[1:], stdout, stderr)
	case verb == "verify":
		err = cmdVerify(args[1:], stdout, stderr)
	case verb == "audit":
		err = cmdAudit(ctx, args[1:], stdout, stderr)
	case verb == "new":
		err = cmdNew(ctx, args[1], args[2:], stdout, stderr)
	case verb == "plugin" && len(args) > 1 && args[1] == "ls":
		err = cmdPluginLs(ctx, args[2:], stdout, stderr)
	case verb == "plugin" && len(args) > 1 && args[1] == "inspect":
		err = cmdInspect(ctx, args[2:], stdout, stderr)
	case verb == "completion":
		err = cmdCompletion(args[1:], stdout)
	case verb == "__complete": // the completion scripts' question, not a verb of the usage
		cmdComplete(ctx, args[1:], stdout)
	case verb == "version" || verb == "--version" || verb == "-version":
		err = cmdVersion(args[1:], stdout, stderr)
	case verb == "help" || verb == "-h" || verb == "--help":
		fmt.Fprint(stdout, usage)
	default:
		names := make([]string, 0, len(verbs))
		for v := range verbs {
			names = append(names, v)
		}
		if m := rules.Suggest(verb, names); m != "" {
			fmt.Fprintf(stderr, "ruled: unknown command %q (did you mean %s?); ruled help lists them\n", verb, m)
			return 2
		}
		fmt.Fprintf(stderr, "ruled: unknown command %q\n\n%s", verb, usage)
		return 2
	}
	if err == nil {
		return 0
	}
	if h, ok := err.(helpError); ok {
		fmt.Fprint(stdout, string(h))
		return 0
	}
	if e, ok := err.(usageError); ok {
		fmt.Fprintf(stderr, "ruled: %s\n", string(e))
		return 2
	}
	fmt.Fprintf(stderr, "ruled: %v\n", err)
	return 1
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" }

// groupUsage is the usage of a verb of subverbs: its lines of the main
// usage.
func groupUsage(verb string, subs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage of ruled %s (%s):\n", verb, strings.Join(subs, ", "))
	for _, line := range strings.Split(usage, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "ruled "+verb+" ") {
			b.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&b, "\nRun \"ruled %s <subcommand> -h\" for its flags.\n", verb)
	return b.String()
}

// usageError is a command line that cannot be run.
type usageError string

func (e usageError) Error() string { return string(e) }
