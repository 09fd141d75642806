// Package docgen renders a schema directory's model as documentation for
// people, the way package gogen renders it as Go: a Markdown catalogue of
// the facts, the types they share and the consumers, with a Mermaid diagram
// of the broker topology that GitHub and GitLab draw.
//
// Like gogen it returns files and writes nothing. The output is the same for
// the same directory, so a page can be committed and checked for staleness
// in CI.
package docgen

import (
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// CatalogueFile is the name of the catalogue page among the files of
// [Generate].
const CatalogueFile = "catalogue.md"

// Generate renders the documentation of m, whose schemas s are, keyed by
// file name: today the one page [CatalogueFile].
func Generate(m *model.Model, s *load.Schemas) (map[string][]byte, error) {
	page, err := Catalogue(m, s)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{CatalogueFile: page}, nil
}
