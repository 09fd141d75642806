package model

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
	"github.com/warrenbus/warren/internal/suggest"
	"github.com/warrenbus/warren/runtime/topology"
)

// TopicMatch reports whether an AMQP topic pattern matches a routing key,
// as a RabbitMQ topic exchange does; it is [topology.TopicMatch], the
// matcher the runtime uses too.
func TopicMatch(pattern, key string) bool { return topology.TopicMatch(pattern, key) }

// maxBindingLen is the longest binding key AMQP can carry (a short
// string). The bound also keeps matching cheap: its cost grows with the
// pattern's length.
const maxBindingLen = 255

// matchBindings resolves each consumer's bindings against the facts. A
// binding that matches no fact is an error: it is almost always a typo, and
// the broker would silently deliver nothing.
func (b *builder) matchBindings(facts []*Fact) []*Consumer {
	// Split each routing key once, and look a pattern without wildcards up
	// directly: with many consumers, splitting every key for every binding
	// dominated the build.
	words := make([][]string, len(facts))
	byKey := make(map[string]int, len(facts))
	keys := make([]string, len(facts)) // sorted, as facts are
	for i, f := range facts {
		keys[i] = f.RoutingKey
		words[i] = strings.Split(f.RoutingKey, ".")
		byKey[f.RoutingKey] = i // unique: load rejects a second fact with the same key
	}
	// Suggestions also look at the imported facts no binding matched.
	hints := slices.Clone(keys)
	for _, f := range b.s.ImportedFacts() {
		if _, ok := byKey[f.RoutingKey]; !ok {
			hints = append(hints, f.RoutingKey)
		}
	}
	slices.Sort(hints)
	man := b.s.Manifest
	var out []*Consumer
	for _, lc := range man.Consumers {
		c := &Consumer{Name: lc.Name, GoName: names.Exported(lc.Name), Description: lc.Description, Bindings: lc.Bindings, Batched: lc.Batch.Batched()}
		matched := map[int]bool{} // indexes into facts
		for i, pattern := range lc.Bindings {
			if len(pattern) > maxBindingLen {
				b.errs.Add(man.Doc.Errorf(lc.BindingPointer(i), "consumer %s: binding of %d bytes: expected at most %d, the longest binding key AMQP can carry", strconv.Quote(lc.Name), len(pattern), maxBindingLen))
				continue
			}
			n := 0 // facts this binding matches
			if !strings.ContainsAny(pattern, "*#") {
				if j, ok := byKey[pattern]; ok {
					matched[j] = true
					n++
				}
			} else {
				p := strings.Split(pattern, ".")
				for j := range facts {
					if topology.MatchWords(p, words[j]) {
						matched[j] = true
						n++
					}
				}
			}
			if n == 0 {
				msg := fmt.Sprintf("consumer %s: binding %s matches no fact", strconv.Quote(lc.Name), strconv.Quote(pattern))
				if s, ok := ClosestBinding(pattern, hints); ok {
					msg += fmt.Sprintf("; did you mean %s?", strconv.Quote(s))
				}
				b.errs.Add(man.Doc.Errorf(lc.BindingPointer(i), "%s (routing keys: %s)", msg, routingKeys(facts)))
			}
		}
		for _, j := range slices.Sorted(maps.Keys(matched)) {
			c.Facts = append(c.Facts, facts[j]) // facts are sorted by routing key
		}
		b.checkMethods(c)
		out = append(out, c)
	}
	return out
}

func routingKeys(facts []*Fact) string {
	if len(facts) == 0 {
		return "none: no schema has an x-routing-key"
	}
	keys := make([]string, 0, len(facts))
	for _, f := range facts {
		keys = append(keys, f.RoutingKey)
	}
	if len(keys) > 12 {
		keys = append(keys[:12], fmt.Sprintf("and %d more", len(keys)-12))
	}
	return strings.Join(keys, ", ")
}

// buildTopology merges the manifest's defaults into each consumer and builds
// the topology once, so that defaults are applied and settings checked in one
// place (runtime/topology). Each problem it reports is put at the place in
// warren.json that wrote the value at fault.
func (b *builder) buildTopology(m *Model) {
	man := b.s.Manifest
	spec := topology.Spec{Exchanges: b.importedExchanges(m, topology.Exchanges{
		Events: man.Exchanges.Events, Retry: man.Exchanges.Retry, Dead: man.Exchanges.Dead,
		Requests: man.Exchanges.Requests,
	})}
	for _, lc := range man.Consumers {
		spec.Consumers = append(spec.Consumers, ConsumerSpec(lc, man.Defaults))
	}
	spec.Consumers = append(spec.Consumers, b.sagaSpecs()...)
	spec.Responders = b.responderSpecs()
	spec.Delays = man.DelayedFacts
	spec.Streams = b.streamSpecs()
	top, err := topology.Build(spec)
	if err != nil {
		var se *topology.SpecError
		if !errors.As(err, &se) {
			b.errs.Add(man.Doc.Errorf("", "%v", err))
			return
		}
		for _, p := range se.Problems {
			b.errs.Add(b.topologyError(p))
		}
		return
	}
	m.Topology = top
	m.Exchanges = topology.Exchanges{Events: top.Exchanges[0].Name, Retry: top.Exchanges[1].Name, Dead: top.Exchanges[2].Name}
	for _, c := range m.Consumers {
		i := slices.IndexFunc(m.Topology.Consumers, func(tc topology.Consumer) bool { return tc.Name == c.Name })
		c.Topology = &m.Topology.Consumers[i]
	}
	m.linkResponders()
	m.linkSagas()
}

