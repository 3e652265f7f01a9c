// Command restdoc writes docs/rest-api.md, the REST API reference, from the
// OpenAPI document generated from proto/ (api/openapi/testdb.swagger.json).
// Endpoints follow the order of the service's RPCs in the proto file.
//
//	go run ./tools/restdoc -o docs/rest-api.md     (make generate runs it)
//
// A test fails when the committed reference differs from what this writes.
package main
