// Package server exposes testdbd over gRPC (with reflection and the standard
// health service) and over REST through grpc-gateway, with /healthz,
// /openapi.json and /metrics beside the API. REST bodies are read whole
// within limits (body.go), and large requests of both, uploaded
// migrations, are held within one budget of bytes (budget.go).
//
// It is the only package besides cmd and client that imports the generated
// API types (api/): it converts between them and the domain types of lease
// and templates, and maps error codes to gRPC statuses in one table
// (errors.go). It imports lease, templates, stats and the root package.
package server
