// Command http is the first-party plugin that calls HTTP endpoints: a
// webhook, a notification service, a device's local API.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o http.wasm ./plugins/http
//
// Action `request`, config:
//
//	url:     the URL, with {{path}} placeholders filled from the trigger
//	         event (required; http:// or https://)
//	method:  default POST when there is a body, GET otherwise
//	headers: an object of header names to values, each a template
//	body:    an object (sent as JSON, its strings templated as publish's
//	         payload is) or a string (a text template, sent as it is);
//	         default: none
//	ok:      the statuses that succeed, e.g. [200, 201, 204]; default:
//	         any 2xx
//
// Every request carries the step's idempotency key as Idempotency-Key
// (unless the config sets one): the same for every delivery of one step
// of one pass of one run, so an endpoint that honours it does the effect
// once when the step runs again. A status outside ok fails the step with
// the status and the start of the body; retries are the step's, not the
// plugin's. The step's result is the response body.
//
// It needs the http capability, and the operator's allow-list of hosts
// (config: plugin: {http: {grant: [http], http: {hosts: [...]}}}).
package main

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/plugins/internal/tmpl"
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("http", "1.0.0")
	ruled.Action("request", configure).
		Doc("send an HTTP request (a webhook); URL, headers and body may take values from the trigger").
		Example(`{"url":"https://hooks.example.com/notify","body":{"text":"door {{door}} opened"}}`).
		Needs(ruled.CapHTTP)
}

type header struct {
	name  string
	value *tmpl.Template
}

func configure(cfg ruled.Config) (ruled.DoFunc, error) {
	u, err := cfg.RequireString("url")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, ruled.NewError(`http: config "url" must start with http:// or https://, not ` + strconv.Quote(u))
	}
	url, err := tmpl.Text(u)
	if err != nil {
		return nil, ruled.NewError("http: url: " + err.Error())
	}
	var body *tmpl.Template
	contentType := ""
	if b, ok := cfg.Decode("body"); ok {
		switch b := b.(type) {
		case map[string]any, []any:
			body, err = tmpl.JSON(b)
			contentType = "application/json"
		case string:
			body, err = tmpl.Text(b)
			contentType = "text/plain; charset=utf-8"
		default:
			return nil, ruled.NewError(`http: config "body" must be an object or a string`)
		}
		if err != nil {
			return nil, ruled.NewError("http: body: " + err.Error())
		}
	}
	method := strings.ToUpper(cfg.String("method", ""))
	if method == "" {
		method = "GET"
		if body != nil {
			method = "POST"
		}
	}
	var headers []header
	if h, ok := cfg.Decode("headers"); ok {
		m, isObject := h.(map[string]any)
		if !isObject {
			return nil, ruled.NewError(`http: config "headers" must be an object of names to strings`)
		}
		for name, v := range m {
			s, isString := v.(string)
			if !isString || name == "" {
				return nil, ruled.NewError(`http: header ` + strconv.Quote(name) + ` must be a string`)
			}
			t, err := tmpl.Text(s)
			if err != nil {
				return nil, ruled.NewError("http: header " + name + ": " + err.Error())
			}
			headers = append(headers, header{name, t})
		}
		slices.SortFunc(headers, func(a, b header) int { return strings.Compare(a.name, b.name) })
	}
	var ok []int
	if v, found := cfg.Decode("ok"); found {
		list, isList := v.([]any)
		for _, s := range list {
			f, isNum := s.(float64)
			if !isNum || f < 100 || f > 599 {
				isList = false
			}
			ok = append(ok, int(f))
		}
		if !isList || len(ok) == 0 {
			return nil, ruled.NewError(`http: config "ok" must be a list of HTTP statuses, e.g. [200, 204]`)
		}
	}
	return func(in *ruled.Input) ([]byte, error) {
		ev := in.Event
		req := ruled.Request{Method: method, URL: url.String(ev)}
		keyed := false
		for _, h := range headers {
			req.Header = append(req.Header, [2]string{h.name, h.value.String(ev)})
			keyed = keyed || strings.EqualFold(h.name, "Idempotency-Key")
		}
		if !keyed && in.Key() != "" {
			req.Header = append(req.Header, [2]string{"Idempotency-Key", in.Key()})
		}
		if body != nil {
			req.Body = body.Render(nil, ev)
			if ruled.Header(req.Header, "Content-Type") == "" {
				req.Header = append(req.Header, [2]string{"Content-Type", contentType})
			}
		}
		resp, err := ruled.HTTP(req)
		if err != nil {
			return nil, ruled.NewError("http: " + method + " " + req.URL + ": " + err.Error())
		}
		if good := slices.Contains(ok, resp.Status) || ok == nil && resp.Status/100 == 2; !good {
			return nil, ruled.NewError("http: " + method + " " + req.URL + ": status " + strconv.Itoa(resp.Status) + excerpt(resp.Body))
		}
		return resp.Body, nil
	}, nil
}

// excerpt is the start of a response body, for an error: enough to say
// what the endpoint complained of.
func excerpt(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	const max = 200
	s := string(b[:min(len(b), max)])
	if len(b) > max {
		s += "…"
	}
	return ": " + strings.Join(strings.Fields(s), " ")
}
