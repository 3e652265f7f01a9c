package client

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// GetTemplateBuild returns the build of a template with the given hash
// (GET /v1/templates/{name}?hash=...); an empty hash means the name's
// current build, as GetTemplate.
func (c *Client) GetTemplateBuild(ctx context.Context, name, hash string) (*Template, error) {
	var t Template
	p := "/v1/templates/" + url.PathEscape(name)
	if hash != "" {
		p += "?hash=" + url.QueryEscape(hash)
	}
	if err := c.do(ctx, http.MethodGet, p, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// WatchTemplate follows a template's build (GET
// /v1/templates/{name}:watch, a stream): fn, when not nil, gets the
// template at once and whenever its build moves on. It returns the template
// as the build ended; a build that failed is also an error naming why. An
// empty hash follows the name's current build.
func (c *Client) WatchTemplate(ctx context.Context, name, hash string, fn func(*Template)) (*Template, error) {
	p := "/v1/templates/" + url.PathEscape(name) + ":watch"
	if hash != "" {
		p += "?hash=" + url.QueryEscape(hash)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+p, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("watch template %s: %w", name, ctx.Err())
		}
		return nil, c.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return nil, decodeError(resp.StatusCode, b)
	}
	var last *Template
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxResponseBytes)
	for sc.Scan() {
		var msg struct {
			Result *struct {
				Template Template `json:"template"`
			} `json:"result"`
			Error *json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			return last, fmt.Errorf("watch template %s: the daemon's answer is not the JSON expected: %w", name, err)
		}
		if msg.Error != nil {
			return last, decodeError(http.StatusInternalServerError, *msg.Error)
		}
		if msg.Result == nil {
			continue
		}
		t := msg.Result.Template
		last = &t
		if fn != nil {
			fn(last)
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return last, fmt.Errorf("watch template %s: %w", name, ctx.Err())
		}
		return last, c.unreachable(err)
	}
	if last == nil {
		return nil, fmt.Errorf("watch template %s: the stream ended without a message", name)
	}
	if last.State == TemplateFailed {
		return last, &Error{Code: CodeFailedPrecondition, Status: http.StatusConflict,
			Message: fmt.Sprintf("template %s failed to build: %s", name, last.Error)}
	}
	return last, nil
}

// BeginTemplateBuildRequest starts a build by the caller's own migrator.
type BeginTemplateBuildRequest struct {
	Name string `json:"name"`
	// ContentHash names the content the caller will build, e.g. HashFiles
	// of its migration files (1 to 128 printable characters).
	ContentHash string `json:"content_hash"`
	Engine      string `json:"engine,omitempty"`
	PoolSize    int32  `json:"pool_size,omitempty"`
	// TTLSeconds is how long the caller may take before FinishTemplateBuild;
	// 0 means the daemon's default build timeout.
	TTLSeconds int32 `json:"ttl_seconds,omitempty"`
}

// ExternalBuild is the scratch template database a caller's migrator
// builds in, with an account that owns it and reaches nothing else.
type ExternalBuild struct {
	Database  string    `json:"database"`
	Host      string    `json:"host"`
	Port      int32     `json:"port"`
	User      string    `json:"user"`
	Password  string    `json:"password"`
	DSN       string    `json:"dsn"` // go-sql-driver/mysql, multiStatements on
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
	CACert    string    `json:"ca_cert"` // as in Lease
}

// BeginTemplateBuildResponse is the template and, when there is something
// to build, where.
type BeginTemplateBuildResponse struct {
	Template Template       `json:"template"`
	Build    *ExternalBuild `json:"build"`
}

