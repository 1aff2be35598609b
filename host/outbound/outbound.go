package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Policy is what one plugin may reach.
type Policy struct {
	// Hosts the plugin may send requests to: "api.example.com",
	// "*.example.com" (any name under it, not itself), an IP literal
	// ("203.0.113.9"; a non-public one belongs in Private); each with an
	// optional ":port" — without one, ports 80 and 443 only; ":*" any
	// port. Names compare without case.
	Hosts []string
	// Private are hosts, in the same form, that may lead to a private,
	// loopback, link-local or otherwise non-public address: a device's
	// own network, allowed by name. A host here need not be in Hosts too.
	Private []string
	// MaxRequest and MaxResponse bound the request's and the response's
	// body. defaults: 1 MiB and 1 MiB.
	MaxRequest, MaxResponse int
}

// Defaults of a Policy's bounds, and the longest a request may take
// whatever the step's deadline.
const (
	DefaultMaxRequest  = 1 << 20
	DefaultMaxResponse = 1 << 20
	MaxTimeout         = 5 * time.Minute
	maxRedirects       = 5
)

// Reasons a request is refused (Refusal.Reason, Stats.Refused).
const (
	ReasonScheme           = "scheme"             // not http or https, or no host
	ReasonHost             = "host"               // not on the plugin's allow-list
	ReasonPrivate          = "private"            // it leads to a non-public address the policy does not allow by name
	ReasonRedirect         = "redirect"           // a redirect to a host the policy does not allow, or too many
	ReasonRequestTooLarge  = "request-too-large"  // the request body is over MaxRequest
	ReasonResponseTooLarge = "response-too-large" // the response body is over MaxResponse
	ReasonNoPolicy         = "no-policy"          // the plugin has no hosts at all
	ReasonBadRequest       = "bad-request"        // a method or header net/http cannot send
)

// Refusal is a request refused before or while it was sent. Status is
// the ABI status the guest gets: StatusDenied for a host or address it
// may not reach, StatusTooLarge for a body over its bound.
type Refusal struct {
	Reason string
	Detail string
}

func (r *Refusal) Error() string { return "outbound http refused (" + r.Reason + "): " + r.Detail }

// Status is the ABI status of the refusal (host/wasm reads it).
func (r *Refusal) Status() abi.Status {
	switch r.Reason {
	case ReasonRequestTooLarge, ReasonResponseTooLarge:
		return abi.StatusTooLarge
	case ReasonBadRequest:
		return abi.StatusBadInput
	}
	return abi.StatusDenied
}

// Logger is where the client says what it refused.
type Logger interface {
	Warn(msg string, args ...any)
}

// Resolver looks host names up (net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is what a Client is built from.
type Config struct {
	// Policy returns a plugin's policy; false: the plugin may reach
	// nothing.
	Policy func(plugin string) (Policy, bool)
	// Resolver resolves names as they are dialed. default:
	// net.DefaultResolver.
	Resolver Resolver
	// UserAgent is sent when the plugin sets none. default: "ruled".
	UserAgent string
	Log       Logger
}

// Stats counts what the client did.
type Stats struct {
	Requests uint64            `json:"requests"` // sent, and answered with any status
	Failed   uint64            `json:"failed"`   // sent and not answered: network error, timeout
	Refused  map[string]uint64 `json:"refused"`  // by reason
}

// Client sends plugins' requests. It is safe for concurrent use.
type Client struct {
	cfg Config

	mu         sync.Mutex
	transports map[string]*http.Transport // by plugin
	refused    map[string]uint64
	warns      lograte.Limiter // refusals' warnings, by plugin and reason

	requests, failed atomic.Uint64
}

// New returns a Client.
func New(cfg Config) *Client {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "ruled"
	}
	if cfg.Policy == nil {
		cfg.Policy = func(string) (Policy, bool) { return Policy{}, false }
	}
	return &Client{cfg: cfg, transports: map[string]*http.Transport{}, refused: map[string]uint64{}}
}

// Close closes the idle connections of every plugin.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
	return nil
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := make(map[string]uint64, len(c.refused))
	for k, v := range c.refused {
		r[k] = v
	}
	return Stats{Requests: c.requests.Load(), Failed: c.failed.Load(), Refused: r}
}

