package load

import (
	"slices"
	"strconv"
	"strings"
)

// propertyNamesAt returns the location of the object whose property name
// failed a propertyNames schema (schemaURL), from what can be trusted of
// the validator's error.
//
// The validator (santhosh-tekuri/jsonschema v6.0.3) stores the object's
// instance location without copying it, and the slice it stores shares
// its array with the locations of the values validated after it: the
// tokens are overwritten by whichever sibling the validator's map
// iteration visits next. A bad patternProperties regex was reported at
// /$schema, /type or /properties, differently from run to run. What stays
// right is the length of that location (depth) and the location of every
// enclosing failure (trusted), which the validator copies. Below trusted,
// the object is the one at depth that holds the name; when the
// propertyNames schema is the one of a named property (".../properties/
// patternProperties/propertyNames", ".../properties/consumers/..."),
// the object is that property. The draft meta-schemas and warren's own
// have no other kind, and each of their failures is found this way at
// exactly one place. Should several objects fit, each is returned, in
// file order: the name fails the same schema at each of them.
func propertyNamesAt(root any, trusted []string, depth int, name, schemaURL string) [][]string {
	last := ""
	_, frag, _ := strings.Cut(schemaURL, "#")
	if tokens, ok := Tokens(strings.TrimSuffix(frag, "/propertyNames")); ok && len(tokens) >= 2 && tokens[len(tokens)-2] == "properties" {
		last = tokens[len(tokens)-1]
	}
	var found [][]string
	var walk func(v any, at []string)
	walk = func(v any, at []string) {
		if len(at) < depth {
			switch x := v.(type) {
			case map[string]any:
				for _, k := range SortedKeys(x) {
					walk(x[k], append(at, k))
				}
			case []any:
				for i, e := range x {
					walk(e, append(at, strconv.Itoa(i)))
				}
			}
			return
		}
		obj, ok := v.(map[string]any)
		if _, has := obj[name]; ok && has && (last == "" || len(at) > 0 && at[len(at)-1] == last) {
			found = append(found, slices.Clone(at))
		}
	}
	if len(trusted) <= depth {
		if start, ok := Lookup(root, Pointer(trusted...)); ok {
			walk(start, slices.Clone(trusted))
		}
	}
	if len(found) == 0 {
		// Unreachable with the meta-schemas warren uses; the enclosing
		// object is still a true place.
		return [][]string{trusted}
	}
	return found
}
