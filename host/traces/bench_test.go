package traces

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
)

// BenchmarkNode is what the runner pays, under its lock, for a closed
// node: sampled (queued) and not (decided and let go); and what a step
// pays for its traceparent.
func BenchmarkNode(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	t0 := time.Now()
	n := runlog.Node{Run: "018f3a2b4c5d0001a1b2c3d4e5f60718", Seq: 3, Kind: runlog.KindStep, Name: "notify", Do: "http.post",
		Digest: "0123456789abcdef", Started: t0, Ended: t0, Outcome: runlog.OK}
	for _, c := range []struct {
		name  string
		ratio float64
	}{{"sampled", 1}, {"not-sampled", 0}} {
		b.Run(c.name, func(b *testing.B) {
			x, _ := New(Config{Endpoint: srv.URL, Ratio: c.ratio, MaxQueue: 1 << 20})
			defer x.Close(context.Background())
			b.ReportAllocs()
			for range b.N {
				x.Node(n)
			}
		})
	}
	b.Run("step-parent", func(b *testing.B) {
		x, _ := New(Config{Endpoint: srv.URL, Ratio: 1})
		defer x.Close(context.Background())
		b.ReportAllocs()
		for range b.N {
			x.StepParent(n.Run, "", 3)
		}
	})
}
