package client_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd/client"
)

// openAPIDocument is the daemon's OpenAPI document, as generated from
// proto/ into api/ (and served at /openapi.json).
const openAPIDocument = "../api/openapi/testdb.swagger.json"

// apiTypes maps the OpenAPI document's definitions to the client's
// hand-written types.
var apiTypes = map[string]reflect.Type{
	"v1Template":                          reflect.TypeFor[client.Template](),
	"v1BuildTimings":                      reflect.TypeFor[client.BuildTimings](),
	"v1PoolCounts":                        reflect.TypeFor[client.PoolCounts](),
	"v1Lease":                             reflect.TypeFor[client.Lease](),
	"v1ResetReport":                       reflect.TypeFor[client.ResetReport](),
	"v1ResetPhases":                       reflect.TypeFor[client.ResetPhases](),
	"v1Instance":                          reflect.TypeFor[client.Instance](),
	"v1Setting":                           reflect.TypeFor[client.Setting](),
	"v1GetStatsResponse":                  reflect.TypeFor[client.Stats](),
	"v1StrategyStats":                     reflect.TypeFor[client.StrategyStats](),
	"v1LatencyStats":                      reflect.TypeFor[client.LatencyStats](),
	"v1MigrationFile":                     reflect.TypeFor[client.MigrationFile](),
	"v1EnsureTemplateRequest":             reflect.TypeFor[client.EnsureTemplateRequest](),
	"v1AcquireLeaseRequest":               reflect.TypeFor[client.AcquireLeaseRequest](),
	"v1Strategy":                          reflect.TypeFor[client.Strategy](),
	"v1TemplateState":                     reflect.TypeFor[client.TemplateState](),
	"v1BuildProgress":                     reflect.TypeFor[client.BuildProgress](),
	"v1ExternalBuild":                     reflect.TypeFor[client.ExternalBuild](),
	"TestDBServiceBeginTemplateBuildBody": reflect.TypeFor[beginBody](),
}

// beginBody is BeginTemplateBuildRequest without the name, which is in the
// path.
type beginBody struct {
	ContentHash string `json:"content_hash"`
	Engine      string `json:"engine"`
	PoolSize    int32  `json:"pool_size"`
	TTLSeconds  int32  `json:"ttl_seconds"`
}

// wrappers are definitions the client reads or writes through small
// anonymous structs in client.go (list responses, path-parameter bodies),
// or does not model.
var wrappers = []string{
	"v1EnsureTemplateResponse", "v1GetTemplateResponse", "v1ListTemplatesResponse", "v1DeleteTemplateResponse",
	"v1AcquireLeaseResponse", "v1GetLeaseResponse", "v1ListLeasesResponse", "v1RenewLeaseResponse",
	"v1ResetLeaseResponse", "v1ReleaseLeaseResponse", "v1ListInstancesResponse",
	"TestDBServiceRenewLeaseBody", "TestDBServiceResetLeaseBody", "rpcStatus", "protobufAny",
	// FinishTemplateBuild and AbortTemplateBuild: client.go sends their
	// bodies as maps; WatchTemplate's stream is read in builds.go.
	"TestDBServiceFinishTemplateBuildBody", "TestDBServiceAbortTemplateBuildBody", "v1FinishTemplateBuildResponse",
	"v1AbortTemplateBuildResponse", "v1WatchTemplateResponse", "Streamresultofv1WatchTemplateResponse",
	"v1BeginTemplateBuildResponse", // client.BeginTemplateBuildResponse, whose Build is a pointer: nil when there is nothing to build
	// GET /v1/events, which the dashboard reads; the Go client does not model it yet.
	"v1ListEventsResponse", "v1ResetEvent", "v1Event",
}

type schema struct {
	Type       string            `json:"type"`
	Format     string            `json:"format"`
	Ref        string            `json:"$ref"`
	Items      *schema           `json:"items"`
	Enum       []string          `json:"enum"`
	Properties map[string]schema `json:"properties"`
}

