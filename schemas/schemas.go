// Package schemas holds warren's own meta-schemas: the JSON Schemas that the
// manifest (warren.json) and the warren keywords of a fact schema must
// satisfy. They are embedded so that the generator validates its input with
// the same rules everywhere, and so that editors can point at the files.
package schemas

import _ "embed"

// Manifest is the JSON Schema of warren.json.
//
//go:embed manifest.schema.json
var Manifest []byte

// Fact is the JSON Schema of the warren keywords at the top of a fact schema
// (x-routing-key, type, title, description, x-version, deprecated,
// x-compatibility). A fact is
// also checked against the meta-schema of its file's JSON Schema draft.
//
//go:embed fact.schema.json
var Fact []byte

// Request is the JSON Schema of the warren keywords at the top of a request
// schema (x-request, x-reply, title, description, x-version, deprecated).
//
//go:embed request.schema.json
var Request []byte

// The $id of each meta-schema, under which it is compiled.
const (
	ManifestURL = "https://schemas.warren.invalid/manifest.schema.json"
	FactURL     = "https://schemas.warren.invalid/fact.schema.json"
	RequestURL  = "https://schemas.warren.invalid/request.schema.json"
)
