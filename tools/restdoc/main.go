package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func main() {
	out := flag.String("o", "", "write here instead of stdout")
	openapiPath := flag.String("openapi", "api/openapi/testdb.swagger.json", "the OpenAPI document")
	protoPath := flag.String("proto", "proto/testdb/v1/testdb.proto", "the proto file, for the order of the RPCs")
	flag.Parse()
	doc, err := os.ReadFile(*openapiPath)
	if err != nil {
		fail(err)
	}
	proto, err := os.ReadFile(*protoPath)
	if err != nil {
		fail(err)
	}
	md, err := render(doc, proto)
	if err != nil {
		fail(err)
	}
	if *out == "" {
		_, err = os.Stdout.Write(md)
	} else {
		err = os.WriteFile(*out, md, 0o644)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "restdoc:", err)
	os.Exit(1)
}

type document struct {
	Info struct {
		Title, Version, Description string
	} `json:"info"`
	Paths       map[string]map[string]operation `json:"paths"`
	Definitions map[string]schema               `json:"definitions"`
}

type operation struct {
	Summary     string      `json:"summary"`
	OperationID string      `json:"operationId"`
	Parameters  []parameter `json:"parameters"`
	Responses   map[string]struct {
		Schema *schema `json:"schema"`
	} `json:"responses"`
}

type parameter struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required"`
	Type        string  `json:"type"`
	Format      string  `json:"format"`
	Description string  `json:"description"`
	Schema      *schema `json:"schema"`
}

