package schemadiff

import (
	"fmt"
	"slices"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// compareDirect reports the facts whose generated publish calls change
// route: written directly into a stream over the stream protocol (a
// stream's "publish": "direct") where they were published through the
// events exchange, or the other way round.
//
// Within one directory the generator refuses a direct stream whose fact a
// consumer's queue, a saga's queue or another stream binds, but it cannot
// see the queues of other services: they bind this directory's facts on the
// events exchange from manifests of their own (an imported directory's
// facts, or plain AMQP). A direct write bypasses the exchange, so those
// queues stop receiving the fact, silently: nothing is unroutable and
// nothing is poisoned. That is a consumer built before the change (bound to
// the exchange) missing facts written after it, which breaks forward, as a
// changed routing key does for the bindings of the old key; and it is filed
// under the fact, so that `warren diff --base-module` shows it to the
// consumers of another service that bind it ([CompareImport]). Nothing
// breaks backward: facts written before were published through the
// exchange, and the stream received them through its binding, as its
// readers still do.
//
// Every way a fact that existed before comes to be written directly is
// reported, whatever changed in warren.json: a stream switched to
// "publish": "direct", a new stream declared direct over it (the model
// allows that as long as nothing else in the directory binds the fact), a
// direct stream whose bindings now match it, or the last other binding of
// it in the directory gone. A new fact is not: no service received it
// through the exchange before, so none stops receiving it (fact-added
// reports it). A fact moving from one direct stream to another is not
// either: it did not reach the exchange before or after.
//
// Published through the exchange again breaks nobody: the exchange reaches
// every queue bound to the fact, and the stream through its binding.
func compareDirect(old, new *Dir, pairs []factPair) []Change {
	before, now := directFacts(old), directFacts(new)
	if len(before) == 0 && len(now) == 0 {
		return nil
	}
	var out []Change
	for _, p := range pairs {
		oldStream, wasDirect := before[p.old.RoutingKey]
		stream, isDirect := now[p.new.RoutingKey]
		key := p.new.RoutingKey
		switch {
		case isDirect && !wasDirect:
			at, why := directCause(old, new, stream, p.old.RoutingKey)
			c := change(StreamPublishDirect, key, at,
				"%s: fact %q is written straight into the stream over the stream protocol instead of through the events exchange, so a queue of another service bound to %q on the exchange stops receiving it, without any error; keep \"publish\": \"exchange\" for a stream whose facts other services bind (or narrow its bindings), or move those services' consumers to read stream %q before this deploys",
				why, key, key, stream)
			c.stream = stream
			out = append(out, c)
		case wasDirect && !isDirect:
			at, why := exchangeCause(old, new, oldStream, key)
			out = append(out, change(StreamPublishExchange, key, at,
				"%s: fact %q is published through the events exchange again, and every queue bound to it there receives it again",
				why, key))
		}
	}
	return out
}

// directCause says why fact key (its routing key on the old side) is now
// written directly into stream, and where in the new warren.json to look.
func directCause(old, new *Dir, stream, key string) (Pos, string) {
	s := streamNamed(new, stream)
	o := streamNamed(old, stream)
	switch {
	case o == nil:
		return new.pos(New, loc{load.ManifestFile, appendPtr(s.Pointer, "publish")}), fmt.Sprintf("new stream %q publishes directly (\"publish\": \"direct\")", stream)
	case !o.Direct:
		return new.pos(New, loc{load.ManifestFile, appendPtr(s.Pointer, "publish")}), fmt.Sprintf("stream %q now publishes directly (\"publish\": \"direct\")", stream)
	case !carries(o.Bindings, key):
		return new.pos(New, loc{load.ManifestFile, appendPtr(s.Pointer, "bindings")}), fmt.Sprintf("the bindings of stream %q, which publishes directly, now match it", stream)
	}
	// The stream carried it before, but a consumer's queue, a saga or
	// another stream of the directory bound it too: that is gone.
	return new.pos(New, loc{load.ManifestFile, s.Pointer}), fmt.Sprintf("nothing in warren.json binds it besides stream %q, which publishes directly (\"publish\": \"direct\"), any more", stream)
}

// exchangeCause says why fact key, written directly into stream on the
// old side, is published through the exchange now, and where to look: in
// the new warren.json, or the old one for what was removed.
func exchangeCause(old, new *Dir, stream, key string) (Pos, string) {
	o := streamNamed(old, stream)
	s := streamNamed(new, stream)
	at := func(d *Dir, side Side, ptr string) Pos { return d.pos(side, loc{load.ManifestFile, ptr}) }
	switch {
	case s == nil:
		return at(old, Old, o.Pointer), fmt.Sprintf("stream %q, which published directly, is gone from warren.json", stream)
	case !s.Direct:
		publish := appendPtr(s.Pointer, "publish")
		if new.Schemas.Manifest.Doc.Offset(publish) >= 0 {
			return at(new, New, publish), fmt.Sprintf("stream %q publishes through the exchange (\"publish\": \"exchange\")", stream)
		}
		return at(old, Old, appendPtr(o.Pointer, "publish")), fmt.Sprintf("stream %q no longer publishes directly (\"publish\": \"direct\" was removed)", stream)
	case !carries(s.Bindings, key):
		return at(new, New, appendPtr(s.Pointer, "bindings")), fmt.Sprintf("the bindings of stream %q no longer match it", stream)
	}
	return at(new, New, s.Pointer), fmt.Sprintf("another queue or stream of warren.json binds it besides stream %q, so the exchange must reach them all", stream)
}

// directFacts maps each fact of the directory that its generated publish
// calls write directly into a stream to that stream's name. It reads the
// manifest as topology.Topology.DirectStream reads the topology built from
// it (the generator's choice at run time): a fact goes directly into a
// plain stream of "publish": "direct" when nothing else binds it on the
// events exchange, neither another stream nor the queue of a consumer or
// a saga. A directory whose model does not build is read the same way.
// Imported facts are left out: what they are published in is their
// producer's to say.
func directFacts(d *Dir) map[string]string {
	man := d.Schemas.Manifest
	if man == nil {
		return nil
	}
	out := map[string]string{}
	for _, f := range d.Schemas.Facts {
		key := f.RoutingKey
		binders, direct := 0, ""
		for _, s := range man.Streams {
			if carries(s.Bindings, key) {
				binders++
				if s.Direct && s.Partitions == 0 {
					direct = s.Name
				}
			}
		}
		for _, c := range man.Consumers {
			if c.Stream == "" && carries(c.Bindings, key) { // a stream consumer's own queue binds nothing
				binders++
			}
		}
		for _, sg := range man.Sagas {
			if slices.ContainsFunc(sg.Facts, func(sf *load.SagaFact) bool { return sf.RoutingKey == key }) {
				binders++
			}
		}
		if binders == 1 && direct != "" {
			out[key] = direct
		}
	}
	return out
}

// carries reports whether one of the topic patterns matches key.
func carries(bindings []string, key string) bool {
	return slices.ContainsFunc(bindings, func(p string) bool { return model.TopicMatch(p, key) })
}

// streamNamed returns the directory's stream of that name, nil when it
// has none.
func streamNamed(d *Dir, name string) *load.Stream {
	if d.Schemas.Manifest == nil {
		return nil
	}
	i := slices.IndexFunc(d.Schemas.Manifest.Streams, func(s *load.Stream) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return d.Schemas.Manifest.Streams[i]
}
