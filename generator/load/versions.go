package load

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// A fact may have several versions side by side: files (or manifest
// entries) that declare one routing key, each with its own x-version.
// They share the routing key; the envelope's x-fact-version header tells
// their messages apart. [Schemas.Facts] holds the newest version of each
// fact, with the older ones in [Fact.Older], so that everything that reads
// "the fact" reads what producers publish now.

// PublishVersions is one entry of the manifest's "versions": which
// versions of a fact the generated publisher publishes.
type PublishVersions struct {
	Fact    string // the routing key
	Pointer string // /versions/<key> in warren.json
	Publish []int  // ascending
}

// ConsumerVersion is one entry of a consumer's "versions": the version of
// a fact its handler reads, when it is not the newest.
type ConsumerVersion struct {
	Fact    string
	Version int
	Pointer string // /consumers/<name>/versions/<key> in warren.json
}

// VersionPointer returns where the fact's version is written: its
// x-version (or the manifest's version), or the routing key when absent.
func (f *Fact) VersionPointer() (*Document, string) {
	if f.InManifest() {
		ptr := Append(f.KeyPointer, "version")
		if _, _, ok := f.KeyDoc.Position(ptr); ok {
			return f.KeyDoc, ptr
		}
		return f.KeyDoc, f.KeyPointer
	}
	if _, _, ok := f.Doc.Position("/x-version"); ok {
		return f.Doc, "/x-version"
	}
	return f.KeyDoc, f.KeyPointer
}

// Versions returns every version of the fact, oldest first, itself last.
func (f *Fact) Versions() []*Fact {
	return append(slices.Clone(f.Older), f)
}

// Version returns the version n of the fact, if the directory declares it.
func (f *Fact) VersionOf(n int) (*Fact, bool) {
	for _, v := range f.Versions() {
		if v.Version == n {
			return v, true
		}
	}
	return nil, false
}

// versionList renders the versions a fact has and where: "1 (order/placed.v1.json), 2 (order/placed.v2.json)".
func versionList(f *Fact) string {
	var parts []string
	for _, v := range f.Versions() {
		doc, ptr := v.VersionPointer()
		parts = append(parts, strconv.Itoa(v.Version)+" ("+where(doc, ptr)+")")
	}
	return strings.Join(parts, ", ")
}

// groupVersions folds the declarations of one routing key into one fact:
// the newest, with the older versions in Older. Two declarations of one
// version, and a version that skips a number, are errors naming the files.
func groupVersions(facts []*Fact, errs *ErrorList) []*Fact {
	byKey := map[string][]*Fact{}
	var keys []string
	for _, f := range facts {
		if _, ok := byKey[f.RoutingKey]; !ok {
			keys = append(keys, f.RoutingKey)
		}
		byKey[f.RoutingKey] = append(byKey[f.RoutingKey], f)
	}
	var out []*Fact
	for _, key := range keys {
		decls := byKey[key]
		slices.SortStableFunc(decls, func(a, b *Fact) int { return cmp.Compare(a.Version, b.Version) })
		kept := decls[:1]
		for _, f := range decls[1:] {
			prev := kept[len(kept)-1]
			doc, ptr := f.VersionPointer()
			pdoc, pptr := prev.VersionPointer()
			switch {
			case f.Version == prev.Version:
				if ptr == f.KeyPointer && doc == f.KeyDoc {
					// No version written: one key declared twice.
					errs.Add(f.KeyDoc.Errorf(f.KeyPointer, "routing key %s is already declared by %s", strconv.Quote(key), where(prev.KeyDoc, prev.KeyPointer)))
				} else {
					errs.Add(doc.Errorf(ptr, "routing key %s version %d is already declared by %s: each version of a fact is declared once", strconv.Quote(key), f.Version, where(pdoc, pptr)))
				}
				continue
			case f.Version != prev.Version+1:
				errs.Add(doc.Errorf(ptr, "routing key %s version %d follows version %d (%s): expected version %d next, versions of one fact are numbered without gaps", strconv.Quote(key), f.Version, prev.Version, where(pdoc, pptr), prev.Version+1))
			}
			kept = append(kept, f)
		}
		newest := kept[len(kept)-1]
		newest.Older = kept[: len(kept)-1 : len(kept)-1]
		out = append(out, newest)
	}
	return out
}