// topologyError places a problem of topology.Build in warren.json: at the
// value it concerns where the consumer sets it, else where /defaults does,
// else at the consumer's entry (or the exchanges) as a whole.
func (b *builder) topologyError(p topology.Problem) *load.Error {
	doc := b.s.Manifest.Doc
	if e, ok := b.streamProblem(p); ok {
		return e
	}
	if p.Consumer < 0 && p.Field == "delayedFacts" {
		return doc.Errorf("/delayedFacts", "%s", p.Detail)
	}
	if p.Consumer < 0 {
		return doc.Errorf(firstWritten(doc, load.Pointer("exchanges", p.Field), "/exchanges"), "%s", p.Detail)
	}
	if p.Consumer >= len(b.s.Manifest.Consumers) { // a saga's queue
		sg := b.s.Manifest.Sagas[p.Consumer-len(b.s.Manifest.Consumers)]
		own := sg.Pointer
		if p.Field != "" && p.Field != "name" {
			own = firstWritten(doc, load.Append(sg.Pointer, p.Field), load.Append("/defaults", p.Field))
		}
		if own == "" {
			own = sg.Pointer
		}
		return doc.Errorf(own, "saga %s: %s", strconv.Quote(sg.Name), p.Detail)
	}
	lc := b.s.Manifest.Consumers[p.Consumer]
	msg := fmt.Sprintf("consumer %s: %s", strconv.Quote(lc.Name), p.Detail)
	if p.Field == "" || p.Field == "name" {
		return doc.KeyErrorf(lc.Pointer, "%s", msg)
	}
	own, def := lc.Pointer, "/defaults"
	for _, token := range strings.Split(p.Field, ".") { // "batch.size": a key inside a key
		own, def = load.Append(own, token), load.Append(def, token)
	}
	if p.Index >= 0 {
		own, def = load.AppendIndex(own, p.Index), load.AppendIndex(def, p.Index)
	}
	if ptr := firstWritten(doc, own, def); ptr != "" {
		return doc.Errorf(ptr, "%s", msg)
	}
	return doc.KeyErrorf(lc.Pointer, "%s", msg)
}

// firstWritten returns the first of pointers that has a value in doc, or "".
func firstWritten(doc *load.Document, pointers ...string) string {
	for _, p := range pointers {
		if doc.Offset(p) >= 0 {
			return p
		}
	}
	return ""
}

// ConsumerSpec returns the topology spec of one manifest consumer: its own
// settings over the manifest's /defaults, as [Build] gives it to
// topology.Build. What neither sets stays zero for topology.Build to
// default. Comparing two directories needs it without building either model.
//
// A stream consumer does not take the defaults that only a queue consumer
// can have (see streamDefaults): set on the consumer itself they are
// still errors, but /defaults' are meant for the queue consumers.
func ConsumerSpec(c *load.Consumer, defaults load.Settings) topology.ConsumerSpec {
	if c.Stream != "" {
		defaults = streamDefaults(defaults)
	}
	pick := func(own, def *int) int {
		switch {
		case own != nil:
			return *own
		case def != nil:
			return *def
		}
		return 0
	}
	cs := topology.ConsumerSpec{
		Name:         c.Name,
		Bindings:     slices.Clone(c.Bindings),
		QueueType:    topology.QueueType(cmpOr(c.Settings.QueueType, defaults.QueueType)),
		Prefetch:     pick(c.Settings.Prefetch, defaults.Prefetch),
		Concurrency:  pick(c.Settings.Concurrency, defaults.Concurrency),
		MaxAttempts:  pick(c.Settings.MaxAttempts, defaults.MaxAttempts),
		MaxDeferrals: pick(c.Settings.MaxDeferrals, defaults.MaxDeferrals),
		Backoff:      slices.Clone(defaults.Backoff),
		// A classic queue has no delivery limit; Build ignores it there.
		DeliveryLimit:  pick(c.Settings.DeliveryLimit, defaults.DeliveryLimit),
		MaxLength:      maxLength(c.Settings, defaults).Messages,
		MaxLengthBytes: maxLength(c.Settings, defaults).Bytes,
		MaxPriority:    c.Settings.MaxPriority,
		Ordered:        c.Ordered.Ordered,
		Shards:         c.Ordered.Shards,
		Park:           c.Ordered.Park,
		Stream:         c.Stream,
		Start:          streamStart(c.Start),
	}
	if c.Batch.Batched() && !c.Batch.Unreadable {
		cs.Batch = &topology.Batch{Size: c.Batch.Size, Wait: c.Batch.Wait}
	}
	if c.Settings.Backoff != nil {
		cs.Backoff = slices.Clone(c.Settings.Backoff)
	}
	return cs
}

