package lint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// manifestConsumer finds a consumer's entry in warren.json, for positions.
func (p *pass) manifestConsumer(name string) (*load.Consumer, bool) {
	for _, c := range p.in.Schemas.Manifest.Consumers {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

func checkBindings(p *pass) {
	doc := p.in.Schemas.Manifest.Doc
	for _, c := range p.in.Consumers {
		mc, ok := p.manifestConsumer(c.Name)
		if !ok {
			continue
		}
		for i, b := range c.Bindings {
			if len(b.Facts) == 0 {
				p.report(doc, mc.BindingPointer(i), "binding %q of consumer %q matches no fact%s", b.Pattern, c.Name, p.didYouMean(b.Pattern))
			}
		}
	}
}

// nearMiss suggests routing keys that share the binding's first word, the
// usual shape of a typo ("order.plcaed" next to "order.placed").
// didYouMean suggests the binding that was probably meant, else lists the
// facts that start with the pattern's first word.
func (p *pass) didYouMean(pattern string) string {
	var keys []string
	for _, f := range append(slices.Clone(p.in.Schemas.Facts), p.in.Schemas.ImportedFacts()...) {
		keys = append(keys, f.RoutingKey)
	}
	slices.Sort(keys)
	if s, ok := model.ClosestBinding(pattern, keys); ok {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return p.nearMiss(pattern)
}

func (p *pass) nearMiss(pattern string) string {
	first, _, _ := strings.Cut(pattern, ".")
	if first == "*" || first == "#" {
		return ""
	}
	var keys []string
	for _, f := range p.in.Schemas.Facts {
		if strings.HasPrefix(f.RoutingKey, first+".") || f.RoutingKey == first {
			keys = append(keys, f.RoutingKey)
		}
	}
	if len(keys) == 0 || len(keys) > 5 {
		return ""
	}
	return "; facts starting with " + first + ": " + strings.Join(keys, ", ")
}

func checkConsumers(p *pass) {
	doc := p.in.Schemas.Manifest.Doc
	for _, c := range p.in.Consumers {
		mc, ok := p.manifestConsumer(c.Name)
		if !ok {
			continue
		}
		handles := false
		for _, b := range c.Bindings {
			handles = handles || len(b.Facts) > 0
		}
		if !handles {
			p.reportKey(p.rule, doc, mc.Pointer, "consumer %q handles nothing: none of its bindings matches a fact", c.Name)
		}
	}
}

// checkUnconsumed reports each fact of the directory that no consumer
// reads. A fact that a stream binds is routable all the same: the stream
// keeps it, and a stream consumer added later reads what the stream still
// holds; only a fact that nothing binds is unroutable when published.
func checkUnconsumed(p *pass) {
	if p.in.Consumers == nil {
		return // without matched bindings nothing can be said
	}
	// Facts a consumer receives: in its work queue, or from the stream it
	// reads (its bindings pick the stream's facts it handles).
	read := map[string]bool{}
	for _, c := range p.in.Consumers {
		for _, b := range c.Bindings {
			for _, k := range b.Facts {
				read[k] = true
			}
		}
	}
	for _, sg := range p.in.Schemas.Manifest.Sagas { // a saga's queue binds its facts
		for _, f := range sg.Facts {
			read[f.RoutingKey] = true
		}
	}
	for _, f := range p.in.Schemas.Facts {
		if read[f.RoutingKey] {
			continue
		}
		if kept := p.streamsKeeping(f.RoutingKey); len(kept) > 0 {
			p.report(f.KeyDoc, f.KeyPointer, "no consumer reads %q: %s it (warren.json \"streams\"), so it is routable, and a stream consumer added later reads what the stream still holds (fine for a fact kept for later or for an audit: disable %s here)", f.RoutingKey, kept, FactUnconsumed)
			continue
		}
		p.report(f.KeyDoc, f.KeyPointer, "no consumer binds %q; published now, it is unroutable (fine for a fact published ahead of its first consumer: disable %s here)", f.RoutingKey, FactUnconsumed)
	}
}

// streamsKeeping names the streams of the manifest whose bindings match
// routing key key, as the subject of "keep": `stream "a" keeps`, `streams
// "a" and "b" keep`; "" when none does.
func (p *pass) streamsKeeping(key string) string {
	var names []string
	for _, s := range p.in.Schemas.Manifest.Streams {
		if slices.ContainsFunc(s.Bindings, func(b string) bool { return model.TopicMatch(b, key) }) {
			names = append(names, strconv.Quote(s.Name))
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return "stream " + names[0] + " keeps"
	}
	return "streams " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " keep"
}
