package load

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
)

// errNotLoaded is why a reference to a schema file that failed to load (it
// is not JSON, or not a valid schema of its draft) does not resolve. That
// file's own errors say what is wrong with it; a second error saying it
// does not exist would be false, so the callers drop this one.
var errNotLoaded = errors.New("the schema file it points at did not load")

// notLoaded reports whether the resource u (no fragment), which no loaded
// file declares, may be one of the files that failed to load: it names
// such a file by path, or such a file's text holds the URL (its $id cannot
// be read from a file that does not parse).
func (s *Schemas) notLoaded(u *url.URL) bool {
	if u.Scheme == fileScheme {
		_, failed := s.failed[strings.TrimPrefix(u.Path, "/")]
		return failed
	}
	resource := []byte(u.String())
	for _, p := range SortedKeys(s.failed) {
		if bytes.Contains(s.failed[p], resource) {
			return true
		}
	}
	return false
}

// recordFailed remembers the schema files of pass 1 that did not load,
// with their text.
func (s *Schemas) recordFailed(files []fileResult, manifest string) {
	s.failed = map[string][]byte{}
	for _, f := range files {
		if f.path != manifest && (f.doc == nil || !f.valid) {
			s.failed[f.path] = f.src
		}
	}
}
