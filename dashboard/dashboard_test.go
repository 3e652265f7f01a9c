package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Result()
}

func TestHandlerServesTheEmbeddedFiles(t *testing.T) {
	h := Handler()
	for path, ctype := range map[string]string{
		"/": "text/html", "/ui/": "text/html", "/ui/index.html": "text/html",
		"/ui/app.js": "text/javascript", "/ui/style.css": "text/css", "/ui/icon.svg": "image/svg+xml",
	} {
		resp := get(t, h, "GET", path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || len(body) == 0 {
			t.Errorf("GET %s: %d %q, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
		for _, hd := range []string{"Content-Security-Policy", "ETag", "X-Content-Type-Options", "Referrer-Policy"} {
			if resp.Header.Get(hd) == "" {
				t.Errorf("GET %s: no %s header", path, hd)
			}
		}
		// A page that is already there is revalidated, not sent again.
		again := get(t, h, "GET", path, "If-None-Match", resp.Header.Get("ETag"))
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", path, again.StatusCode)
		}
	}
	for _, path := range []string{"/ui/nothing.js", "/ui/static/app.js", "/index.html", "/ui"} {
		if resp := get(t, h, "GET", path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestPublic(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/", true}, {"HEAD", "/", true}, {"GET", "/ui/", true}, {"GET", "/ui/app.js", true},
		{"GET", "/ui/style.css", true}, {"GET", "/ui/icon.svg", true}, {"GET", "/ui/index.html", true},
		{"POST", "/", false}, {"DELETE", "/ui/app.js", false},
		{"GET", "/v1/leases", false}, {"GET", "/metrics", false}, {"GET", "/openapi.json", false},
		{"GET", "/ui/../v1/leases", false}, {"GET", "/ui/nothing", false}, {"GET", "/ui", true}, {"POST", "/ui", false},
		{"GET", "//", false}, {"GET", "/favicon.ico", false},
	} {
		req := httptest.NewRequest(c.method, "http://x/", nil)
		req.URL.Path = c.path
		if got := Public(req); got != c.want {
			t.Errorf("Public(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

// TestNoExternalAssets checks that the page loads nothing from elsewhere:
// no http(s) or protocol-relative URL in any file (the SVG namespace aside),
// no inline script or style attribute (the CSP forbids them).
func TestNoExternalAssets(t *testing.T) {
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for path, a := range assets {
		body := strings.ReplaceAll(string(a.body), "http://www.w3.org/2000/svg", "")
		if m := url.FindString(body); m != "" {
			t.Errorf("%s refers to %s", path, m)
		}
		if strings.HasSuffix(path, ".html") || path == "/" || path == Prefix {
			if regexp.MustCompile(`<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=`).MatchString(body) {
				t.Errorf("%s has an inline script, style or event handler", path)
			}
		}
	}
	if a := assets["/"]; !strings.Contains(string(a.body), `<script src="/ui/app.js" defer></script>`) {
		t.Error("the page does not load /ui/app.js")
	}
}