// streamDefaults returns the /defaults a stream consumer takes: all but
// what only a queue consumer can have, which topology.Build refuses on a
// stream consumer (checkStreamConsumer). maxLength bounds a work queue
// that the events exchange fills, while a stream consumer's work queue
// holds only its own retries, deferrals and held facts, and its stream is
// bounded by its retention (maxAge, maxBytes); a stream consumer's work
// and poison queues are quorum queues, so a default queueType (which can
// only be "classic" to matter) is left out too. The others (prefetch,
// concurrency, maxAttempts, maxDeferrals, backoff, deliveryLimit) apply
// to stream consumers as to any. maxPriority, ordered, shards, onPoison
// and batch, which a stream consumer refuses as well, are never defaults.
func streamDefaults(d load.Settings) load.Settings {
	d.MaxLength = load.MaxLength{}
	d.QueueType = ""
	return d
}

// maxLength is the consumer's maxLength, else the defaults': a consumer's
// bound replaces the default one whole (messages and bytes together).
func maxLength(own, defaults load.Settings) load.MaxLength {
	if own.MaxLength != (load.MaxLength{}) {
		return own.MaxLength
	}
	return defaults.MaxLength
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ClosestBinding returns the binding pattern the author of pattern most
// likely meant, given the routing keys of the facts, for a binding that
// matches none of them. A literal pattern is compared with the keys
// ("order.shiped" -> "order.shipped"). A pattern with wildcards keeps
// them and has its literal words corrected from a key it then matches
// ("ordr.#" -> "order.#"). It reports false when nothing is close.
func ClosestBinding(pattern string, keys []string) (string, bool) {
	if !strings.ContainsAny(pattern, "*#") {
		return suggest.Closest(pattern, keys)
	}
	p := strings.Split(pattern, ".")
	var candidates []string
	seen := map[string]bool{}
	for _, key := range keys {
		k := strings.Split(key, ".")
		// Literal words before the first '#' sit at the key's positions.
		fixed := slices.Clone(p)
		for i, w := range fixed {
			if w == "#" || i >= len(k) {
				break
			}
			if w != "*" {
				fixed[i] = k[i]
			}
		}
		c := strings.Join(fixed, ".")
		if !seen[c] && topology.MatchWords(fixed, k) {
			seen[c] = true
			candidates = append(candidates, c)
		}
	}
	return suggest.Closest(pattern, candidates)
}

// checkBatches refuses a batch consumer of a fact it would read in several
// versions: its batch holds each fact in the one type of the version the
// consumer reads, and reading older versions through upcasts is for
// consumers that take one fact at a time. A consumer reads the version it
// is pinned to (or the newest) and every older one, so the only version a
// batch consumer can read alone is the oldest declared: pinned there, it
// handles that version's copy of a fact published in several versions
// and acks the newer copies unhandled (runtime.Route.otherCopy), as long
// as that version is published.
func (b *builder) checkBatches(consumers []*Consumer) {
	man := b.s.Manifest
	for i, c := range consumers {
		lc := man.Consumers[i]
		if !c.Batched || lc.Name != c.Name {
			continue
		}
		for _, f := range c.Facts {
			if len(f.Older) == 0 {
				continue
			}
			older := make([]string, len(f.Older))
			for j, o := range f.Older {
				older[j] = strconv.Itoa(o.Version)
			}
			versions := "version " + older[0]
			if len(older) > 1 {
				versions = "versions " + strings.Join(older, ", ")
			}
			reads := fmt.Sprintf("reading version %d of %s (the newest), it also reads", f.Version, f.RoutingKey)
			if lc.VersionOf(f.RoutingKey) != 0 {
				reads = fmt.Sprintf("pinned to version %d of %s, it still reads", f.Version, f.RoutingKey)
			}
			oldest := f.Older[0].Version
			b.errs.Add(man.Doc.Errorf(lc.Batch.Pointer, "consumer %s: batch: %s the older %s through upcasts (a consumer reads its version and every older one), which a batch consumer does not; pin it to the oldest version, %d (\"versions\": {%s: %d}), which it reads alone as long as version %d is published (of a fact published in several versions it handles the version-%d copy and acks the others unhandled), or drop batch",
				strconv.Quote(c.Name), reads, versions, oldest, strconv.Quote(f.RoutingKey), oldest, oldest, oldest))
		}
	}
}
