package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Prefix is the path the assets are served under; the page itself is also
// served at "/".
const Prefix = "/ui/"

// csp allows nothing but this origin: no external scripts, styles, fonts or
// images, no inline scripts, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// assets maps every path the dashboard serves to its file.
var assets = func() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = http.DetectContentType(b)
		}
		a := asset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		name := p[len("static/"):]
		out[Prefix+name] = a
		if name == "index.html" {
			out["/"] = a
			out[Prefix] = a
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}()

// Handler serves the page at "/" and "/ui/" and its assets under "/ui/".
// Anything else is 404.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("ETag", a.etag)
		h.Set("Cache-Control", "no-cache") // revalidate: a new daemon may serve a new page
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}

// Public reports whether r asks for one of the dashboard's files, which are
// served without a token: GET or HEAD of exactly "/", "/ui/" or an embedded
// asset's path (or "/ui", which the mux redirects to "/ui/"). Everything
// else (the API under /v1/, /metrics, /openapi.json) still needs the token.
func Public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	_, ok := assets[r.URL.Path]
	return ok || r.URL.Path == strings.TrimSuffix(Prefix, "/")
}
