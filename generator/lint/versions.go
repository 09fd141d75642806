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
// warren.json's, as the imported directory says. A batch consumer, which
// the model allows pinned to the oldest version declared alone, is given
// the advice it can follow (batchPinnedMessage).
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
			msg := pinnedMessage(c.Name, f, cv.Version, published, publisher, imp)
			if mc.Batch.Batched() {
				msg = batchPinnedMessage(s.Manifest, c.Name, f, cv.Version, published, publisher, imp)
			}
			p.report(s.Manifest.Doc, cv.Pointer, "%s", msg)
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
	var newer []string
	for _, v := range published {
		if v > pin {
			newer = append(newer, strconv.Itoa(v))
		}
	}
	return fmt.Sprintf("%s; pin it to a published version (%s; without a pin it reads the newest) and deploy it, or %s",
		pinnedState(consumer, f, pin, published, m, imp), strings.Join(newer, " or "), publishAgain(f.RoutingKey, pin, published, imp))
}

// pinnedState says who is pinned to what, what is published instead and
// what follows.
func pinnedState(consumer string, f *load.Fact, pin int, published []int, m *load.Manifest, imp *load.Imported) string {
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
	reads := fmt.Sprintf("version %d", pin)
	if pin > 1 {
		reads = fmt.Sprintf("versions %d and older", pin)
	}
	return fmt.Sprintf("consumer %s is pinned to version %d of %s, but %s publishes %s: it reads %s and no newer one, so it judges every %s by its version-%d schema and poisons each one that schema refuses",
		strconv.Quote(consumer), pin, key, publisher, now, reads, key, pin)
}

// publishAgain says how to publish the pinned version again.
func publishAgain(key string, pin int, published []int, imp *load.Imported) string {
	if imp != nil {
		return fmt.Sprintf("ask its producer to publish version %d too while it is pinned", pin)
	}
	return fmt.Sprintf("publish version %d too (\"versions\": {%s: {\"publish\": [%s]}}) while it is pinned", pin, strconv.Quote(key), joinInts(slices.Sorted(slices.Values(append(slices.Clone(published), pin)))))
}

// batchPinnedMessage is pinnedMessage for a batch consumer, which cannot
// follow its advice: a batch consumer reads one version alone, and the
// only one it can (the one it reads without upcasts) is the oldest
// declared, so the model refuses it pinned to a newer version, or without
// a pin, while an older one is declared. Its pin moves only with the
// versions before it: they are retired (their files removed, which warren
// diff judges as version-retired) in the change that pins it to the
// oldest version left, once no other consumer is pinned to them and no
// fact of them is left to read. Until then the pinned version is
// published.
func batchPinnedMessage(m *load.Manifest, consumer string, f *load.Fact, pin int, published []int, publisher *load.Manifest, imp *load.Imported) string {
	key := f.RoutingKey
	// The oldest version published is the one the consumer moves to;
	// those before it go.
	next := f.Version
	if len(published) > 0 {
		next = slices.Min(published)
	}
	var retire, files []string
	for _, v := range f.Versions() {
		if v.Version < next {
			retire = append(retire, strconv.Itoa(v.Version))
			files = append(files, v.Path())
		}
	}
	which, them, file := "version "+strings.Join(retire, ", "), "it", "the file"
	if len(retire) > 1 {
		which, them, file = "versions "+strings.Join(retire, ", "), "them", "the files"
	}
	var others []string
	for _, c := range m.Consumers {
		if v := c.VersionOf(key); c.Name != consumer && v != 0 && v < next {
			others = append(others, strconv.Quote(c.Name))
		}
	}
	once := "once no other consumer is pinned to " + them
	switch len(others) {
	case 0:
	case 1:
		once = fmt.Sprintf("once consumer %s, pinned to %s too, is moved to version %d or newer and deployed", others[0], them, next)
	default:
		once = fmt.Sprintf("once consumers %s, pinned to %s too, are moved to version %d or newer and deployed", strings.Join(others, ", "), them, next)
	}
	name := strconv.Quote(consumer)
	repin := fmt.Sprintf("pin %s to version %d, the oldest left (\"versions\": {%s: %d})", name, next, strconv.Quote(key), next)
	if next == f.Version {
		repin = fmt.Sprintf("remove the pin of %s (it then reads version %d, the newest, alone)", name, next)
	}
	retireHow := fmt.Sprintf("%s, remove %s of %s (%s) and, in the same change, %s, and deploy it: it then reads the version-%d facts it poisons now (warren replay delivers those it poisoned again), and poisons a fact of %s alone still queued unless version %d's schema accepts it (warren status, the outbox). warren diff reports the removal as version-retired, breaking since %s read %s: here that is the way out",
		once, file, which, strings.Join(files, ", "), repin, next, which, next, name, which)
	if imp != nil {
		retireHow = fmt.Sprintf("ask its producer to retire %s (remove %s), and, in the update that brings that, %s", which, file, repin)
	}
	return fmt.Sprintf("%s. A batch consumer reads the oldest version declared alone, and no other: it cannot be pinned to a newer version, or left without a pin, while version %d is declared (warren check refuses it), so moving its pin is no way out. Either %s; or retire %s: %s",
		pinnedState(consumer, f, pin, published, publisher, imp), pin, publishAgain(key, pin, published, imp), which, retireHow)
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}
