package traces

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protowire"
)

// client posts OTLP/HTTP requests (protobuf, gzip) to one collector. It
// is ruled's own, not the SDK's otlptracehttp: that exporter links gRPC
// and its gateway (the daemon 46.0 MB against 31.6 MB, RATIONALE.md), for
// a request that is one POST.
type client struct {
	url     string
	shown   string // url without a password: what logs and status say
	headers [][2]string
	gzip    bool
	http    *http.Client

	mu     sync.Mutex
	cancel context.CancelFunc // the request in flight's; abort calls it
	gone   bool
}

// CheckEndpoint is the URL a collector's endpoint posts to, or why it is
// none: an http:// or https:// URL with a host (and a port from 1 to
// 65535), its path /v1/traces unless it names one.
func CheckEndpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("traces: the endpoint %q is not an http:// or https:// URL of a collector (http://localhost:4318)", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("traces: the endpoint %q has no port 1 to 65535", u.Redacted())
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u, nil
}

func newClient(cfg Config) (*client, error) {
	u, err := CheckEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	for _, h := range cfg.Headers {
		if !httpguts.ValidHeaderFieldName(h[0]) || !httpguts.ValidHeaderFieldValue(h[1]) {
			return nil, fmt.Errorf("traces: header %q is not a name and a value", h[0])
		}
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: cfg.Timeout}).DialContext,
		MaxIdleConns: 2, IdleConnTimeout: time.Minute, TLSHandshakeTimeout: cfg.Timeout, ResponseHeaderTimeout: cfg.Timeout}
	return &client{url: u.String(), shown: u.Redacted(), headers: cfg.Headers, gzip: !cfg.Uncompressed, http: &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// redacted is err with the endpoint's password taken out of its words
// (net/http's errors name the URL).
func redacted(err error, url, shown string) error {
	if url == shown {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), url, shown))
}

// ParseHeaders reads headers as OTEL_EXPORTER_OTLP_HEADERS writes them:
// name=value pairs separated by commas, each value percent-decoded.
// Refused: a name that is not an HTTP token, a value with a control
// character, and the headers the request itself sets (Host,
// Content-Type, Content-Encoding, Content-Length, Transfer-Encoding,
// Connection), which would be ignored or break it.
func ParseHeaders(s string) ([][2]string, error) {
	var out [][2]string
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("want name=value pairs separated by commas, not %q", pair)
		}
		v, err := url.PathUnescape(val)
		if err != nil {
			return nil, fmt.Errorf("header %s: the value is not percent-encoded right: %v", name, err)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, fmt.Errorf("header %s: the value holds a control character", name)
		}
		switch strings.ToLower(name) {
		case "host", "content-type", "content-encoding", "content-length", "transfer-encoding", "connection":
			return nil, fmt.Errorf("header %s is the request's own: it cannot be set", name)
		}
		out = append(out, [2]string{name, v})
	}
	return out, nil
}

// maxAnswer bounds what is read of a collector's answer.
const maxAnswer = 64 << 10

// post sends one request of n spans: how many the collector said it
// rejected and why (a partial success: the request is not sent again, as
// OTLP says), and on an error how long to wait before trying again (0:
// the exporter's backoff; -1: not again, the collector refused the
// request).
func (c *client) post(body []byte, n int) (rejected int, why string, retryAfter time.Duration, err error) {
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		return 0, "", -1, errors.New("traces: stopped")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.mu.Unlock()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", -1, err
	}
	for _, h := range c.headers {
		req.Header.Add(h[0], h[1])
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", 0, redacted(err, c.url, c.shown)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	switch {
	case resp.StatusCode == http.StatusOK:
		rejected, msg := partial(answer)
		if rejected > 0 {
			return min(int(rejected), n), fmt.Sprintf("traces: the collector rejected %d of %d spans: %s", rejected, n, clean(msg)), 0, nil
		}
		return 0, "", 0, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		wait := time.Duration(0)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return 0, "", wait, fmt.Errorf("traces: the collector answered %s", resp.Status)
	default:
		return 0, "", -1, fmt.Errorf("traces: the collector refused the request: %s%s", resp.Status, said(answer))
	}
}

// said is a refusal's body in a line, bounded, when it is text.
func said(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' && r != '\t' || r == 0xfffd }) {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}

// partial reads an ExportTraceServiceResponse's partial_success: the
// spans the collector rejected and its words. Anything it cannot read is
// no rejection (the request was answered 200).
func partial(b []byte) (rejected int64, msg string) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, ""
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return 0, ""
			}
			b = b[n:]
			continue
		}
		ps, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, ""
		}
		b = b[n:]
		for len(ps) > 0 {
			pnum, ptyp, m := protowire.ConsumeTag(ps)
			if m < 0 {
				return 0, ""
			}
			ps = ps[m:]
			switch {
			case pnum == 1 && ptyp == protowire.VarintType:
				v, m := protowire.ConsumeVarint(ps)
				if m < 0 {
					return 0, ""
				}
				rejected, ps = int64(v), ps[m:]
			case pnum == 2 && ptyp == protowire.BytesType:
				v, m := protowire.ConsumeBytes(ps)
				if m < 0 {
					return 0, ""
				}
				msg, ps = string(v), ps[m:]
			default:
				m = protowire.ConsumeFieldValue(pnum, ptyp, ps)
				if m < 0 {
					return 0, ""
				}
				ps = ps[m:]
			}
		}
	}
	return rejected, msg
}

// abort ends the request in flight and refuses the next: a stop that
// cannot wait for the collector any longer.
func (c *client) abort() {
	c.mu.Lock()
	c.gone = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

// errCause is a failure's kind for the warning's rate limit: the status
// or the network, never the words (which name addresses and ports).
func errCause(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne):
		return "network"
	case err == nil:
		return ""
	}
	s := err.Error()
	if i := strings.Index(s, "answered "); i >= 0 {
		return s[i:min(len(s), i+12)]
	}
	if i := strings.Index(s, "refused the request: "); i >= 0 {
		return s[i:min(len(s), i+24)]
	}
	return "other"
}
