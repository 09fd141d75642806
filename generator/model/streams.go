package model

import (
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// streamSpecs returns the manifest's streams as topology.Build takes them.
func (b *builder) streamSpecs() []topology.StreamSpec { return StreamSpecs(b.s.Manifest) }

// StreamSpecs returns man's streams as topology.Build takes them; comparing
// two directories needs them without building either model.
func StreamSpecs(man *load.Manifest) []topology.StreamSpec {
	var out []topology.StreamSpec
	for _, s := range man.Streams {
		out = append(out, topology.StreamSpec{
			Name: s.Name, Bindings: append([]string(nil), s.Bindings...),
			MaxAge: s.MaxAge, MaxBytes: s.MaxBytes, SegmentBytes: s.SegmentBytes,
			Partitions: s.Partitions, Direct: s.Direct,
		})
	}
	return out
}

// checkStreams reports a stream binding that matches no fact (a typo: the
// stream would stay empty), and a stream consumer's fact that its stream
// does not carry (its handler method would never be called).
func (b *builder) checkStreams(facts []*Fact, consumers []*Consumer) {
	man := b.s.Manifest
	byName := map[string]*load.Stream{}
	for _, s := range man.Streams {
		byName[s.Name] = s
		for i, pattern := range s.Bindings {
			matched := false
			for _, f := range facts {
				matched = matched || TopicMatch(pattern, f.RoutingKey)
			}
			if !matched {
				b.errs.Add(man.Doc.Errorf(load.AppendIndex(load.Append(s.Pointer, "bindings"), i), "stream %s: binding %s matches no fact (routing keys: %s)", strconv.Quote(s.Name), strconv.Quote(pattern), routingKeys(facts)))
			}
		}
		b.checkSuperStream(s, facts)
		b.checkDirect(s, facts)
	}
	model := map[string]*Consumer{}
	for _, c := range consumers {
		model[c.Name] = c
	}
	for _, lc := range man.Consumers {
		s, ok := byName[lc.Stream]
		c := model[lc.Name]
		if lc.Stream == "" || !ok || c == nil {
			continue // an unknown stream is topology.Build's to report
		}
		for _, f := range c.Facts {
			if !carries(s, f.RoutingKey) {
				b.errs.Add(man.Doc.Errorf(load.Append(lc.Pointer, "bindings"), "consumer %s: fact %s is not on stream %s, whose bindings are %s: add a binding to the stream, or narrow the consumer's", strconv.Quote(lc.Name), strconv.Quote(f.RoutingKey), strconv.Quote(s.Name), strings.Join(s.Bindings, ", ")))
			}
		}
	}
}

func carries(s *load.Stream, key string) bool {
	for _, p := range s.Bindings {
		if TopicMatch(p, key) {
			return true
		}
	}
	return false
}

// streamStart converts a consumer's "start" for topology.Build.
func streamStart(s load.StreamStart) topology.Start {
	return topology.Start{Kind: topology.StartKind(s.Kind), Offset: s.Offset, Time: s.Time}
}

// streamProblemPointer places a problem of a stream ("streams.<i>.<field>")
// at its value in warren.json, else at the stream's entry.
func (b *builder) streamProblem(p topology.Problem) (*load.Error, bool) {
	rest, ok := strings.CutPrefix(p.Field, "streams.")
	if !ok {
		return nil, false
	}
	idx, field, _ := strings.Cut(rest, ".")
	i, err := strconv.Atoi(idx)
	man := b.s.Manifest
	if err != nil || i >= len(man.Streams) {
		return man.Doc.Errorf("/streams", "%s", p.Detail), true
	}
	s := man.Streams[i]
	ptr := load.Append(s.Pointer, field)
	if p.Index >= 0 {
		ptr = load.AppendIndex(ptr, p.Index)
	}
	if man.Doc.Offset(ptr) < 0 {
		return man.Doc.KeyErrorf(s.Pointer, "%s", p.Detail), true
	}
	return man.Doc.Errorf(ptr, "%s", p.Detail), true
}

// checkSuperStream reports a fact on a super stream without an ordering
// key: the partition a fact goes to is its key's hash, so a fact without
// one could not be routed (the publish would fail as unroutable).
func (b *builder) checkSuperStream(s *load.Stream, facts []*Fact) {
	if s.Partitions == 0 {
		return
	}
	man := b.s.Manifest
	for _, f := range facts {
		if carries(s, f.RoutingKey) && f.OrderingKey == "" {
			b.errs.Add(man.Doc.Errorf(load.Append(s.Pointer, "partitions"), "super stream %s: fact %s (%s) declares no ordering key, which picks a fact's partition: add \"x-ordering-key\", a JSON pointer to the property that identifies the entity, such as \"/order_id\", or narrow the stream's bindings", strconv.Quote(s.Name), f.RoutingKey, f.Location()))
		}
	}
}

// checkDirect reports a fact that a stream publishing directly carries and
// another stream, a consumer's queue or a saga's queue binds too: the
// publisher would send it through the exchange after all (see
// topology.DirectStream), which the manifest's reader would not expect of
// "publish": "direct".
func (b *builder) checkDirect(s *load.Stream, facts []*Fact) {
	if !s.Direct {
		return
	}
	man := b.s.Manifest
	for _, f := range facts {
		if !carries(s, f.RoutingKey) {
			continue
		}
		var streams, consumers, sagas, fixes []string
		for _, o := range man.Streams {
			if o != s && carries(o, f.RoutingKey) {
				streams = append(streams, "stream "+strconv.Quote(o.Name))
			}
		}
		for _, c := range man.Consumers {
			if c.Stream != "" {
				continue // reads a stream: binds no queue
			}
			for _, p := range c.Bindings {
				if TopicMatch(p, f.RoutingKey) {
					consumers = append(consumers, "consumer "+strconv.Quote(c.Name))
					break
				}
			}
		}
		for _, sg := range man.Sagas {
			for _, p := range sagaBindings(sg) { // its queue's, as sagaSpecs declares them
				if TopicMatch(p, f.RoutingKey) {
					sagas = append(sagas, "saga "+strconv.Quote(sg.Name))
					break
				}
			}
		}
		// Every binder must change for the fact to go direct: their fixes
		// go together, and publishing through the exchange is the other way.
		plural := func(n int, one, many string) string {
			if n > 1 {
				return many
			}
			return one
		}
		if len(streams) > 0 {
			fixes = append(fixes, "narrow the "+plural(len(streams), "other stream's", "other streams'")+" bindings")
		}
		if len(consumers) > 0 {
			fixes = append(fixes, "have the "+plural(len(consumers), "consumer read", "consumers read")+" this stream (\"stream\": "+strconv.Quote(s.Name)+")")
		}
		if len(sagas) > 0 {
			fixes = append(fixes, "remove "+strconv.Quote(f.RoutingKey)+" from the "+plural(len(sagas), "saga's", "sagas'")+" \"handles\" (a saga reads its own queue, never a stream)")
		}
		if len(fixes) == 0 {
			continue
		}
		binders := append(append(streams, consumers...), sagas...)
		b.errs.Add(man.Doc.Errorf(load.Append(s.Pointer, "publish"), "stream %s: publish direct writes fact %s into this stream alone, but %s %s it too, so it would go through the exchange after all: %s, or publish through the exchange (remove publish)", strconv.Quote(s.Name), f.RoutingKey, strings.Join(binders, " and "), plural(len(binders), "binds", "bind"), strings.Join(fixes, " and ")))
	}
}
