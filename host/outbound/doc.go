// Package outbound is plugins' outbound HTTP: the requests a plugin makes
// through the ABI's http_request (capability "http"), each checked against
// the hosts the operator allowed that plugin, so that a third party's
// module cannot be turned against the device's own network or reach
// anywhere it was not sent.
//
// A request's URL must be http or https and its host on the plugin's
// allow-list (Policy.Hosts: names, "*.example.com" for any subdomain, IP
// literals; an entry without a port takes ports 80 and 443 only, ":*"
// any). Where the name leads is checked
// as it is dialed: an address that is private, loopback, link-local,
// unspecified or multicast is refused unless the host is also named in
// Policy.Private — allowed by name, never by address range, so a public
// name that resolves to 127.0.0.1 (DNS rebinding) is refused. A redirect
// is followed only to a host the same checks allow, never from https to
// http. The request body, its URL and headers, and the response (headers
// and body) are bounded; a 1xx final answer (an upgrade nobody asked for,
// which would hand the connection over unwatched) is refused; the time a request may take is the
// calling step's deadline. Every refusal is named (Refusal.Reason) and
// counted.
//
// Each plugin has its own connection pool (one http.Transport), so a
// connection dialed under one plugin's policy is never reused under
// another's, and a slow endpoint of one plugin does not hold the others'
// connections. Proxies from the environment are not used: the checks
// are on the host the request reaches.
//
// It refuses what is not the request itself: whether a plugin holds the
// capability, and whether the call is an action (conditions may not make
// requests), are host/wasm's; retries are the step's. It owns no
// goroutine beyond net/http's idle connections, closed by Close.
package outbound