// refuse counts a refusal and logs it, at most once a second for each
// plugin and reason: a plugin that loops on a refused request must not
// flood the daemon's log (the counters keep every one).
func (c *Client) refuse(plugin, reason, detail string) error {
	c.mu.Lock()
	c.refused[reason]++
	c.mu.Unlock()
	if folded, ok := c.warns.Allow(plugin + "\x00" + reason); ok && c.cfg.Log != nil {
		c.cfg.Log.Warn("outbound http refused", "plugin", plugin, "reason", reason, "detail", detail,
			"folded", folded, "next-log-within", lograte.Every.String())
	}
	return &Refusal{Reason: reason, Detail: detail}
}

// Do sends plugin's request, until ctx's deadline (at most MaxTimeout),
// and returns the response with its body read whole. A request the
// policy refuses returns a *Refusal; one that was sent and not answered
// returns the network's error.
func (c *Client) Do(ctx context.Context, plugin string, r abi.HTTPRequest) (abi.HTTPResponse, error) {
	p, ok := c.cfg.Policy(plugin)
	if !ok || len(p.Hosts)+len(p.Private) == 0 {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonNoPolicy, "no hosts are allowed to this plugin (config: plugin: {"+plugin+": {http: {hosts: [...]}}})")
	}
	maxReq, maxResp := or(p.MaxRequest, DefaultMaxRequest), or(p.MaxResponse, DefaultMaxResponse)
	if len(r.Body) > maxReq {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonRequestTooLarge, fmt.Sprintf("a body of %d bytes, over %d", len(r.Body), maxReq))
	}
	head := len(r.URL) + len(r.Method)
	for _, h := range r.Header {
		head += len(h[0]) + len(h[1]) + 4
		if !httpguts.ValidHeaderFieldName(h[0]) || !httpguts.ValidHeaderFieldValue(h[1]) {
			return abi.HTTPResponse{}, c.refuse(plugin, ReasonBadRequest, fmt.Sprintf("header %q: not a valid header name and value", h[0]))
		}
	}
	if head > MaxHead {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonRequestTooLarge, fmt.Sprintf("a URL and headers of %d bytes, over %d", head, MaxHead))
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonScheme, fmt.Sprintf("%s: want an absolute http:// or https:// URL", redact(r.URL)))
	}
	if !allowed(p, u) {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonHost, fmt.Sprintf("%s is not among the plugin's hosts", u.Host))
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	ctx, cancel := context.WithTimeout(ctx, MaxTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(r.Body))
	if err != nil {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonBadRequest, err.Error())
	}
	for _, h := range r.Header {
		if hopByHop(h[0]) {
			continue // the URL names the host; the checks are on it; no upgrade
		}
		req.Header.Add(h[0], h[1])
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.cfg.UserAgent)
	}
	hc := &http.Client{Transport: c.transport(plugin, p), CheckRedirect: func(next *http.Request, via []*http.Request) error {
		switch {
		case len(via) > maxRedirects:
			return c.refuse(plugin, ReasonRedirect, fmt.Sprintf("more than %d redirects", maxRedirects))
		case next.URL.Scheme != "http" && next.URL.Scheme != "https" || !allowed(p, next.URL):
			return c.refuse(plugin, ReasonRedirect, fmt.Sprintf("a redirect to %s, which is not among the plugin's hosts", next.URL.Redacted()))
		case via[len(via)-1].URL.Scheme == "https" && next.URL.Scheme == "http":
			return c.refuse(plugin, ReasonRedirect, fmt.Sprintf("a redirect from https to %s, in the clear", next.URL.Redacted()))
		}
		return nil
	}}
	resp, err := hc.Do(req)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return abi.HTTPResponse{}, ref
		}
		c.failed.Add(1)
		return abi.HTTPResponse{}, fmt.Errorf("outbound http: %s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	// A read of the body must not outlive the deadline: net/http stops
	// watching the context once it has handed over a body it no longer
	// owns (a 101 upgrade), and a server that answers and then stalls
	// would hold the guest inside the host call.
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	if resp.StatusCode < 200 {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonBadRequest, fmt.Sprintf("%s answered %d: a final status must be 2xx-5xx", u.Host, resp.StatusCode))
	}
	out := abi.HTTPResponse{Status: resp.StatusCode}
	size := 0
	for k, vs := range resp.Header {
		for _, v := range vs {
			out.Header = append(out.Header, [2]string{k, v})
			size += len(k) + len(v) + 8
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max(maxResp-size, 0))+1))
	if err != nil {
		c.failed.Add(1)
		return abi.HTTPResponse{}, fmt.Errorf("outbound http: %s %s: reading the response: %w", method, u.Redacted(), err)
	}
	c.requests.Add(1)
	if size+len(body) > maxResp {
		return abi.HTTPResponse{}, c.refuse(plugin, ReasonResponseTooLarge, fmt.Sprintf("%s answered more than %d bytes, headers and body", u.Host, maxResp))
	}
	out.Body = body
	return out, nil
}

