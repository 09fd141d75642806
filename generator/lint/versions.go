package lint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// PinnedVersionUnpublished names the rule that checks a consumer's pins
// (consumers.<name>.versions) against the versions the publisher
// publishes (the manifest's "versions", else the newest alone).
const PinnedVersionUnpublished = "pinned-version-unpublished"

// checkPinnedVersions reports a consumer pinned to a version of a fact
// it binds of which no version it reads is published. A consumer pinned
// to version N reads N and every older version (through upcasts), never a
// newer one: when the publisher publishes none of those, the consumer
// judges each fact it receives by its version-N schema and poisons what
// that refuses (runtime.VersionError), until it is moved to a published
// version and deployed, or the version is published again. warren diff
// reports dropping the version as version-unpublished; this is the state
// that change leaves behind, seen in one directory.
//
// It is a warning rather than an error: a directory may keep such a
// consumer on purpose for the length of a migration (its poisoned facts
// are replayed once it is upgraded), and the generated code is sound.
// For an imported fact the versions published are the producer's
// warren.json's, as the imported directory says.
func checkPinnedVersions(p *pass) {
	s := p.in.Schemas
	if s.Manifest == nil {
		return
	}
	for _, c := range p.in.Consumers {
		mc, ok := p.manifestConsumer(c.Name)
		if !ok {
			continue
		}
		for _, cv := range mc.Versions {
			if !c.binds(cv.Fact) {
				continue // a pin on a fact the consumer does not receive reads nothing
			}
			f, publisher, imp := p.fact(cv.Fact)
			if f == nil {
				continue // the loader reports a pin on an unknown fact
			}
			if _, declared := f.VersionOf(cv.Version); !declared {
				continue // the loader reports a pin on a version no file declares
			}
			published := publisher.PublishedVersions(f.RoutingKey, f.Version)
			if load.VersionRead(published, cv.Version) != 0 {
				continue
			}
			p.report(s.Manifest.Doc, cv.Pointer, "%s", pinnedMessage(c.Name, f, cv.Version, published, publisher, imp))
		}
	}
}

// binds reports whether one of the consumer's bindings matches fact key.
func (c Consumer) binds(key string) bool {
	return slices.ContainsFunc(c.Bindings, func(b Binding) bool { return slices.Contains(b.Facts, key) })
}

// fact returns the fact with routing key key, the manifest that says
// which of its versions are published (this directory's, or its
// producer's for an imported fact) and its import (nil for an own fact).
func (p *pass) fact(key string) (*load.Fact, *load.Manifest, *load.Imported) {
	s := p.in.Schemas
	for _, f := range s.Facts {
		if f.RoutingKey == key {
			return f, s.Manifest, nil
		}
	}
	for _, f := range s.ImportedFacts() {
		if f.RoutingKey != key {
			continue
		}
		if imp := s.ImportOf(f); imp != nil && imp.Schemas != nil && imp.Schemas.Manifest != nil {
			return f, imp.Schemas.Manifest, imp
		}
	}
	return nil, nil, nil
}

// pinnedMessage says who is pinned to what, what is published instead,
// what follows and what to do.
func pinnedMessage(consumer string, f *load.Fact, pin int, published []int, m *load.Manifest, imp *load.Imported) string {
	key := f.RoutingKey
	manifest, publisher := "warren.json", "the publisher"
	if imp != nil {
		manifest, publisher = "its warren.json", fmt.Sprintf("its producer (%s)", imp.Label())
	}
	var now string
	switch listed := slices.ContainsFunc(m.Versions, func(pv *load.PublishVersions) bool { return pv.Fact == key }); {
	case !listed:
		now = fmt.Sprintf("the newest alone, %d (%s has no \"versions\" entry for it)", f.Version, manifest)
	case len(published) == 1:
		now = fmt.Sprintf("version %d alone (%s \"versions\")", published[0], manifest)
	default:
		now = fmt.Sprintf("versions %s (%s \"versions\")", joinInts(published), manifest)
	}
	publish := fmt.Sprintf("publish version %d too (\"versions\": {%s: {\"publish\": [%s]}}) while it is pinned", pin, strconv.Quote(key), joinInts(slices.Sorted(slices.Values(append(slices.Clone(published), pin)))))
	if imp != nil {
		publish = fmt.Sprintf("ask its producer to publish version %d too while it is pinned", pin)
	}
	reads := fmt.Sprintf("version %d", pin)
	if pin > 1 {
		reads = fmt.Sprintf("versions %d and older", pin)
	}
	var newer []string
	for _, v := range published {
		if v > pin {
			newer = append(newer, strconv.Itoa(v))
		}
	}
	return fmt.Sprintf("consumer %s is pinned to version %d of %s, but %s publishes %s: it reads %s and no newer one, so it judges every %s by its version-%d schema and poisons each one that schema refuses; pin it to a published version (%s; without a pin it reads the newest) and deploy it, or %s",
		strconv.Quote(consumer), pin, key, publisher, now, reads, key, pin, strings.Join(newer, " or "), publish)
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}
