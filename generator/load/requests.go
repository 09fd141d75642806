package load

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/internal/suggest"
)

// Request is a schema file with a top-level x-request: a request asked of
// exactly one responder and answered once. The file's root is the request
// payload; x-reply is the reply's schema, inline or a $ref.
type Request struct {
	Doc         *Document
	Schema      *Schema // the request payload: Doc's root
	Reply       *Schema // the reply: the schema at /x-reply
	Key         string  // x-request: dotted lower-case words, the verb last
	Title       string  // title, "" when absent; names the request's Go type
	Description string
	Version     int // x-version, 1 when absent
	Deprecated  bool
}

// Path returns the request's file, relative to the schema directory.
func (r *Request) Path() string { return r.Doc.Path }

// Responder is one entry of the manifest's "responders", sorted by name:
// a service that answers requests.
type Responder struct {
	Name        string
	Pointer     string // JSON pointer to the entry in warren.json
	Description string
	Requests    []string // request keys, as written
	Prefetch    *int     // nil when not set
	Concurrency *int
	QueueType   string // "quorum", "classic" or "" when not set
}

// RequestPointer returns the JSON pointer of the i-th request key, for errors.
func (r *Responder) RequestPointer(i int) string {
	return AppendIndex(Append(r.Pointer, "requests"), i)
}

// readRequest reads a request file whose keywords satisfied the request
// meta-schema. The reply schema sits where no keyword of any draft holds
// a schema, so it is checked against the file's draft here.
func readRequest(doc *Document, root map[string]any, m *metaSchemas, errs *ErrorList) *Request {
	if !m.check(doc, "/x-reply", root["x-reply"], m.drafts[doc.Draft], errs) || !patternKeysValidAt(doc, "/x-reply", root["x-reply"], errs) {
		return nil
	}
	r := &Request{Doc: doc, Schema: doc.Root, Key: root["x-request"].(string), Version: 1}
	r.Title, _ = root["title"].(string)
	r.Description, _ = root["description"].(string)
	r.Deprecated, _ = root["deprecated"].(bool)
	if v, ok := root["x-version"].(json.Number); ok {
		r.Version, _ = strconv.Atoi(v.String())
	}
	r.Reply = doc.readAt("/x-reply", doc.Root, false)
	return r
}

// addRequest resolves the $refs of the request's reply schema (those of
// its root were resolved with the file) and records the request.
func (s *Schemas) addRequest(r *Request, errs *ErrorList) {
	var found []*RefByPath
	s.resolveTree(r.Reply, errs, &found, func(t *Document) { s.addReferenced(r.Doc, t) })
	s.RefsByPath = append(s.RefsByPath, found...)
	s.Requests = append(s.Requests, r)
}

// readResponders reads the manifest's "responders".
func readResponders(doc *Document, root map[string]any, errs *ErrorList) []*Responder {
	decls, _ := root["responders"].(map[string]any)
	var out []*Responder
	for _, name := range SortedKeys(decls) {
		obj := decls[name].(map[string]any)
		r := &Responder{Name: name, Pointer: Pointer("responders", name)}
		r.Description, _ = obj["description"].(string)
		for _, k := range obj["requests"].([]any) {
			r.Requests = append(r.Requests, k.(string))
		}
		set := readSettings(doc, r.Pointer, obj, errs)
		r.Prefetch, r.Concurrency, r.QueueType = set.Prefetch, set.Concurrency, set.QueueType
		out = append(out, r)
	}
	return out
}

// checkRequests reports what makes a request unanswerable or ambiguous: two
// files claiming one key, a request no responder answers or that two do,
// and a responder naming a request no file declares.
func (s *Schemas) checkRequests(errs *ErrorList) {
	slices.SortFunc(s.Requests, func(a, b *Request) int { return strings.Compare(a.Path(), b.Path()) })
	byKey := map[string]*Request{}
	for _, r := range s.Requests {
		if prev, ok := byKey[r.Key]; ok {
			errs.Add(r.Doc.Errorf("/x-request", "request %s is already declared by %s", strconv.Quote(r.Key), where(prev.Doc, "/x-request")))
			continue
		}
		byKey[r.Key] = r
	}
	if s.Manifest == nil {
		return
	}
	mdoc := s.Manifest.Doc
	answeredBy := map[string]*Responder{}
	for _, rs := range s.Manifest.Responders {
		for i, key := range rs.Requests {
			ptr := rs.RequestPointer(i)
			if _, ok := byKey[key]; !ok {
				errs.Add(mdoc.Errorf(ptr, "responder %s answers %s, but no schema file declares that request (expected a file with \"x-request\": %s)%s",
					strconv.Quote(rs.Name), strconv.Quote(key), strconv.Quote(key), didYouMean(key, byKey)))
				continue
			}
			if prev, ok := answeredBy[key]; ok {
				errs.Add(mdoc.Errorf(ptr, "request %s is already answered by responder %s (%s); a request has exactly one responder",
					strconv.Quote(key), strconv.Quote(prev.Name), where(mdoc, prev.RequestPointer(slices.Index(prev.Requests, key)))))
				continue
			}
			answeredBy[key] = rs
		}
	}
	for _, r := range s.Requests {
		if _, ok := answeredBy[r.Key]; !ok && byKey[r.Key] == r {
			errs.Add(r.Doc.Errorf("/x-request", "request %s has no responder: name it under \"requests\" of one entry of \"responders\" in %s", strconv.Quote(r.Key), ManifestFile))
		}
	}
}

// didYouMean suggests the declared request key closest to key.
func didYouMean(key string, declared map[string]*Request) string {
	if c, ok := suggest.Closest(key, SortedKeys(declared)); ok {
		return "; did you mean " + strconv.Quote(c) + "?"
	}
	return ""
}