type schema struct {
	Type        string            `json:"type"`
	Format      string            `json:"format"`
	Ref         string            `json:"$ref"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Items       *schema           `json:"items"`
	Enum        []string          `json:"enum"`
	Properties  map[string]schema `json:"properties"`
}

// endpoint is one method on one path.
type endpoint struct {
	method, path string
	op           operation
	rpc          string
}

// examples are curl calls shown under their endpoint, by RPC.
var examples = map[string]string{
	"EnsureTemplate": `curl -s -X POST localhost:8080/v1/templates -d '{"name":"app","migrations_dir":"/srv/app/migrations"}'
curl -s -X POST localhost:8080/v1/templates -d '{"name":"app","migrations":[{"name":"00001_users.sql","content":"-- +goose Up\nCREATE TABLE users (id BIGINT AUTO_INCREMENT PRIMARY KEY);"}],"seed_sql":"INSERT INTO users VALUES (1);"}'`,
	"GetTemplate":   `curl -s localhost:8080/v1/templates/app`,
	"ListTemplates": `curl -s localhost:8080/v1/templates`,
	"DeleteTemplate": `curl -s -X DELETE localhost:8080/v1/templates/app
curl -s -X DELETE 'localhost:8080/v1/templates/app?force=true'`,
	"AcquireLease": `curl -s -X POST localhost:8080/v1/leases -d '{"template":"app","strategy":"STRATEGY_SNAPSHOT","ttl_seconds":600,"worker":"gw0"}'`,
	"GetLease":     `curl -s localhost:8080/v1/leases/$LEASE_ID`,
	"ListLeases":   `curl -s 'localhost:8080/v1/leases?template=app'`,
	"RenewLease":   `curl -s -X POST localhost:8080/v1/leases/$LEASE_ID:renew -d '{"ttl_seconds":900}'`,
	"ResetLease": `curl -s -X POST localhost:8080/v1/leases/$LEASE_ID:reset -d '{}'
curl -s -X POST localhost:8080/v1/leases/$LEASE_ID:reset -d '{"strategy":"STRATEGY_ROLLBACK"}'`,
	"ReleaseLease":  `curl -s -X DELETE localhost:8080/v1/leases/$LEASE_ID`,
	"ListInstances": `curl -s localhost:8080/v1/instances`,
	"GetStats":      `curl -s localhost:8080/v1/stats`,
	"ListEvents": `curl -s 'localhost:8080/v1/events?limit=20'
curl -s 'localhost:8080/v1/events?after_seq=1234'`,
}

var rpcRE = regexp.MustCompile(`(?m)^\s*rpc\s+(\w+)\s*\(`)

func render(raw, proto []byte) ([]byte, error) {
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("the OpenAPI document: %w", err)
	}
	eps := endpoints(doc, proto)
	w := &writer{raw: raw}
	w.b.WriteString(header)
	w.index(eps)
	for _, e := range eps {
		w.endpoint(e)
	}
	if err := w.types(doc.Definitions); err != nil {
		return nil, err
	}
	return w.b.Bytes(), nil
}

// endpoints lists the document's endpoints in the order of their RPCs in
// the proto file, then by path and method.
func endpoints(doc document, proto []byte) []endpoint {
	var order []string
	for _, m := range rpcRE.FindAllSubmatch(proto, -1) {
		order = append(order, string(m[1]))
	}
	var eps []endpoint
	for path, methods := range doc.Paths {
		for method, op := range methods {
			rpc := op.OperationID[strings.LastIndex(op.OperationID, "_")+1:]
			eps = append(eps, endpoint{strings.ToUpper(method), path, op, rpc})
		}
	}
	rank := func(rpc string) int {
		if i := slices.Index(order, rpc); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.Slice(eps, func(i, j int) bool {
		if ri, rj := rank(eps[i].rpc), rank(eps[j].rpc); ri != rj {
			return ri < rj
		}
		return eps[i].path+eps[i].method < eps[j].path+eps[j].method
	})
	return eps
}

// writer accumulates the reference and the definitions it names.
type writer struct {
	b    bytes.Buffer
	raw  []byte   // the OpenAPI document, for the order of the fields
	used []string // definitions in order of first use
}

// use notes a reference to a definition and returns the definition's name.
func (w *writer) use(ref string) string {
	name := strings.TrimPrefix(ref, "#/definitions/")
	if !slices.Contains(w.used, name) {
		w.used = append(w.used, name)
	}
	return name
}

// index writes the table of endpoints, with the daemon's plain HTTP ones.
func (w *writer) index(eps []endpoint) {
	w.b.WriteString("\n## Endpoints\n\n| method | path | RPC | what it does |\n|---|---|---|---|\n")
	for _, e := range eps {
		fmt.Fprintf(&w.b, "| %s | [`%s`](#%s) | %s | %s |\n", e.method, e.path, anchor(e.method+" "+e.path), e.rpc, firstSentence(e.op.Summary))
	}
	w.b.WriteString("| GET | `/healthz` | | `{\"status\":\"SERVING\"}`; needs no token |\n")
	w.b.WriteString("| GET | `/openapi.json` | | the OpenAPI document this page is generated from |\n")
	w.b.WriteString("| GET | `/metrics` | | Prometheus metrics |\n")
	w.b.WriteString("| GET | `/`, `/ui/` | | the web dashboard, which reads this API; its files need no token |\n")
}

// endpoint writes one endpoint's section: its summary, parameters, request
// and response types, and examples.
func (w *writer) endpoint(e endpoint) {
	fmt.Fprintf(&w.b, "\n### %s %s\n\n%s\n", e.method, e.path, paragraph(e.op.Summary))
	var params []parameter
	var body *schema
	for _, p := range e.op.Parameters {
		if p.In == "body" {
			body = p.Schema
		} else {
			params = append(params, p)
		}
	}
	if len(params) > 0 {
		w.b.WriteString("\n| parameter | in | type | description |\n|---|---|---|---|\n")
		for _, p := range params {
			fmt.Fprintf(&w.b, "| `%s` | %s | %s | %s |\n", p.Name, p.In, typeName(schema{Type: p.Type, Format: p.Format}, w.use), cell(p.Description))
		}
	}
	if body != nil {
		fmt.Fprintf(&w.b, "\nRequest body: %s.\n", typeName(*body, w.use))
	}
	if r, ok := e.op.Responses["200"]; ok && r.Schema != nil {
		fmt.Fprintf(&w.b, "\nResponse: %s.\n", typeName(*r.Schema, w.use))
	}
	if ex, ok := examples[e.rpc]; ok {
		fmt.Fprintf(&w.b, "\n```sh\n%s\n```\n", ex)
	}
}

// types writes every definition: first those the endpoints named, in order
// of first use (which grows while types are written), then the ones no
// endpoint reaches (the error body, and whatever the document adds), so
// that every one is described.
func (w *writer) types(defs map[string]schema) error {
	w.b.WriteString("\n## Types\n")
	for i := 0; ; i++ {
		if i == len(w.used) {
			var rest []string
			for name := range defs {
				if !slices.Contains(w.used, name) {
					rest = append(rest, name)
				}
			}
			if len(rest) == 0 {
				return nil
			}
			sort.Strings(rest)
			w.used = append(w.used, rest...)
		}
		name := w.used[i]
		def, ok := defs[name]
		if !ok {
			return fmt.Errorf("definition %s is referenced but missing", name)
		}
		w.definition(name, def)
	}
}

// definition writes one definition's section: its description, then its
// values (an enum) or its fields.
func (w *writer) definition(name string, def schema) {
	fmt.Fprintf(&w.b, "\n### %s\n\n", display(name))
	if desc := strings.TrimSpace(def.Description); desc != "" && def.Enum == nil {
		fmt.Fprintf(&w.b, "%s\n\n", paragraph(desc))
	}
	switch {
	case def.Enum != nil:
		w.b.WriteString(enumTable(def))
	case len(def.Properties) == 0:
		w.b.WriteString("An empty object: `{}`.\n")
	default:
		w.b.WriteString("| field | type | description |\n|---|---|---|\n")
		for _, f := range fieldOrder(w.raw, name, def) {
			p := def.Properties[f]
			desc := p.Description
			if desc == "" {
				desc = p.Title
			}
			fmt.Fprintf(&w.b, "| `%s` | %s | %s |\n", f, typeName(p, w.use), cell(desc))
		}
	}
}

// header is the reference's hand-written introduction.
const header = `# REST API reference

<!-- Generated by "go run ./tools/restdoc -o docs/rest-api.md" (make generate)
from api/openapi/testdb.swagger.json, itself generated from
proto/testdb/v1/testdb.proto. Do not edit: a test fails when it is stale. -->

The daemon serves the ` + "`testdb.v1.TestDBService`" + ` gRPC service and, through
grpc-gateway, this REST API: by default on ` + "`127.0.0.1:8080`" + ` (` + "`--http-addr`" + `),
gRPC on ` + "`127.0.0.1:9090`" + `. The two are the same service; the REST handlers call
it in-process. ` + "`GET /openapi.json`" + ` serves the OpenAPI (Swagger 2.0) document.

**JSON.** Field names are the proto names (snake_case). Every field is
present in responses, set or not (empty strings, zeros, ` + "`[]`" + `). Counts and
byte sizes are JSON numbers (` + "`\"resets\": 2`" + `); the 64-bit integers that may
exceed 2^53, the largest integer a JSON number holds exactly everywhere
(the goose ` + "`version`" + `, the events' ` + "`seq`" + `), are JSON strings
(` + "`\"version\": \"3\"`" + `), as protojson writes them; requests may send them as
numbers or strings. Daemons before this one wrote every 64-bit count as a
string; the Go, Python and PHP clients read both. Enums are their names (` + "`\"STRATEGY_SNAPSHOT\"`" + `). Times
are RFC 3339 strings, or ` + "`null`" + ` when unset; durations in reports are
milliseconds as floating-point numbers with microsecond precision.
Single-resource calls (a template, a lease, a reset report) answer with the
resource itself; list calls answer with an object holding the list
(` + "`{\"leases\": [...]}`" + `).

**Authentication.** A daemon started with a token (` + "`TESTDBD_TOKEN`" + ` or
` + "`--token`" + `) wants ` + "`Authorization: Bearer <token>`" + ` (the scheme in any case) on
every call except ` + "`/healthz`" + ` and the dashboard's files (` + "`/`" + `, ` + "`/ui/`" + `); without
it the answer is 401 with code 16 (Unauthenticated). A daemon started with
` + "`--tls-cert`" + ` and ` + "`--tls-key`" + ` serves this API as HTTPS.

**Request bodies** are read whole before the call: more than 64 MiB is
answered 413 (code 8, ResourceExhausted), a body that stops arriving for
10 s 408 (code 4, DeadlineExceeded). Bodies over 1 MiB are held within
the daemon's upload budget (--upload-memory, 128 MiB by default, shared
with gRPC): a request beyond it waits its turn before its body is read.

**Errors** are JSON ([Status](#status)) with the gRPC status code and a
message that says what went wrong and what to do:

` + "```json" + `
{"code": 5, "message": "no template named \"app\": create it with EnsureTemplate (POST /v1/templates)", "details": []}
` + "```" + `

| code | name | HTTP | when |
|---|---|---|---|
| 3 | InvalidArgument | 400 | malformed JSON, unknown strategy, bad names, a migrations_dir that is not there |
| 5 | NotFound | 404 | no such template or lease |
| 9 | FailedPrecondition | 400 | the lease was released or expired; a template's migrations failed; a template with leases deleted without force |
| 8 | ResourceExhausted | 429 | no database became free within the wait timeout, or no server can be started; the message names the limit |
| 14 | Unavailable | 503 | the template is still building; a server died; the daemon is shutting down |
| 4 | DeadlineExceeded | 504 | the call ended while it waited: a template still building, a database busy with another reset |
| 16 | Unauthenticated | 401 | missing or wrong bearer token |
| 13 | Internal | 500 | a bug, or a server error the daemon did not expect |
`

func anchor(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// display names a definition as the reference shows it.
func display(def string) string {
	def = strings.TrimPrefix(def, "v1")
	def = strings.TrimPrefix(def, "TestDBService")
	switch def {
	case "rpcStatus":
		return "Status"
	case "protobufAny":
		return "Any"
	}
	return def
}

func typeName(s schema, use func(string) string) string {
	switch {
	case s.Ref != "":
		name := display(use(s.Ref))
		return fmt.Sprintf("[%s](#%s)", name, anchor(name))
	case s.Type == "array" && s.Items != nil:
		return "array of " + typeName(*s.Items, use)
	case s.Type == "string" && (s.Format == "int64" || s.Format == "uint64"):
		return "string (" + s.Format + ")"
	case s.Format != "" && s.Type != "":
		return s.Type + " (" + s.Format + ")"
	case s.Type != "":
		return s.Type
	}
	return "object"
}

// enumTable lists an enum's values with the descriptions protoc-gen-openapiv2
// folds into the enum's description (" - NAME: text" lines).
func enumTable(def schema) string {
	descs := map[string]string{}
	var intro []string
	var current string
	for _, line := range strings.Split(def.Description, "\n") {
		if rest, ok := strings.CutPrefix(line, " - "); ok {
			name, text, _ := strings.Cut(rest, ": ")
			current, descs[name] = name, text
		} else if current != "" && strings.TrimSpace(line) != "" {
			descs[current] += " " + strings.TrimSpace(line)
		} else if current == "" {
			intro = append(intro, line)
		}
	}
	var b strings.Builder
	if p := paragraph(strings.Join(intro, "\n")); p != "" {
		b.WriteString(p + "\n\n")
	}
	b.WriteString("| value | meaning |\n|---|---|\n")
	for _, v := range def.Enum {
		fmt.Fprintf(&b, "| `%s` | %s |\n", v, cell(descs[v]))
	}
	return b.String()
}

// fieldOrder returns a definition's properties in the document's order (the
// proto's field order), which a Go map loses.
func fieldOrder(raw []byte, name string, def schema) []string {
	var doc struct {
		Definitions map[string]struct {
			Properties json.RawMessage `json:"properties"`
		} `json:"definitions"`
	}
	var names []string
	if json.Unmarshal(raw, &doc) == nil {
		dec := json.NewDecoder(bytes.NewReader(doc.Definitions[name].Properties))
		depth := 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch t := tok.(type) {
			case json.Delim:
				if t == '{' || t == '[' {
					depth++
				} else {
					depth--
				}
			case string:
				if depth == 1 {
					names = append(names, t)
					var skip json.RawMessage
					if dec.Decode(&skip) != nil {
						return sortedKeys(def)
					}
				}
			}
		}
	}
	if len(names) != len(def.Properties) {
		return sortedKeys(def)
	}
	return names
}

func sortedKeys(def schema) []string {
	keys := make([]string, 0, len(def.Properties))
	for k := range def.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// paragraph joins a proto comment's lines into one paragraph.
func paragraph(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func firstSentence(s string) string {
	p := paragraph(s)
	if i := strings.Index(p, ". "); i >= 0 {
		return p[:i+1]
	}
	return p
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(paragraph(s), "|", `\|`)
}
