package schemadiff

import (
	"fmt"
	"slices"
	"strings"
)

// Deploy says in which order the producer and the consumers of one fact
// must deploy so that no consumer fails, given what the report's changes
// to it break.
type Deploy struct {
	Fact   string
	Breaks Direction // what the fact's changes break, together
	// First is "consumers" when only forward breaks (consumers built from
	// the old schema fail on new facts, or those bound to the events
	// exchange miss a fact now written directly into a stream, which
	// needs them first even when the version window ships the rest),
	// "producer" when only backward breaks (consumers built from the new
	// schema fail on old facts), "drain" when only the consumers that stop
	// receiving the fact break (they must not deploy before what is queued
	// for them is handled), "any" when the break ships in the version
	// window of the new directory (its Migration is Safe): the old version
	// kept beside the new one, old facts read through upcasts, and the old
	// version still published while old consumers are live; and "" when
	// both directions break and no order is safe.
	First string
	// Consumers names the consumers concerned when only particular ones
	// break (a fact their bindings newly match, or no longer match); nil
	// means every consumer of the fact.
	Consumers []string
	Message   string // the order, in a sentence
}

// deploys derives one Deploy per fact from changes that break something.
// Consumer settings without a fact (a changed queue type) have no order to
// give: their message says what the operator must do.
func deploys(changes []Change) []Deploy {
	type acc struct {
		breaks    Direction
		schema    bool // a change to the fact's schema breaks forward
		consumers []string
		backward  bool     // a change to the fact itself breaks backward
		unbound   []string // consumers that stop receiving it
		direct    string   // the stream it is now written into directly, if any
	}
	byFact := map[string]*acc{}
	var facts []string
	for _, c := range changes {
		if !hasDeploy(c) {
			continue
		}
		a := byFact[c.Fact]
		if a == nil {
			a = &acc{}
			byFact[c.Fact] = a
			facts = append(facts, c.Fact)
		}
		a.breaks |= c.Breaks
		if c.Breaks&Backward != 0 {
			if c.Rule == BindingStoppedMatching {
				if !slices.Contains(a.unbound, c.Consumer) {
					a.unbound = append(a.unbound, c.Consumer)
				}
			} else {
				a.backward = true
			}
		}
		if c.Breaks&Forward != 0 {
			switch c.Rule {
			case BindingStartedMatching:
				if !slices.Contains(a.consumers, c.Consumer) {
					a.consumers = append(a.consumers, c.Consumer)
				}
			case StreamPublishDirect:
				a.direct = c.stream
			default:
				a.schema = true
			}
		}
	}
	slices.Sort(facts)
	out := make([]Deploy, 0, len(facts))
	for _, f := range facts {
		a := byFact[f]
		d := Deploy{Fact: f, Breaks: a.breaks}
		switch a.breaks {
		case Forward:
			d.First = "consumers"
			switch {
			case a.direct != "":
				d.Message = directOrder(f, a.direct)
			case a.schema:
				d.Message = fmt.Sprintf("deploy consumers of %s before its producer", f)
			default:
				slices.Sort(a.consumers)
				d.Consumers = a.consumers
				d.Message = fmt.Sprintf("deploy %s before the producer of %s", consumerList(a.consumers), f)
			}
		case Backward:
			if !a.backward {
				slices.Sort(a.unbound)
				d.First, d.Consumers = "drain", a.unbound
				d.Message = fmt.Sprintf("deploy %s only once no %s is left in its queue, then remove its old binding (warren declare --prune)", consumerList(a.unbound), f)
				break
			}
			d.First = "producer"
			d.Message = fmt.Sprintf("deploy the producer of %s before its consumers, and those only once no fact written under the old schema is left to read (queues, poison queues, outboxes)", f)
		default:
			d.Message = fmt.Sprintf("no order is safe for %s: consumers built from either schema fail on facts written under the other", f)
			if a.direct != "" {
				d.Message = fmt.Sprintf("no order is safe for %s: the producer writes it into stream %q directly, so every consumer, those of other services included, must read the stream before the producer deploys, while its other changes need the producer deployed first", f, a.direct)
			}
		}
		out = append(out, d)
	}
	return out
}

// hasDeploy reports whether a change counts towards its fact's deploy
// order: one that breaks a fact in some direction. A lowered version fails
// in every order, and a retired version has no order to give: its message
// says to drain it first. A stream's declaration changed in place is no
// fact's, and no order ships it.
func hasDeploy(c Change) bool {
	return c.Fact != "" && c.Breaks != Neither && c.Rule != VersionLowered && c.Rule != VersionRetired && !streamRules[c.Rule]
}

// deployOf returns the deploy order a change's safety depends on: that of
// its fact, which the report derives from every change to it.
func (r *Report) deployOf(c Change) (Deploy, bool) {
	if !hasDeploy(c) {
		return Deploy{}, false
	}
	i := slices.IndexFunc(r.Deploys, func(d Deploy) bool { return d.Fact == c.Fact })
	if i < 0 {
		return Deploy{}, false
	}
	return r.Deploys[i], true
}

// directOrder is the deploy order of a fact its producer now writes
// directly into stream: every consumer of it, this directory's and other
// services', must read it where the direct write reaches before the
// producer deploys.
func directOrder(fact, stream string) string {
	return fmt.Sprintf("deploy every consumer of %s before its producer: those of other services must read stream %q by then instead of a queue bound to the events exchange, since the producer writes %s into the stream directly", fact, stream, fact)
}

func consumerList(names []string) string {
	if len(names) == 1 {
		return "consumer " + names[0]
	}
	return "consumers " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// shippedByVersions gives the facts whose break the version window ships
// safely (Migration.Safe) the order that window allows: any. Without the
// window the same changes would need an order, or allow none; with it,
// consumers of either version read what the producer publishes, so the
// verdict must not say otherwise beside the migration note. A fact now
// written directly into a stream still needs its consumers first: the
// window ships its schema, not the queues of other services that the
// direct write passes by.
func (r *Report) shippedByVersions() {
	for i, d := range r.Deploys {
		m, ok := r.migration(d.Fact)
		if !ok || !m.Safe {
			continue
		}
		if stream, ok := r.writesDirect(d.Fact); ok {
			r.Deploys[i].First = "consumers"
			r.Deploys[i].Consumers = nil
			r.Deploys[i].Message = fmt.Sprintf("the break of %s's schema is shipped safely by its version window, but %s", d.Fact, directOrder(d.Fact, stream))
			continue
		}
		var how []string
		if d.Breaks&Forward != 0 {
			how = append(how, "the producer may deploy first, since it publishes the old version too")
		}
		if d.Breaks&Backward != 0 {
			how = append(how, "consumers may deploy first, since they read old facts through upcasts")
		}
		r.Deploys[i].First = "any"
		r.Deploys[i].Consumers = nil
		r.Deploys[i].Message = fmt.Sprintf("the break of %s is shipped safely by its version window: deploy its producer and consumers in any order (%s)", d.Fact, strings.Join(how, "; "))
	}
}

// writesDirect returns the stream the report's fact is newly written into
// directly (stream-publish-direct), if it is.
func (r *Report) writesDirect(fact string) (string, bool) {
	i := slices.IndexFunc(r.Changes, func(c Change) bool { return c.Fact == fact && c.Rule == StreamPublishDirect })
	if i < 0 {
		return "", false
	}
	return r.Changes[i].stream, true
}