// BeginTemplateBuild starts an external build (POST
// /v1/templates/{name}:begin). When a build of the content is live, or the
// daemon's template cache holds it, Build is nil: there is nothing to run
// (wait for the template with WatchTemplate if it is still BUILDING).
func (c *Client) BeginTemplateBuild(ctx context.Context, req BeginTemplateBuildRequest) (*BeginTemplateBuildResponse, error) {
	var out BeginTemplateBuildResponse
	if err := c.do(ctx, http.MethodPost, "/v1/templates/"+url.PathEscape(req.Name)+":begin", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FinishTemplateBuild ends an external build: the database becomes the
// template (POST /v1/templates/{name}:finish), returned READY.
func (c *Client) FinishTemplateBuild(ctx context.Context, name, hash string) (*Template, error) {
	var t Template
	in := map[string]any{"hash": hash}
	if err := c.do(ctx, http.MethodPost, "/v1/templates/"+url.PathEscape(name)+":finish", in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// AbortTemplateBuild ends an external build without a template (POST
// /v1/templates/{name}:abort); reason becomes the template's error.
func (c *Client) AbortTemplateBuild(ctx context.Context, name, hash, reason string) (*Template, error) {
	var t Template
	in := map[string]any{"hash": hash, "reason": reason}
	if err := c.do(ctx, http.MethodPost, "/v1/templates/"+url.PathEscape(name)+":abort", in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// EnsureTemplateFunc builds a template with the caller's own code (a
// migrator, golang-migrate, an ORM's schema sync), or finds the build of
// contentHash that is live or cached on the daemon: build runs only when
// there is something to build, with the DSN of the scratch template
// database (go-sql-driver/mysql form, multiStatements on). An error from
// build aborts the build and is returned. The template comes back READY;
// pin leases to its Hash (AcquireLeaseRequest.TemplateHash).
func (c *Client) EnsureTemplateFunc(ctx context.Context, req BeginTemplateBuildRequest, build func(ctx context.Context, dsn string) error) (*Template, error) {
	begun, err := c.BeginTemplateBuild(ctx, req)
	if err != nil {
		return nil, err
	}
	if begun.Build == nil {
		if begun.Template.State == TemplateReady {
			return &begun.Template, nil
		}
		return c.WatchTemplate(ctx, req.Name, begun.Template.Hash, nil)
	}
	if err := build(ctx, begun.Build.DSN); err != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = c.AbortTemplateBuild(actx, req.Name, begun.Template.Hash, err.Error())
		return nil, fmt.Errorf("build template %s: %w", req.Name, err)
	}
	return c.FinishTemplateBuild(ctx, req.Name, begun.Template.Hash)
}

// HashFiles returns a SHA-256 over the files the glob patterns match
// (filepath.Glob syntax, plus "**" for any depth of directories), each
// with its path relative to the working directory and its content, in
// order of path: a ContentHash that changes when any matched file does. It
// fails when no file matches.
func HashFiles(patterns ...string) (string, error) {
	var files []string
	for _, p := range patterns {
		matched, err := globStar(p)
		if err != nil {
			return "", fmt.Errorf("pattern %q: %w", p, err)
		}
		files = append(files, matched...)
	}
	sort.Strings(files)
	files = dedupe(files)
	if len(files) == 0 {
		wd, _ := os.Getwd()
		return "", fmt.Errorf("no file matches %s in %s: run this in your project's directory, or correct the patterns", strings.Join(patterns, " "), wd)
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// globStar expands a pattern where "**" matches any number of directories.
func globStar(pattern string) ([]string, error) {
	if !strings.Contains(pattern, "**") {
		matches, err := filepath.Glob(pattern)
		return regular(matches), err
	}
	root, rest, _ := strings.Cut(pattern, "**")
	root = strings.TrimSuffix(root, string(filepath.Separator))
	if root == "" {
		root = "."
	}
	rest = strings.TrimPrefix(rest, string(filepath.Separator))
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil && p == root && errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll // no such directory: nothing matches, as with filepath.Glob
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rest == "" {
			out = append(out, p)
			return nil
		}
		// The rest matches the file's last path elements.
		parts := strings.Split(filepath.ToSlash(rel), "/")
		n := len(strings.Split(filepath.ToSlash(rest), "/"))
		if len(parts) >= n {
			if ok, _ := path.Match(filepath.ToSlash(rest), strings.Join(parts[len(parts)-n:], "/")); ok {
				out = append(out, p)
			}
		}
		return nil
	})
	return out, err
}

// regular keeps the paths that are regular files.
func regular(paths []string) []string {
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// ReadMigrationsFS reads the migrations (*.sql files) of directory dir of
// fsys, e.g. an embed.FS of goose migrations or of golang-migrate's
// NNN_name.up.sql / NNN_name.down.sql files (the daemon takes both
// layouts), for EnsureTemplateRequest.Migrations.
func ReadMigrationsFS(fsys fs.FS, dir string) ([]MigrationFile, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var files []MigrationFile
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, MigrationFile{Name: e.Name(), Content: string(b)})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .sql migrations in %s", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}
