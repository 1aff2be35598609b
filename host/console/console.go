package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// LoginPath is the page where a browser gives the API token.
const LoginPath = "/login.html"

// Public are the paths a guarded server serves without a token: the
// login page and the page's own files, which show nothing of the daemon
// (what they show comes from the API, which asks for the token) — so a
// browser opening the console without one is sent to the login page by
// the page itself, not shown a 401 of JSON.
var Public = []string{"/", "/index.html", "/app.js", LoginPath, "/login.js", "/style.css"}

// Handler serves the console: index.html at "/", its script and style,
// and the login page. Unknown paths are 404.
func Handler() http.Handler {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	srv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Everything the page loads is its own: no inline script, no other
		// origin, not framed.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		srv.ServeHTTP(w, r)
	})
}
