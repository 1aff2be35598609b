// Command benchratio reads `go test -bench` output written in rounds (a line
// "round N" before each round) and prints, for each benchmark, the median
// ns/op over the rounds, and for each comparison the median of the
// per-round ratios: both sides of a ratio come from the same round, so slow
// drift on a noisy machine hits them alike.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type ratio struct {
	name, num, den string
	target         string // e.g. "<= 2" or ">= 10"
	// perSecond reports den/num: a throughput ratio from ns/op.
	perSecond bool
	// diffUS reports num − den in microseconds instead of a ratio: an
	// overhead per operation (target in µs).
	diffUS bool
}

var ratios = []ratio{
	{"when: ruled Go SDK / native Go (json decode + check)", "When/ruled-go", "When/native-json", "<= 2", false, false},
	{"when: ruled AssemblyScript SDK / native Go", "When/ruled-as", "When/native-json", "<= 1.5", false, false},
	{"when: ruled Go SDK / expr-lang natively (json→map + run)", "When/ruled-go", "When/native-expr", "", false, false},
	{"when, event already decoded: ruled Go / native Go", "When/ruled-go-marginal", "When/native-json", "", false, false},
	{"when, event already decoded: ruled AS / native Go", "When/ruled-as-marginal", "When/native-json", "", false, false},
	{"when: Extism (go-pdk, json) / ruled Go SDK", "Extism/when", "When/ruled-go", ">= 10", false, false},
	{"no-op call: Extism / ruled Go SDK", "Extism/noop", "Noop/ruled-go", "", false, false},
	{"no-op call: Extism / ruled AS SDK", "Extism/noop", "Noop/ruled-as", "", false, false},
	{"runaway protection on / off (Go when)", "When/ruled-go", "When/ruled-go-unprotected", "<= 1.5", false, false},
	{"interpreter / compiler (Go when)", "When/ruled-go-interpreter", "When/ruled-go", "", false, false},
	{"interpreter / compiler (AS when)", "When/ruled-as-interpreter", "When/ruled-as", "", false, false},
	{"load Go plugin: cold / warm cache", "Load/go-cold", "Load/go-warm", "", false, false},
	{"load AS plugin: cold / warm cache", "Load/as-cold", "Load/as-warm", "", false, false},
	{"end-to-end events/s: daemon / direct (decode + the same plugin calls)", "EndToEnd/daemon", "EndToEnd/direct", ">= 0.7", true, false},
	{"end-to-end events/s: latency histograms on / off", "EndToEnd/daemon", "EndToEnd/daemon-no-latency", ">= 0.95", true, false},
	{"end-to-end events/s, 3-step rule: execution log on / off (interleaved turns)", "ExecLog", "ExecLog (off)", ">= 0.9", true, false},
	{"CPU per run (every goroutine's), 3-step rule: execution log on / off", "ExecLog (cpu)", "ExecLog (off-cpu)", "", false, false},
	{"the same harness, log off on both sides: events/s side 1 / side 2 (control: 1.0 but for noise)", "ExecLogControl", "ExecLogControl (off)", "", true, false},
	{"end-to-end events/s, 3-step rule, log on both: traces sent (every run, gzip) / none (issue 45)", "Traces/gzip", "Traces/gzip (off)", ">= 0.9", true, false},
	{"CPU per run: traces sent (every run, gzip) / none", "Traces/gzip (cpu)", "Traces/gzip (off-cpu)", "", false, false},
	{"end-to-end events/s: traces sent (every run, not compressed) / none", "Traces/none", "Traces/none (off)", "", true, false},
	{"end-to-end events/s: traces sent (a tenth of runs, gzip) / none", "Traces/gzip-sampled-0.1", "Traces/gzip-sampled-0.1 (off)", "", true, false},
	{"end-to-end events/s: an endpoint set, no run sampled / none", "Traces/zero", "Traces/zero (off)", "", true, false},
	{"events/s over HTTP NDJSON: into a rule with a durable step / the same rule without", "Ingest/http-ndjson-durable", "Ingest/http-ndjson", ">= 0.3", true, false},
	{"events/s over MQTT QoS 1: into a rule with a durable step / the same rule without", "Ingest/mqtt-qos1-durable", "Ingest/mqtt-qos1", "", true, false},
	{"events/s into a rule: MQTT QoS 0 / HTTP NDJSON ingest", "Ingest/mqtt-qos0", "Ingest/http-ndjson", ">= 0.8", true, false},
	{"events/s into a rule: MQTT QoS 1 / HTTP NDJSON ingest", "Ingest/mqtt-qos1", "Ingest/http-ndjson", ">= 0.5", true, false},
	{"outbound HTTP: the http plugin on the host − net/http directly, µs per request", "HTTP/plugin", "HTTP/direct", "<= 100", false, true},
}

