// Package openapi embeds the OpenAPI document generated from proto/.
package openapi

import _ "embed"

// Document is the OpenAPI (Swagger 2.0) document of the REST API.
//
//go:embed testdb.swagger.json
var Document []byte
