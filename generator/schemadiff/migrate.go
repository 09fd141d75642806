package schemadiff

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Migration says how a fact's breaking changes ship without an outage,
// with what warren offers: the old version kept beside the new one,
// upcasts for consumers built for the new version that still receive old
// facts, a dual publish window for consumers still built for the old one,
// and the deploy order otherwise.
type Migration struct {
	Fact    string
	Safe    bool   // the directory as it stands makes the change safe to ship
	Message string // what makes it safe, or what would
}

// migration returns the migration of a fact, if it has one.
func (r *Report) migration(fact string) (Migration, bool) {
	i := slices.IndexFunc(r.Migrations, func(m Migration) bool { return m.Fact == fact })
	if i < 0 {
		return Migration{}, false
	}
	return r.Migrations[i], true
}

// migrate works out a Migration for each fact with a change that breaks
// consumers in a direction its mode requires.
func (r *Report) migrate(old, new *Dir) {
	broken := map[string]Direction{}
	narrows := map[string]bool{} // facts whose break refuses values old facts may hold
	for _, c := range r.Changes {
		// A fact written directly into a stream misses the queues of
		// other services whichever versions are published, and versions
		// share one routing key: no version window ships either, and
		// their messages and the hint say what does.
		if c.Fact != "" && c.Consumer == "" && c.Breaking && c.Rule != FactRemoved && c.Rule != VersionRetired && c.Rule != StreamPublishDirect && c.Rule != RoutingKeyChanged && c.Rule != VersionUnpublished {
			broken[c.Fact] |= c.Breaks
			narrows[c.Fact] = narrows[c.Fact] || c.Breaks&Backward != 0 && narrowing[c.Rule]
		}
	}
	var m *model.Model // built once, for the casts
	for _, key := range sortedKeys(broken) {
		o, n := old.Fact(key), new.Fact(key)
		if o == nil || n == nil {
			continue
		}
		kept, side := n.VersionOf(o.Version)
		if !side || kept == n {
			r.Migrations = append(r.Migrations, Migration{Fact: key, Message: withoutVersions(broken[key], o, n, narrows[key])})
			continue
		}
		if m == nil {
			m, _ = model.Build(context.Background(), new.Schemas, model.Options{PackageOptional: true})
		}
		var parts []string
		safe := true
		d := broken[key]
		if d&Backward != 0 {
			part, ok := upcastNote(m, key, o.Version, n.Version)
			parts = append(parts, part)
			safe = safe && ok
		}
		if d&Forward != 0 {
			published := new.Schemas.Manifest.PublishedVersions(key, n.Version)
			if slices.Contains(published, o.Version) {
				parts = append(parts, fmt.Sprintf("consumers built for version %d keep reading it: the publisher publishes versions %s as one fact (a dual publish window); drop %d from warren.json \"versions\" once warren status shows no consumer reading it", o.Version, joinInts(published), o.Version))
			} else {
				safe = false
				parts = append(parts, fmt.Sprintf("consumers built for version %d poison version %d facts they cannot read: publish both (warren.json \"versions\": {%q: {\"publish\": [%d, %d]}}) until they upgrade, or deploy them first", o.Version, n.Version, key, o.Version, n.Version))
			}
		}
		r.Migrations = append(r.Migrations, Migration{Fact: key, Safe: safe, Message: strings.Join(parts, "; ")})
	}
}

// narrowing are the rules of a change after which the new schema refuses
// values that facts written under the old one may hold: a version window
// ships them only with a hand-written upcast that maps those values, since
// a generated one copies them across as they are and its result fails the
// new schema (the generator decides the same, model.Cast.Narrowed, from
// the same judgement of each keyword: model.JudgeConstraint).
var narrowing = map[string]bool{
	ConstraintTightened: true,
	ConstraintChanged:   true,
	EnumValueRemoved:    true,
	TypeNarrowed:        true,
}

// withoutVersions says how a break ships when the old version is not
// kept beside the new one. Its deploy order is spelt out, since not every
// format prints the report's deploy orders beside it. narrows says that
// the new schema refuses values old facts may hold.
func withoutVersions(d Direction, o, n *load.Fact, narrows bool) string {
	keep := fmt.Sprintf("keep version %d (%s) beside version %d, in a file of its own", o.Version, o.Path(), n.Version)
	newVersion := n.Version
	if n.Version <= o.Version {
		newVersion = o.Version + 1
		keep = fmt.Sprintf("put the change in a new file with x-version %d and keep version %d (%s) beside it", newVersion, o.Version, o.Path())
	}
	upcasts := "through upcasts"
	if narrows {
		upcasts = fmt.Sprintf("through an upcast written by hand: version %d refuses values that version %d facts may hold, so no upcast is generated for the change, and the consumer does not compile until its handler has the upcast, which must map each value version %d refuses to one it accepts", newVersion, o.Version, newVersion)
	}
	switch d {
	case Backward:
		return fmt.Sprintf("safe only if the producer of %s deploys before its consumers, and they only once no old fact is left to read; to ship without waiting, %s, so that new consumers read old facts %s", n.RoutingKey, keep, upcasts)
	case Forward:
		return fmt.Sprintf("safe only if the consumers of %s deploy before its producer; to deploy the producer first, %s and publish both (warren.json \"versions\"), a dual publish window", n.RoutingKey, keep)
	}
	if narrows {
		upcasts += "," // the note ends in a clause of its own
	}
	return "no safe migration yet: consumers built from either side fail on facts of the other; " + keep + ", so that new consumers read old facts " + upcasts + " and the publisher publishes both (warren.json \"versions\") while old consumers are live"
}

// upcastNote says how consumers built for version to read facts of
// version from: each step's upcast, generated or hand-written, and what a
// hand-written one must do.
func upcastNote(m *model.Model, key string, from, to int) (string, bool) {
	lead := fmt.Sprintf("consumers built for version %d read version %d facts (queued, in an outbox, replayed) through upcasts", to, from)
	if m == nil {
		return lead + " (the directory does not build, so which are generated is not known)", false
	}
	i := slices.IndexFunc(m.Facts, func(f *model.Fact) bool { return f.RoutingKey == key })
	if i < 0 {
		return lead, false
	}
	var steps []string
	for _, v := range m.Facts[i].Versions() {
		c := v.Upcast
		if c == nil || v.Version <= from || v.Version > to {
			continue
		}
		switch {
		case c.Generated:
			steps = append(steps, fmt.Sprintf("%d→%d generated", c.From.Version, c.To.Version))
		case len(c.Narrowed) > 0:
			steps = append(steps, fmt.Sprintf("%d→%d hand-written (%s: %s, so no upcast is generated: it must map each value version %d refuses to one it accepts, and the consumer does not compile until its handler has it)", c.From.Version, c.To.Version, c.Method(), strings.Join(c.Narrowed, "; "), c.To.Version))
		case c.Why != "":
			steps = append(steps, fmt.Sprintf("%d→%d hand-written (%s: %s; the consumer does not compile until its handler has it)", c.From.Version, c.To.Version, c.Method(), c.Why))
		default:
			steps = append(steps, fmt.Sprintf("%d→%d hand-written (%s: the consumer does not compile until its handler has it)", c.From.Version, c.To.Version, c.Method()))
		}
	}
	return lead + ": " + strings.Join(steps, ", "), true
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]Direction) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
