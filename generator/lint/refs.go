package lint

import (
	"strconv"
	"strings"
)

// checkRefsByPath reports each relative $ref that the loader resolved
// against its file's place in the directory (load.Schemas.RefsByPath):
// by the specification it resolves against the $id above it, to a URL
// no file declares, so a validator or generator that follows the
// specification would not find what warren found. The finding says how
// to write the reference so that every tool agrees.
func checkRefsByPath(p *pass) {
	for _, r := range p.in.Schemas.RefsByPath {
		fix := "give " + r.File + " an $id that agrees with its place, or write the $ref as a URL it declares"
		if root := r.Target.Doc.Root; root != nil && root.ID != "" {
			// The target by the URL its own file declares, which
			// resolves the same everywhere.
			to := root.ID
			if ptr := strings.TrimPrefix(r.Target.Location(), r.Target.Doc.Path); ptr != "" {
				to += ptr
			}
			fix = "write it as " + strconv.Quote(to) + ", the URL " + r.File + " declares"
		}
		p.report(r.Doc, r.Pointer, "$ref %s resolves against $id %s to %s, which no file declares; warren resolved it against this file's place in the directory, to %s, which tools that follow the specification do not do: %s",
			strconv.Quote(r.Ref), strconv.Quote(r.Base), strconv.Quote(r.URL), r.Target.Location(), fix)
	}
}
