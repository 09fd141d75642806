package load

import (
	"slices"
	"strings"
)

// A manifest that fails its meta-schema is still read, around the values
// the meta-schema rejected, so that the checks after the loader (bindings
// against the facts, the topology's settings) still run on the rest and a
// run prints every problem at once (docs/CLI.md, Errors): a backoff
// written as "1s" must not hide a binding that matches no fact.
//
// What is read around is left out as if it had not been written. Where
// leaving one value out would change what the values beside it mean, more
// is left out, so that no check reports a consequence of the first
// mistake as a mistake of its own:
//   - an array is left out whole (its items' places would shift);
//   - a consumer with a rejected value, or one that would take a rejected
//     value of /defaults, keeps its bindings, description and stream only:
//     its settings are checked together (prefetch against concurrency,
//     maxPriority against queueType, start against stream), and are
//     checked once the value is fixed; the same goes for a stream, which
//     keeps its bindings and description;
//   - a consumer that reads a stream that was left out reads no stream.
//
// The sections that other parts of the directory refer to by name (facts,
// imports, metaSchemas, versions, responders, sagas) and the package name
// are not read around: leaving one out would make bindings, requests or
// schema files that rely on it look wrong. A mistake there stops the run
// at the loader, as before.

// unreadableSections are the top-level manifest keys that are not read
// around (see above).
var unreadableSections = []string{"facts", "imports", "metaSchemas", "versions", "responders", "sagas", "package"}

// readAround returns the manifest's root without the values at the places
// of rejected (the meta-schema's errors of doc, already reported) and
// without what they would make misleading, or false when that leaves
// nothing that can be read: the root itself, or a section that is not
// read around, is at fault.
func (m *metaSchemas) readAround(doc *Document, rejected ErrorList) (map[string]any, bool) {
	root, ok := doc.Value.(map[string]any)
	if !ok {
		return nil, false
	}
	v := copyJSON(root).(map[string]any)
	cut := map[string]bool{}
	// Leaving a value out can fail its parent (a required property), which
	// is then left out in turn; every round removes at least one value.
	for round := 0; len(rejected) > 0; round++ {
		removed := false
		for _, e := range rejected {
			p := memberOf(v, e.Pointer)
			if p == "" || !readableAround(p) {
				return nil, false
			}
			removed = removeAt(v, p) || removed
			cut[p] = true
		}
		if !removed || round > 16 {
			return nil, false
		}
		rejected = nil
		if m.check(doc, "", v, m.manifest, &rejected) {
			break
		}
	}
	keepEssentials(root, v, cut)
	// Only optional values were left out above; a manifest that still
	// fails would break the readers, which trust the meta-schema.
	if m.manifest.Validate(v) != nil {
		return nil, false
	}
	return v, true
}

// readableAround reports whether the value at pointer may be left out and
// the rest of the manifest read (see unreadableSections).
func readableAround(pointer string) bool {
	tokens, _ := Tokens(pointer)
	return len(tokens) > 0 && !slices.Contains(unreadableSections, tokens[0])
}

// memberOf returns the pointer of the object member that holds the value
// at pointer in v: pointer itself, or, below an array, the member whose
// value the array is. It returns pointer unchanged when v has nothing
// there.
func memberOf(v any, pointer string) string {
	tokens, ok := Tokens(pointer)
	if !ok {
		return pointer
	}
	for i, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			v = x[t]
		case []any:
			return Pointer(tokens[:i]...)
		default:
			return pointer
		}
	}
	return pointer
}

// removeAt deletes the object member at pointer from v, reporting whether
// there was one.
func removeAt(v any, pointer string) bool {
	tokens, ok := Tokens(pointer)
	if !ok || len(tokens) == 0 {
		return false
	}
	parent, ok := Lookup(v, Pointer(tokens[:len(tokens)-1]...))
	obj, isObj := parent.(map[string]any)
	if !ok || !isObj {
		return false
	}
	if _, ok := obj[tokens[len(tokens)-1]]; !ok {
		return false
	}
	delete(obj, tokens[len(tokens)-1])
	return true
}

// keepEssentials reduces each consumer and stream of v with a value cut
// from it to what it is (its bindings, description and stream), and
// turns a consumer of a stream that was cut whole (or of any stream, when
// "streams" was) into one of no stream. orig is the manifest as written.
func keepEssentials(orig, v map[string]any, cut map[string]bool) {
	cutBelow := func(pointer string) bool {
		for p := range cut {
			if p == pointer || strings.HasPrefix(p, pointer+"/") {
				return true
			}
		}
		return false
	}
	streams, _ := v["streams"].(map[string]any)
	for name, s := range streams {
		if cutBelow(Pointer("streams", name)) {
			streams[name] = only(s.(map[string]any), "bindings", "description")
		}
	}
	wrote, _ := orig["streams"].(map[string]any)
	consumers, _ := v["consumers"].(map[string]any)
	for name, c := range consumers {
		obj := c.(map[string]any)
		keep := []string{"bindings", "description", "stream"}
		if s, ok := obj["stream"].(string); ok && (cut["/streams"] || wrote[s] != nil && streams[s] == nil) {
			keep = keep[:2]
		} else if !cutBelow(Pointer("consumers", name)) && !inheritsCut(obj, cut) {
			continue
		}
		consumers[name] = only(obj, keep...)
	}
}

// inheritsCut reports whether the consumer obj takes a setting from
// /defaults that was cut: the built-in default in its place need not fit
// the consumer's own settings (a maxPriority meant for the classic queue
// of a misspelt default queueType).
func inheritsCut(obj map[string]any, cut map[string]bool) bool {
	for p := range cut {
		tokens, _ := Tokens(p)
		if tokens[0] != "defaults" {
			continue
		}
		if len(tokens) == 1 {
			return true // all of /defaults
		}
		if _, own := obj[tokens[1]]; !own {
			return true
		}
	}
	return false
}

// only returns the members of obj named keys.
func only(obj map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	return out
}

// copyJSON copies the objects and arrays of a decoded JSON value, so that
// members can be left out of the copy while the document keeps what was
// written.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v // a string, json.Number, bool or nil
}
