package main

import (
	"bytes"
	"os"
	"testing"
)

// TestReferenceIsCurrent fails when docs/rest-api.md differs from what the
// OpenAPI document and the proto file generate.
func TestReferenceIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../api/openapi/testdb.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	proto, err := os.ReadFile("../../proto/testdb/v1/testdb.proto")
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(doc, proto)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/rest-api.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/rest-api.md is stale: run make generate (or go run ./tools/restdoc -o docs/rest-api.md) and commit it")
	}
}

// TestReferenceCoversTheAPI checks that every endpoint and definition of
// the document appears in the reference.
func TestReferenceCoversTheAPI(t *testing.T) {
	doc, _ := os.ReadFile("../../api/openapi/testdb.swagger.json")
	proto, _ := os.ReadFile("../../proto/testdb/v1/testdb.proto")
	md, err := render(doc, proto)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### POST /v1/templates", "### DELETE /v1/leases/{id}", "### POST /v1/leases/{id}:reset",
		"### GET /v1/stats", "### Lease", "### ResetReport", "### Strategy", "`STRATEGY_ROLLBACK`", "`fallback_reason`", "### Status"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}
