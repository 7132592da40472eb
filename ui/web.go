package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

// The web UI: plain HTML, CSS and JavaScript modules in web/, embedded in
// the binary and served as they are (no build step, no Node.js to run it).
// It reads GET /api/v1/events and acts through the daemon's API.

//go:embed web/*.html web/*.js web/*.css
var webFS embed.FS

func assets() http.Handler {
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	h := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// index serves the single page; the client routes by the URL fragment.
func index(w http.ResponseWriter, _ *http.Request) {
	b, err := webFS.ReadFile("web/index.html")
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