// MaxHead bounds a request's URL and headers together.
const MaxHead = 64 << 10

// hopByHop reports whether a guest's header is one the client sets or
// refuses itself: Host (the URL names the host, and the checks are on it)
// and what would turn the connection into something else.
func hopByHop(name string) bool {
	for _, h := range [...]string{"Host", "Connection", "Upgrade", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding"} {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

// redact is a URL for a log line, without its password.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return strconv.Quote(u.Redacted())
	}
	return "an unparsable URL"
}

func or(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// transport is plugin's connection pool, dialing under its policy.
func (c *Client) transport(plugin string, p Policy) *http.Transport {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.transports[plugin]; t != nil {
		return t
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy: nil, // the checks are on the host the request reaches
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return c.dial(ctx, d, plugin, p, network, addr)
		},
		ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10, // net/http's default is 10 MiB
		TLSHandshakeTimeout:    10 * time.Second, ResponseHeaderTimeout: 0, ExpectContinueTimeout: time.Second,
	}
	c.transports[plugin] = t
	return t
}

// dial resolves addr's host itself and dials an address the policy
// allows: a public one, or any when the host is named in Policy.Private.
// Checking the address dialed, not the name, is what stops a name that
// resolves somewhere it should not.
func (c *Client) dial(ctx context.Context, d *net.Dialer, plugin string, p Policy, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	privateOK := matchAny(p.Private, host, port)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = c.cfg.Resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	var lastErr error
	for _, ip := range ips {
		ip = ip.Unmap()
		if !privateOK && !public(ip) {
			lastErr = c.refuse(plugin, ReasonPrivate, fmt.Sprintf("%s resolves to %s, a non-public address (allow it by name: http: {private: [%q]})", host, ip, net.JoinHostPort(host, port)))
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s: no address", host)
	}
	return nil, lastErr
}

// public reports whether ip is an address on the public internet.
func public(ip netip.Addr) bool {
	switch {
	case !ip.IsValid(), ip.IsLoopback(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsUnspecified(), ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// nonPublic are ranges netip's predicates leave out: carrier-grade NAT,
// the "this network" block, benchmarking, documentation, IETF protocol
// assignments, reserved, NAT64 (which can carry a private IPv4: a DNS64
// network's names are refused), site-local, 6to4 and Teredo.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("64:ff9b:1::/48"), netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("2002::/16"), netip.MustParsePrefix("2001::/32"), // 6to4 and Teredo can carry a private IPv4
}

// allowed reports whether u's host and port are on p's lists.
func allowed(p Policy, u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	h := u.Hostname()
	return matchAny(p.Hosts, h, port) || matchAny(p.Private, h, port)
}

func matchAny(list []string, host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, e := range list {
		if match(e, host, port) {
			return true
		}
	}
	return false
}

// match reports whether entry ("name", "*.suffix", an IP, each with an
// optional ":port") takes host:port.
func match(entry, host, port string) bool {
	eh, ep := entry, ""
	if h, p, err := net.SplitHostPort(entry); err == nil {
		eh, ep = h, p
	}
	eh = strings.ToLower(strings.Trim(strings.TrimSuffix(eh, "."), "[]"))
	switch {
	case ep == "*":
	case ep == "" && port != "80" && port != "443":
		return false // an entry without a port takes the web's ports only
	case ep != "" && ep != port:
		return false
	}
	if suffix, ok := strings.CutPrefix(eh, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	if a, err := netip.ParseAddr(eh); err == nil {
		b, err := netip.ParseAddr(host)
		return err == nil && a.Unmap() == b.Unmap()
	}
	return eh == host
}

// CheckHost says what is wrong with an allow-list entry, for the config's
// validation; nil if nothing.
func CheckHost(entry string) error {
	if strings.Contains(entry, "://") {
		return fmt.Errorf("http host %q: give a host (ntfy.sh, 127.0.0.1:8123), not a URL", entry)
	}
	eh := entry
	if h, p, err := net.SplitHostPort(entry); err == nil {
		eh = h
		if n, err := strconv.Atoi(p); p != "*" && (err != nil || n < 1 || n > 65535) {
			return fmt.Errorf("http host %q: the port is not a number", entry)
		}
	}
	eh = strings.TrimPrefix(eh, "*.")
	if eh == "" || strings.ContainsAny(eh, "/*?#@ ") {
		return fmt.Errorf("http host %q: want a name (api.example.com), *.example.com or an IP, with an optional :port", entry)
	}
	return nil
}
