// Package templates holds the text/template files of warren's outputs
// that are not Go code, embedded so that the warren binary needs no files
// beside it. Package generator/docgen parses them with its own functions
// (escaping for Markdown tables, Mermaid labels); this package only carries
// the text.
package templates

import "embed"

// FS holds the templates by file name:
//
//   - catalogue.md.tmpl: the Markdown catalogue of `warren docs`.
//
//go:embed *.tmpl
var FS embed.FS
