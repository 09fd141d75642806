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
	for _, c := range r.Changes {
		// A fact written directly into a stream misses the queues of
		// other services whichever versions are published: no version
		// window ships it, and its message says what does.
		if c.Fact != "" && c.Consumer == "" && c.Breaking && c.Rule != FactRemoved && c.Rule != VersionRetired && c.Rule != StreamPublishDirect {
			broken[c.Fact] |= c.Breaks
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
			r.Migrations = append(r.Migrations, Migration{Fact: key, Message: withoutVersions(broken[key], o, n)})
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

// withoutVersions says how a break ships when the old version is not
// kept beside the new one.
func withoutVersions(d Direction, o, n *load.Fact) string {
	keep := fmt.Sprintf("keep version %d (%s) beside version %d, in a file of its own", o.Version, o.Path(), n.Version)
	if n.Version <= o.Version {
		keep = fmt.Sprintf("put the change in a new file with x-version %d and keep version %d (%s) beside it", o.Version+1, o.Version, o.Path())
	}
	switch d {
	case Backward:
		return "safe only in the deploy order above, once no old fact is left to read; to ship without waiting, " + keep + ", so that new consumers read old facts through upcasts"
	case Forward:
		return "safe only in the deploy order above; to deploy the producer first, " + keep + " and publish both (warren.json \"versions\"), a dual publish window"
	}
	return "no safe migration yet: consumers built from either side fail on facts of the other; " + keep + ", so that new consumers read old facts through upcasts and the publisher publishes both (warren.json \"versions\") while old consumers are live"
}

// upcastNote says how consumers built for version to read facts of
// version from: each step's upcast, generated or hand-written.
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
		if c.Generated {
			steps = append(steps, fmt.Sprintf("%d→%d generated", c.From.Version, c.To.Version))
		} else {
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