// readPublishVersions reads the manifest's "versions".
func readPublishVersions(root map[string]any) []*PublishVersions {
	decls, _ := root["versions"].(map[string]any)
	var out []*PublishVersions
	for _, key := range SortedKeys(decls) {
		obj := decls[key].(map[string]any)
		pv := &PublishVersions{Fact: key, Pointer: Pointer("versions", key)}
		for _, v := range obj["publish"].([]any) {
			n, _ := strconv.Atoi(v.(json.Number).String())
			pv.Publish = append(pv.Publish, n)
		}
		slices.Sort(pv.Publish)
		out = append(out, pv)
	}
	return out
}

// readConsumerVersions reads a consumer's "versions".
func readConsumerVersions(pointer string, obj map[string]any) []ConsumerVersion {
	decls, _ := obj["versions"].(map[string]any)
	var out []ConsumerVersion
	for _, key := range SortedKeys(decls) {
		n, _ := strconv.Atoi(decls[key].(json.Number).String())
		out = append(out, ConsumerVersion{Fact: key, Version: n, Pointer: Append(Append(pointer, "versions"), key)})
	}
	return out
}

// checkManifestVersions checks that every version the manifest names is
// declared by a file: a version removed while the publisher still
// publishes it, or a consumer still reads it, is an error naming the
// versions that are left and where.
func (s *Schemas) checkManifestVersions(errs *ErrorList) {
	if s.Manifest == nil {
		return
	}
	doc := s.Manifest.Doc
	facts := map[string]*Fact{}
	for _, f := range s.Facts {
		facts[f.RoutingKey] = f
	}
	for _, f := range s.ImportedFacts() {
		if _, ok := facts[f.RoutingKey]; !ok {
			facts[f.RoutingKey] = f
		}
	}
	own := map[string]bool{}
	for _, f := range s.Facts {
		own[f.RoutingKey] = true
	}
	for _, pv := range s.Manifest.Versions {
		f, ok := facts[pv.Fact]
		if !ok {
			errs.Add(doc.KeyErrorf(pv.Pointer, "versions: no fact has routing key %s", strconv.Quote(pv.Fact)))
			continue
		}
		if !own[pv.Fact] {
			errs.Add(doc.KeyErrorf(pv.Pointer, "versions: %s is imported (%s): the versions it is published in are its producer's to list, in the producer's warren.json; a consumer here pins the version it reads with consumers.<name>.versions", pv.Fact, f.Path()))
			continue
		}
		for i, n := range pv.Publish {
			if _, ok := f.VersionOf(n); !ok {
				errs.Add(doc.Errorf(AppendIndex(Append(pv.Pointer, "publish"), i), "the publisher publishes %s version %d, which no file declares; its versions are %s", pv.Fact, n, versionList(f)))
			}
		}
	}
	for _, c := range s.Manifest.Consumers {
		for _, cv := range c.Versions {
			f, ok := facts[cv.Fact]
			if !ok {
				errs.Add(doc.KeyErrorf(cv.Pointer, "consumer %s reads a version of %s, but no fact has that routing key", strconv.Quote(c.Name), strconv.Quote(cv.Fact)))
				continue
			}
			if _, ok := f.VersionOf(cv.Version); !ok {
				errs.Add(doc.Errorf(cv.Pointer, "consumer %s still reads %s version %d, which no file declares (was it removed?); its versions are %s: keep the file until the consumer reads a newer version", strconv.Quote(c.Name), cv.Fact, cv.Version, versionList(f)))
			}
		}
	}
}

// PublishedVersions returns the versions of the fact with routing key key
// that the publisher publishes: the manifest's "versions", else the
// newest alone.
func (m *Manifest) PublishedVersions(key string, newest int) []int {
	for _, pv := range m.Versions {
		if pv.Fact == key {
			return pv.Publish
		}
	}
	return []int{newest}
}

// VersionRead returns the version of a fact, among the versions published,
// that a consumer pinned to version pin handles: the newest it reads (pin
// or older, through upcasts), 0 when it reads none of them. warren check's
// pinned-version-unpublished and warren diff's version-unpublished both
// judge by it.
func VersionRead(published []int, pin int) int {
	out := 0
	for _, v := range published {
		if v <= pin {
			out = max(out, v)
		}
	}
	return out
}

// Consumer returns the manifest's consumer named name, nil if none.
func (m *Manifest) Consumer(name string) *Consumer {
	for _, c := range m.Consumers {
		if c.Name == name {
			return c
		}
	}
	return nil
}
