package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// dashboard is the Grafana dashboard shipped for /metrics.
var dashboard = filepath.Join("..", "..", "dist", "grafana", "ruled.json")

// metricName finds the metric names in a PromQL expression: ruled's own
// families and the Go and process collectors'.
var metricName = regexp.MustCompile(`\b(?:ruled|process|go)_[a-z0-9_]+\b`)

// unknownMetrics are the names in expr that /metrics does not carry
// (families: Families()); a histogram's _bucket, _sum and _count are its
// family's. none says expr names no metric at all.
func unknownMetrics(expr string, families map[string]bool) (unknown []string, none bool) {
	names := metricName.FindAllString(expr, -1)
	for _, n := range names {
		if families[n] {
			continue
		}
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, suf)
		}
		if !families[base] {
			unknown = append(unknown, n)
		}
	}
	return unknown, len(names) == 0
}

// exprs walks the dashboard's JSON for every query: panels' targets'
// expr, and the template variables' queries.
func exprs(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && (k == "expr" || k == "definition" || k == "query" && strings.Contains(path, "templating")) {
				out[path+"."+k] = s
				continue
			}
			exprs(c, path+"."+k, out)
		}
	case []any:
		for i, c := range x {
			exprs(c, path+"["+strconv.Itoa(i)+"]", out)
		}
	}
}

// TestGrafanaDashboard: every query of dist/grafana/ruled.json names a
// metric family the daemon exports, and every panel queries something.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	families := map[string]bool{}
	for _, f := range Families() {
		families[f] = true
	}
	qs := map[string]string{}
	exprs(d, "", qs)
	if len(qs) < 20 {
		t.Fatalf("%d queries in %s; the dashboard has more", len(qs), dashboard)
	}
	for where, q := range qs {
		unknown, none := unknownMetrics(q, families)
		if none {
			t.Errorf("%s: %q names no metric", where, q)
		}
		if len(unknown) > 0 {
			t.Errorf("%s: %q names %v, which /metrics does not carry", where, q, unknown)
		}
	}
	for _, p := range d["panels"].([]any) {
		p := p.(map[string]any)
		if p["type"] == "row" {
			continue
		}
		if ts, _ := p["targets"].([]any); len(ts) == 0 {
			t.Errorf("panel %q has no query", p["title"])
		}
	}
}

// TestUnknownMetrics: the dashboard's check finds a misspelt family, a
// histogram's series by their family, and a query of none.
func TestUnknownMetrics(t *testing.T) {
	fam := map[string]bool{"ruled_runs_total": true, "ruled_step_seconds": true}
	for _, tc := range []struct {
		expr    string
		unknown string
		none    bool
	}{
		{`sum(rate(ruled_runs_total{outcome="failed"}[5m]))`, "", false},
		{`histogram_quantile(0.99, sum by (le) (rate(ruled_step_seconds_bucket[5m])))`, "", false},
		{`rate(ruled_run_total[5m])`, "ruled_run_total", false},
		{`rate(ruled_step_second_bucket[5m])`, "ruled_step_second_bucket", false},
		{`vector(1)`, "", true},
	} {
		unknown, none := unknownMetrics(tc.expr, fam)
		if strings.Join(unknown, ",") != tc.unknown || none != tc.none {
			t.Errorf("%s: unknown %v none %v; want %q %v", tc.expr, unknown, none, tc.unknown, tc.none)
		}
	}
}
