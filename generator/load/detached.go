package load

import (
	"slices"
	"strings"
)

// settleDetached checks and resolves the schemas read where no keyword of
// their file's draft holds one: what the manifest's facts and the $refs
// point at inside a document that is not a schema as a whole (an OpenAPI
// or AsyncAPI document's #/components/schemas/PaymentCaptured), and
// everything below them. Neither the check of the file against its
// draft's meta-schema nor the resolving of its $refs from its root reaches
// them, so each is checked against that meta-schema at its place (an
// error names file, line:col and pointer, as anywhere else) and has its
// $refs resolved, which may read further such schemas (Money, which
// PaymentCaptured refers to, and Currency, which Money refers to): until
// none is left.
//
// Only the draft's meta-schema applies: a vendored meta-schema of the
// manifest's metaSchemas describes its files' roots (Iglu's requires
// "self" there), and the generated code's validator knows only the
// drafts.
func (s *Schemas) settleDetached(m *metaSchemas, errs *ErrorList) {
	for {
		var pending []*Schema
		for _, doc := range s.Docs {
			for _, r := range doc.Roots() {
				if !r.settled {
					pending = append(pending, r)
				}
			}
		}
		if len(pending) == 0 {
			return
		}
		for _, r := range pending {
			s.settle(r, m, errs)
		}
	}
}

// settle checks the detached schema r against its draft and resolves its
// $refs. What it holds of a tree settled before (a schema read earlier
// that r's tree took in) was checked with that tree, and is not again.
func (s *Schemas) settle(r *Schema, m *metaSchemas, errs *ErrorList) {
	doc := r.Doc
	var found []*RefByPath
	settled := s.resolveTree(r, errs, &found, func(t *Document) { s.addReferenced(doc, t) })
	s.RefsByPath = append(s.RefsByPath, found...)

	v, _ := doc.Lookup(r.Pointer)
	var bad ErrorList
	if r.Draft != Draft2020 || !surelyDraftValid(v) {
		m.check(doc, r.Pointer, v, m.drafts[r.Draft], &bad)
	}
	patternKeysValidAt(doc, r.Pointer, v, &bad)
	for _, e := range bad {
		if !slices.ContainsFunc(settled, func(p string) bool { return under(e.Pointer, p) }) {
			errs.Add(e)
		}
	}
}

// addReferenced records that a $ref of doc points into t: the files the
// generated code embeds, and the vendored ones, are found by following
// these (see [Schemas.Referenced]).
func (s *Schemas) addReferenced(doc, t *Document) {
	if !slices.Contains(s.refs[doc], t) {
		s.refs[doc] = append(s.refs[doc], t)
	}
}

// under reports whether the JSON pointer p is at or below place.
func under(p, place string) bool {
	rest, ok := strings.CutPrefix(p, place)
	return ok && (rest == "" || rest[0] == '/')
}