// nsMetric is a benchmark's own time metric besides ns/op ("cpu-ns/op",
// "off-ns/op"): it is read as a benchmark of its own, named after the
// benchmark and the metric's prefix ("ExecLog (off)").
var nsMetric = regexp.MustCompile(`\s([\d.]+) ([a-z][a-z-]*)-ns/op`)

var line = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op`)

func main() {
	flag.Parse()
	f := os.Stdin
	if flag.NArg() > 0 {
		var err error
		if f, err = os.Open(flag.Arg(0)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	rounds := []map[string]float64{{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		t := sc.Text()
		if strings.HasPrefix(t, "round ") {
			if len(rounds[len(rounds)-1]) > 0 {
				rounds = append(rounds, map[string]float64{})
			}
			continue
		}
		if m := line.FindStringSubmatch(t); m != nil {
			v, _ := strconv.ParseFloat(m[3], 64)
			rounds[len(rounds)-1][m[1]] = v
			for _, c := range nsMetric.FindAllStringSubmatch(t, -1) {
				v, _ := strconv.ParseFloat(c[1], 64)
				rounds[len(rounds)-1][m[1]+" ("+c[2]+")"] = v
			}
		}
	}
	names := map[string]bool{}
	for _, r := range rounds {
		for n := range r {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	fmt.Printf("%d rounds; medians\n\n| benchmark | ns/op | [min–max] |\n|---|---|---|\n", len(rounds))
	for _, n := range sorted {
		var vs []float64
		for _, r := range rounds {
			if v, ok := r[n]; ok {
				vs = append(vs, v)
			}
		}
		fmt.Printf("| %s | %s | [%s–%s] |\n", n, num(median(vs)), num(minOf(vs)), num(maxOf(vs)))
	}
	fmt.Printf("\n| ratio | median | [min–max] | target |\n|---|---|---|---|\n")
	for _, r := range ratios {
		var vs []float64
		for _, rd := range rounds {
			a, okA := rd[r.num]
			b, okB := rd[r.den]
			if okA && okB && a > 0 && b > 0 {
				if r.diffUS {
					vs = append(vs, (a-b)/1000)
				} else if r.perSecond {
					vs = append(vs, b/a)
				} else {
					vs = append(vs, a/b)
				}
			}
		}
		if len(vs) == 0 {
			continue
		}
		m := median(vs)
		unit := "x"
		if r.diffUS {
			unit = " µs"
		}
		fmt.Printf("| %s | %.2f%s | [%.2f–%.2f] | %s %s |\n", r.name, m, unit, minOf(vs), maxOf(vs), r.target, verdict(m, r.target))
	}
}

func verdict(v float64, target string) string {
	if target == "" {
		return ""
	}
	var lim float64
	fmt.Sscanf(target[3:], "%g", &lim)
	ok := (strings.HasPrefix(target, "<=") && v <= lim) || (strings.HasPrefix(target, ">=") && v >= lim)
	if ok {
		return "(met)"
	}
	return "(MISSED)"
}

func num(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1f ms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.2f µs", v/1e3)
	}
	return fmt.Sprintf("%.0f ns", v)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
