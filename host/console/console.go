package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// LoginPath is the page where a browser gives the API token; it and its
// style sheet are the only paths a guarded server lets through without
// one (they show nothing of the daemon).
const LoginPath = "/login.html"

// Public are the paths served without a token.
var Public = []string{LoginPath, "/login.js", "/style.css"}

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
