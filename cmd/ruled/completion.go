package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Shell completion: `ruled completion bash|zsh|fish` prints a script that
// asks the binary itself what may come next (`ruled __complete WORDS…`),
// so the verbs, subverbs and each verb's flags are read from what the
// binary takes — its flag sets, through their -h — and never drift from
// a hand-kept list in a script.

// verbs are the first words, and the words a verb takes next.
var verbs = map[string][]string{
	"run": nil, "deploy": nil, "status": nil, "cancel": nil, "rerun": nil, "call": nil, "lint": nil, "test": nil,
	"record": nil, "version": nil, "help": nil, "keygen": nil, "sign": nil, "verify": nil, "audit": nil, "completion": {"bash", "zsh", "fish"},
	"pending": {"ls", "now", "drop"}, "state": {"ls", "show", "rm"}, "window": {"ls", "show"}, "log": {"ls", "tree", "why"}, "plugin": {"ls", "inspect"},
	"rule": {"ls", "show", "pause", "resume", "sleep", "kill", "reset"},
	"new":  {"plugin", "rules"},
}

// cmdCompletion is `ruled completion bash|zsh|fish`.
func cmdCompletion(args []string, stdout io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		return helpError("Usage: ruled completion bash|zsh|fish\n\nPrints the shell's completion script for ruled: source <(ruled completion bash).\n")
	}
	if len(args) != 1 {
		return usageError("completion: want bash, zsh or fish")
	}
	switch args[0] {
	case "bash":
		io.WriteString(stdout, bashCompletion)
	case "zsh":
		io.WriteString(stdout, zshCompletion)
	case "fish":
		io.WriteString(stdout, fishCompletion)
	default:
		return usageError(fmt.Sprintf("completion: no script for %q: want bash, zsh or fish", args[0]))
	}
	return nil
}

// cmdComplete is `ruled __complete WORDS…`: the candidates for the last
// word (possibly empty), one a line. None means "a file name".
func cmdComplete(ctx context.Context, words []string, stdout io.Writer) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	var out []string
	switch {
	case len(words) == 1:
		for v := range verbs {
			out = append(out, v)
		}
	case strings.HasPrefix(cur, "-"):
		out = flagsOf(ctx, words[:len(words)-1])
	case len(words) == 2 && verbs[words[0]] != nil:
		out = append(out, verbs[words[0]]...)
	}
	sort.Strings(out)
	for _, c := range out {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(stdout, c)
		}
	}
}

var flagLine = regexp.MustCompile(`(?m)^\s+-(\w[\w-]*)`)

// flagsOf are the flags the verb (and subverb) in words takes, as --name,
// read from its -h.
func flagsOf(ctx context.Context, words []string) []string {
	args := []string{}
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			break
		}
		args = append(args, w)
		if len(args) == 2 || verbs[w] == nil && len(args) == 1 {
			break
		}
	}
	var out, errs bytes.Buffer
	run(ctx, append(args, "-h"), strings.NewReader(""), &out, &errs)
	var flags []string
	for _, m := range flagLine.FindAllStringSubmatch(out.String()+errs.String(), -1) {
		flags = append(flags, "--"+m[1])
	}
	return flags
}

const bashCompletion = `# bash completion for ruled: source <(ruled completion bash)
_ruled() {
  local IFS=$'\n'
  COMPREPLY=($(ruled __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -o bashdefault -F _ruled ruled
`

const zshCompletion = `#compdef ruled
# zsh completion for ruled: source <(ruled completion zsh), or put it in $fpath as _ruled
_ruled() {
  local -a candidates
  candidates=("${(@f)$(ruled __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if (( ${#candidates} )) && [[ -n "${candidates[1]}" ]]; then
    compadd -- "${candidates[@]}"
  else
    _files
  fi
}
compdef _ruled ruled
`

const fishCompletion = `# fish completion for ruled: ruled completion fish | source
function __ruled_complete
    set -l words (commandline -opc)[2..-1] (commandline -ct)
    ruled __complete $words 2>/dev/null
end
complete -c ruled -a '(__ruled_complete)'
`
