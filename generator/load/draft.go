package load

import (
	"fmt"
	"strconv"
	"strings"
)

// Draft is a version of JSON Schema that warren reads. Every difference
// between drafts that the generator cares about is settled here, once, when
// the loader turns a file into [Schema] nodes: a new draft is a new entry in
// [drafts] and, if it changes a keyword's meaning, a case in the methods
// below.
type Draft struct {
	Name    string // as people write it: "draft-07", "2020-12"
	URL     string // the canonical $schema URL
	Version int    // 4, 6, 7, 2019 or 2020: orders the drafts
}

// The drafts, oldest first. A file without $schema is read as 2020-12.
var (
	Draft4    = &Draft{Name: "draft-04", URL: "http://json-schema.org/draft-04/schema#", Version: 4}
	Draft6    = &Draft{Name: "draft-06", URL: "http://json-schema.org/draft-06/schema#", Version: 6}
	Draft7    = &Draft{Name: "draft-07", URL: "http://json-schema.org/draft-07/schema#", Version: 7}
	Draft2019 = &Draft{Name: "2019-09", URL: "https://json-schema.org/draft/2019-09/schema", Version: 2019}
	Draft2020 = &Draft{Name: "2020-12", URL: "https://json-schema.org/draft/2020-12/schema", Version: 2020}

	drafts = []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020}
)

// DefaultDraft is the draft of a file that has no $schema.
var DefaultDraft = Draft2020

func (d *Draft) String() string { return d.Name }

// draftOf finds the draft a $schema value names. Both http and https, with
// or without the empty fragment, are accepted: files in the wild write all
// four.
func draftOf(schema string) (*Draft, bool) {
	norm := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(schema, "https://"), "http://"), "#")
	for _, d := range drafts {
		if strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(d.URL, "https://"), "http://"), "#") == norm {
			return d, true
		}
	}
	return nil, false
}

// knownDrafts lists the $schema values warren reads, for an error.
func knownDrafts() string {
	urls := make([]string, len(drafts))
	for i, d := range drafts {
		urls[i] = strconv.Quote(d.URL)
	}
	return strings.Join(urls, ", ")
}

// idKeyword is the keyword that sets a schema's base URI: draft-04 spells
// it "id".
func (d *Draft) idKeyword() string {
	if d.Version == 4 {
		return "id"
	}
	return "$id"
}

// refIsAlone reports whether the keywords next to a $ref are ignored, as
// they are up to draft-07; from 2019-09 they apply as well, like allOf.
func (d *Draft) refIsAlone() bool { return d.Version <= 7 }

// tupleItems reports whether an array "items" is a tuple whose rest is
// "additionalItems" (up to 2019-09); 2020-12 writes prefixItems and items.
func (d *Draft) tupleItems() bool { return d.Version < 2020 }

// booleanExclusive reports whether exclusiveMinimum/exclusiveMaximum are
// booleans that make minimum/maximum exclusive (draft-04) rather than
// bounds of their own.
func (d *Draft) booleanExclusive() bool { return d.Version == 4 }

// anchorKeyword is the keyword that names a plain-name fragment: $anchor
// from 2019-09; before, an $id (or id) that is only a fragment ("#foo").
func (d *Draft) anchorKeyword() string {
	if d.Version >= 2019 {
		return "$anchor"
	}
	return ""
}

// dynamicKeywords are the references whose target depends on the path by
// which a value is being validated. warren maps each schema to one Go type,
// so it cannot follow them.
func (d *Draft) dynamicKeywords() []string {
	switch d.Version {
	case 2019:
		return []string{"$recursiveRef"}
	case 2020:
		return []string{"$dynamicRef"}
	}
	return nil
}

// meaning explains, for an error, what a keyword means in this draft when
// that differs from other drafts; "" when it does not.
func (d *Draft) meaning(keyword string) string {
	switch keyword {
	case "exclusiveMinimum", "exclusiveMaximum":
		bound := strings.ToLower(strings.TrimPrefix(keyword, "exclusive"))
		if d.booleanExclusive() {
			return fmt.Sprintf("in %s, %s is true or false and says whether %s is exclusive; a number here is draft-06 and later", d, keyword, bound)
		}
		return fmt.Sprintf("in %s, %s is the number itself (the exclusive bound); true/false was draft-04", d, keyword)
	case "items":
		if d.tupleItems() {
			return fmt.Sprintf("in %s, items is a schema for every element or an array of schemas (a tuple, with additionalItems for the rest)", d)
		}
		return fmt.Sprintf("in %s, items is one schema for the elements after prefixItems; a tuple is written with prefixItems", d)
	case "id", "$id":
		return fmt.Sprintf("in %s, the base URI of a schema is set by %q", d, d.idKeyword())
	case "dependencies":
		return fmt.Sprintf("in %s, dependencies maps a property to the names (array) or the schema it requires", d)
	case "$ref":
		if d.refIsAlone() {
			return fmt.Sprintf("in %s, the keywords next to a $ref are ignored", d)
		}
	}
	return ""
}

// otherSubschemas are the keywords holding one subschema that the typed
// view has no field for: they only constrain values, but what they hold is
// walked (for $id and anchors) all the same.
func (d *Draft) otherSubschemas() []string {
	var kws []string
	if d.Version >= 6 {
		kws = append(kws, "contains", "propertyNames")
	}
	if d.Version >= 7 {
		kws = append(kws, "if", "then", "else")
	}
	if d.Version >= 2019 {
		kws = append(kws, "unevaluatedItems", "unevaluatedProperties", "contentSchema")
	}
	return kws
}
