// Package conformance holds the test that measures generated code against
// the official JSON Schema Test Suite, read in place from
// ../shared/jsonschema-test-suite beside the repository: each group's
// schema becomes the property of a fact, the directory is generated and
// compiled, and every test case is published through decoding and
// validation as a consumer would receive it. docs/CONFORMANCE.md shows the
// figures and what is left out.
package conformance
