package load

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strconv"
)

// RefByPath is a relative $ref that warren resolved against its file's
// place in the schema directory because, by the letter of the
// specification, it resolves against the $id it sits under to a URL that
// no file declares. Vendored files often refer to each other by path
// ("../ref/ref.json#/$defs/Thing") while each declares an $id of its own
// that does not agree with where the files sit; other generators resolve
// such a reference on disk, and so does warren, with a warning.
type RefByPath struct {
	Doc     *Document // the referring file
	Pointer string    // JSON pointer to the $ref keyword
	Ref     string    // the $ref as written
	Base    string    // the $id it resolves against by the specification
	URL     string    // what it resolves to by the specification (no fragment), which no file declares
	File    string    // the file it was resolved to by path
	Target  *Schema   // the schema it points at
}

// undeclaredError is why a reference by URL resolves to nothing: no file
// declares the URL (resource, without fragment).
type undeclaredError struct {
	resource string
	msg      string
}

func (e *undeclaredError) Error() string { return e.msg }

// resolveIn resolves ref, written in schema from, as [Schemas.ResolveFrom]
// says; byPath is set when the reference was resolved against the file's
// place in the directory rather than against its $id.
func (s *Schemas) resolveIn(from *Schema, ref string) (t *Schema, byPath *RefByPath, err error) {
	t, err = s.resolve(from.Base, ref)
	var undeclared *undeclaredError
	if !errors.As(err, &undeclared) {
		return t, nil, err
	}
	r, perr := url.Parse(ref)
	disk := FileURI(from.Doc.Path)
	if perr != nil || r.Scheme != "" || r.Host != "" || r.Path == "" || from.Base == disk {
		return nil, nil, err // not a relative path, or already resolved on disk
	}
	onDisk, derr := s.resolve(disk, ref)
	switch {
	case errors.Is(derr, errNotLoaded):
		return nil, nil, derr
	case derr != nil:
		return nil, nil, err // no file there either: the $id's reading is the one to report
	}
	file, _ := url.Parse(disk)
	file = file.ResolveReference(r)
	file.Fragment, file.RawFragment = "", ""
	return onDisk, &RefByPath{
		Doc:     from.Doc,
		Pointer: Append(from.Pointer, "$ref"),
		Ref:     ref,
		Base:    from.Base,
		URL:     undeclared.resource,
		File:    file.Path[1:],
		Target:  onDisk,
	}, nil
}

// checkRefsByPath sorts RefsByPath and refuses a URL that references in
// different places resolve, by path, to different files: the generated
// code resolves each URL to one file. The first, in file order, stands.
func (s *Schemas) checkRefsByPath(errs *ErrorList) {
	slices.SortFunc(s.RefsByPath, func(a, b *RefByPath) int {
		return cmp.Or(cmp.Compare(a.Doc.Path, b.Doc.Path), cmp.Compare(a.Doc.Offset(a.Pointer), b.Doc.Offset(b.Pointer)))
	})
	first := map[string]*RefByPath{}
	kept := s.RefsByPath[:0]
	for _, r := range s.RefsByPath {
		prev, ok := first[r.URL]
		if ok && prev.File != r.File {
			errs.Add(r.Doc.Errorf(r.Pointer, "$ref %s: resolves against $id %s to %s, which no file declares; by this file's place it is %s, but %s resolves the same URL to %s, and one URL can name only one file: give the files $ids that agree with their places",
				strconv.Quote(r.Ref), strconv.Quote(r.Base), strconv.Quote(r.URL), r.File, where(prev.Doc, prev.Pointer), prev.File))
			continue
		}
		first[r.URL] = r
		kept = append(kept, r)
	}
	s.RefsByPath = kept
}
