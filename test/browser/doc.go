// Package browser holds the console's browser tests: the operator's web
// page (host/console) in a real headless Chromium, driven by chromedp,
// against a real daemon on the example's rules, on bbolt and on Redis,
// with a screenshot of each page kept (.build/artifacts, or
// $RULED_ARTIFACTS).
//
// It is a Go module of its own so that the browser driver and its tree
// are in no module graph of the daemon's: a device's binary is built from
// the root module, whose go.mod names no browser. It owns no code but its
// tests; it refuses to be imported.
package browser
