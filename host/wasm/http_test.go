package wasm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// httpService answers every request; while hold is set it waits for the
// request's context to end instead, as an endpoint that never answers.
type httpService struct {
	mu        sync.Mutex
	got       []string
	hold      bool
	deadlines []time.Duration // how long each request's context had left
}

func (h *httpService) Do(ctx context.Context, plugin string, req abi.HTTPRequest) (abi.HTTPResponse, error) {
	h.mu.Lock()
	h.got = append(h.got, plugin+" "+req.URL)
	if d, ok := ctx.Deadline(); ok {
		h.deadlines = append(h.deadlines, time.Until(d))
	}
	hold := h.hold
	h.mu.Unlock()
	if hold {
		<-ctx.Done()
		return abi.HTTPResponse{}, ctx.Err()
	}
	if strings.Contains(req.URL, "refused") {
		return abi.HTTPResponse{}, refusal{}
	}
	return abi.HTTPResponse{Status: 200, Header: [][2]string{{"X-Answer", "42"}}, Body: []byte("body")}, nil
}

// refusal is an error carrying an ABI status, as outbound's Refusal does.
type refusal struct{}

func (refusal) Error() string      { return "refused" }
func (refusal) Status() abi.Status { return abi.StatusDenied }

func TestOutboundHTTP(t *testing.T) {
	e := newEnv(t)
	svc := &httpService{}
	e.rt.services.HTTP = svc
	path := goPlugin(t, "host/wasm/testdata/http/go")
	if _, err := e.rt.LoadFile(context.Background(), path, Options{Name: "httptest"}); err == nil ||
		!strings.Contains(err.Error(), `needs the "http" capability`) {
		t.Fatalf("loaded without the grant: %v", err)
	}
	m := e.load(t, path, Options{Name: "httptest", Grant: []abi.Capability{abi.CapHTTP}, Limits: Limits{Timeout: 300 * time.Millisecond}})
	ctx := context.Background()

	res, err := configure(t, m, "get", `{"url":"http://h/x"}`).Act(ctx, call(t, `{"topic":"t"}`))
	if err != nil || string(res) != "42 body" {
		t.Fatalf("act: %q %v", res, err)
	}
	if len(svc.got) != 1 || svc.got[0] != "httptest http://h/x" {
		t.Errorf("requests %q", svc.got)
	}
	if len(svc.deadlines) != 1 || svc.deadlines[0] > 300*time.Millisecond {
		t.Errorf("the request's context had %v left: want at most the call's deadline", svc.deadlines)
	}

	// A refusal reaches the guest as its status.
	if _, err := configure(t, m, "get", `{"url":"http://refused/"}`).Act(ctx, call(t, `{"topic":"t"}`)); err == nil ||
		!strings.Contains(err.Error(), "denied") {
		t.Errorf("a refused host: %v", err)
	}

	// A condition may not make requests: refused, counted, nothing sent.
	before, sent := e.rt.Denied(), len(svc.got)
	if _, err := configure(t, m, "try_http", `{}`).When(ctx, call(t, `{"topic":"t"}`)); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a condition's request: %v", err)
	}
	if e.rt.Denied() != before+1 || len(svc.got) != sent {
		t.Errorf("denied %d → %d, requests %d → %d", before, e.rt.Denied(), sent, len(svc.got))
	}

	// An endpoint that never answers ends with the call's deadline: the
	// step fails, and the plugin keeps serving.
	svc.mu.Lock()
	svc.hold = true
	svc.mu.Unlock()
	_, err = configure(t, m, "get", `{"url":"http://slow/"}`).Act(ctx, call(t, `{"topic":"t"}`))
	var ce *CallError
	if err == nil || (!strings.Contains(err.Error(), "unavailable") && !(errors.As(err, &ce) && ce.Cause == CauseDeadline)) {
		t.Errorf("an endpoint past the deadline: %v", err)
	}
	svc.mu.Lock()
	svc.hold = false
	svc.mu.Unlock()
	if res, err := configure(t, m, "get", `{"url":"http://h/again"}`).Act(ctx, call(t, `{"topic":"t"}`)); err != nil || string(res) != "42 body" {
		t.Errorf("after the timeout: %q %v", res, err)
	}
}

// A compilation that runs past slowCompile is announced, and its end
// too; one that ends before it says nothing.
func TestCompileNotice(t *testing.T) {
	e := newEnv(t)
	e.rt.slowCompile = 20 * time.Millisecond
	done := e.rt.compileNotice("big", 7_100_000)
	time.Sleep(100 * time.Millisecond)
	done()
	if !e.logs.has("compiling a plugin; the next start reads it from the compilation cache: plugin=big size=\"7.1 MB\"") ||
		!e.logs.has("compiled: plugin=big") {
		t.Errorf("log:\n%s", e.logs.tail(5))
	}
	e.rt.slowCompile = time.Hour
	e.rt.compileNotice("quick", 1000)()
	if e.logs.has("plugin=quick") {
		t.Error("a quick compilation was announced")
	}
}