// TestTypesMatchOpenAPI compares every client type with the daemon's
// OpenAPI document: the same fields, each with the Go type its JSON needs.
// When the API changes, this test names what to change in types.go.
func TestTypesMatchOpenAPI(t *testing.T) {
	// The daemon's module generates it from proto/ (make generate); this
	// module reads it from the repository.
	b, err := os.ReadFile(openAPIDocument)
	if err != nil {
		t.Fatalf("the daemon's OpenAPI document: %v", err)
	}
	var doc struct {
		Definitions map[string]schema `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for name, def := range doc.Definitions {
		typ, ok := apiTypes[name]
		if !ok {
			if !slices.Contains(wrappers, name) {
				t.Errorf("the API has a new definition %s: add a type for it to client/types.go (and to apiTypes here)", name)
			}
			continue
		}
		if def.Enum != nil {
			checkEnum(t, name, def.Enum)
			continue
		}
		fields := jsonFields(typ)
		for prop, ps := range def.Properties {
			f, ok := fields[prop]
			if !ok {
				t.Errorf("%s.%s is in the API but not in client.%s", name, prop, typ.Name())
				continue
			}
			if why := mismatch(ps, f); why != "" {
				t.Errorf("client.%s.%s (%q): %s", typ.Name(), f.Name, prop, why)
			}
		}
		for prop := range fields {
			if _, ok := def.Properties[prop]; !ok {
				t.Errorf("client.%s has %q, which the API's %s does not", typ.Name(), prop, name)
			}
		}
	}
}

func checkEnum(t *testing.T, name string, values []string) {
	known := map[string][]string{
		"v1Strategy": {string(client.StrategyUnspecified), string(client.StrategyTruncate),
			string(client.StrategySnapshot), string(client.StrategyRollback)},
		"v1TemplateState": {"TEMPLATE_STATE_UNSPECIFIED", string(client.TemplateBuilding),
			string(client.TemplateReady), string(client.TemplateFailed), string(client.TemplateDegraded)},
	}[name]
	sort.Strings(values)
	sort.Strings(known)
	if !slices.Equal(values, known) {
		t.Errorf("%s values %v, client constants %v", name, values, known)
	}
}

type field struct {
	Name   string
	Type   reflect.Type
	String bool // the ",string" option
}

func jsonFields(typ reflect.Type) map[string]field {
	out := map[string]field{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = field{Name: f.Name, Type: f.Type, String: slices.Contains(strings.Split(opts, ","), "string")}
	}
	return out
}

// mismatch says how the Go field cannot hold the property, or "".
func mismatch(s schema, f field) string {
	t := f.Type
	if s.Ref != "" {
		want := apiTypes[strings.TrimPrefix(s.Ref, "#/definitions/")]
		if want == nil || t != want {
			return "is " + t.String() + ", want the type of " + s.Ref
		}
		return ""
	}
	switch {
	case s.Type == "array":
		if t.Kind() != reflect.Slice {
			return "is " + t.String() + ", want a slice"
		}
		return mismatch(*s.Items, field{Name: f.Name, Type: t.Elem()})
	case s.Type == "string" && (s.Format == "int64" || s.Format == "uint64"):
		if t.Kind() != reflect.Int64 && t.Kind() != reflect.Uint64 || !f.String {
			return "an int64 travels as a JSON string: want int64 with the ,string option"
		}
	case s.Type == "string" && s.Format == "date-time":
		if t != reflect.TypeFor[time.Time]() {
			return "want time.Time"
		}
	case s.Type == "string":
		if t.Kind() != reflect.String {
			return "want a string"
		}
	case s.Type == "integer" && s.Format == "int32":
		if t.Kind() != reflect.Int32 && t.Kind() != reflect.Int64 {
			return "want int32 (or int64)"
		}
	case s.Type == "integer" && s.Format == "int64": // a uint32
		if t.Kind() != reflect.Int64 {
			return "want int64"
		}
	case s.Type == "number":
		if t.Kind() != reflect.Float64 && t.Kind() != reflect.Int64 {
			return "want float64, or int64 for a whole number"
		}
	case s.Type == "boolean":
		if t.Kind() != reflect.Bool {
			return "want bool"
		}
	default:
		return "the API's type " + s.Type + "/" + s.Format + " is not handled by this test"
	}
	return ""
}

// TestNumbersReadFromStringsToo: every response field the API sends as a
// JSON number and the client holds in an int64 is read from a number and,
// as daemons before sent 64-bit counts, from a string.
func TestNumbersReadFromStringsToo(t *testing.T) {
	b, err := os.ReadFile(openAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Definitions map[string]schema `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, def := range doc.Definitions {
		typ, ok := apiTypes[name]
		if !ok || strings.HasSuffix(name, "Request") || typ.Kind() != reflect.Struct {
			continue
		}
		fields := jsonFields(typ)
		for prop, ps := range def.Properties {
			f, ok := fields[prop]
			if !ok || f.String || f.Type.Kind() != reflect.Int64 || (ps.Type != "integer" && ps.Type != "number") {
				continue
			}
			for _, in := range []string{`7`, `"7"`, `7.0`} {
				v := reflect.New(typ)
				if err := json.Unmarshal([]byte(`{"`+prop+`":`+in+`}`), v.Interface()); err != nil {
					t.Errorf("client.%s.%s from %s: %v", typ.Name(), f.Name, in, err)
					continue
				}
				if got := v.Elem().FieldByName(f.Name).Int(); got != 7 {
					t.Errorf("client.%s.%s from %s = %d, want 7", typ.Name(), f.Name, in, got)
				}
			}
			checked++
		}
	}
	if checked < 9 {
		t.Errorf("checked %d fields; the counts and byte sizes are at least 9", checked)
	}
}

// TestImportsOnlyTheDriver keeps the SDK light: the standard library and
// go-sql-driver/mysql (with its one dependency), nothing of the daemon.
func TestImportsOnlyTheDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := []string{"github.com/testdbd/testdbd/client", "github.com/go-sql-driver/mysql", "filippo.io/edwards25519", "filippo.io/edwards25519/field"}
	for _, pkg := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, pkg) {
			t.Errorf("client imports %s: its users would compile it; keep the SDK to the standard library and the MySQL driver", pkg)
		}
	}
}
