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
	widens := map[string]bool{}  // facts whose break makes old consumers refuse values new facts may hold
	enums := map[string]bool{}   // facts whose break changes the values of an enum of a Go type of its own
	for _, c := range r.Changes {
		// A fact written directly into a stream misses the queues of
		// other services whichever versions are published, and versions
		// share one routing key: no version window ships either, and
		// their messages and the hint say what does.
		if c.Fact != "" && c.Consumer == "" && c.Breaking && c.Rule != FactRemoved && c.Rule != VersionRetired && c.Rule != StreamPublishDirect && c.Rule != RoutingKeyChanged && c.Rule != VersionUnpublished {
			broken[c.Fact] |= c.Breaks
			narrows[c.Fact] = narrows[c.Fact] || c.Breaks&Backward != 0 && narrowing[c.Rule]
			widens[c.Fact] = widens[c.Fact] || c.Breaks&Forward != 0 && widening[c.Rule]
			enums[c.Fact] = enums[c.Fact] || c.enumType
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
			r.Migrations = append(r.Migrations, Migration{Fact: key, Message: withoutVersions(broken[key], o, n, casts{narrows: narrows[key], widens: widens[key], enum: enums[key]})})
			continue
		}
		if m == nil {
			m, _ = model.Build(context.Background(), new.Schemas, model.Options{PackageOptional: true})
		}
		f := factOf(m, key)
		var parts []string
		safe := true
		d := broken[key]
		// Consumers built for the new version read old facts through
		// upcasts, whichever direction broke: a hand-written one is
		// named even when no old fact breaks them, since without it
		// they do not compile.
		if up := upcasts(f, o.Version, n.Version); d&Backward != 0 || slices.ContainsFunc(up, byHand) {
			part, ok := upcastNote(f, up, o.Version, n.Version)
			parts = append(parts, part)
			safe = safe && ok
		}
		published := new.Schemas.Manifest.PublishedVersions(key, n.Version)
		dual := slices.Contains(published, o.Version)
		var down []*model.Cast
		if f != nil && f.Import == nil {
			down = f.Downcasts(o.Version, model.AssertedFormats(new.Schemas.Manifest))
		}
		switch {
		case d&Forward != 0 && dual:
			parts = append(parts, fmt.Sprintf("consumers built for version %d keep reading it: the publisher publishes versions %s as one fact (a dual publish window), writing version %d through downcasts%s; drop %d from warren.json \"versions\" once warren status shows no consumer reading it", o.Version, joinInts(published), o.Version, downcastSteps(f, down), o.Version))
		case d&Forward != 0:
			safe = false
			parts = append(parts, fmt.Sprintf("consumers built for version %d poison version %d facts they cannot read: publish both (warren.json \"versions\": {%q: {\"publish\": [%d, %d]}}) until they upgrade, or deploy them first; to publish version %d, the publisher writes it through downcasts%s", o.Version, n.Version, key, o.Version, n.Version, o.Version, downcastSteps(f, down)))
		case dual && slices.ContainsFunc(down, byHand):
			// No consumer breaks, but the publisher publishes the old
			// version and does not compile without its downcasts.
			parts = append(parts, fmt.Sprintf("the publisher publishes versions %s as one fact, writing version %d through downcasts%s", joinInts(published), o.Version, downcastSteps(f, down)))
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

// widening are the rules of a change after which the old schema refuses
// values that facts written under the new one may hold: the publisher of
// a dual publish window writes the old version through a hand-written
// downcast that maps those values, the way round of narrowing (the
// generator's judgement, model.Cast.Narrowed of the downcast).
var widening = map[string]bool{
	ConstraintLoosened: true,
	ConstraintChanged:  true,
	EnumValueAdded:     true,
	TypeWidened:        true,
}

// casts says what the breaks of a fact shipped in place mean for the
// casts of a version window that would ship them.
type casts struct {
	narrows bool // the new schema refuses values old facts may hold: a hand-written upcast
	widens  bool // the old schema refuses values new facts may hold: a hand-written downcast
	// enum is set when the values of an enum of a Go type of its own
	// change (Change.enumType): each version that declares it then has
	// a type of its own for it, which generated casts do not convert,
	// so both casts are written by hand.
	enum bool
}

// withoutVersions says how a break ships when the old version is not
// kept beside the new one. Its deploy order is spelt out, since not every
// format prints the report's deploy orders beside it. cs says which casts
// the version window it advises takes by hand.
func withoutVersions(d Direction, o, n *load.Fact, cs casts) string {
	keep := fmt.Sprintf("keep version %d (%s) beside version %d, in a file of its own", o.Version, o.Path(), n.Version)
	newVersion := n.Version
	if n.Version <= o.Version {
		newVersion = o.Version + 1
		keep = fmt.Sprintf("put the change in a new file with x-version %d and keep version %d (%s) beside it", newVersion, o.Version, o.Path())
	}
	const enumOwnType = "the enum is a Go type of its own in each version that declares it, which generated casts do not convert"
	upcasts := "through upcasts"
	switch {
	case cs.narrows:
		upcasts = fmt.Sprintf("through an upcast written by hand: version %d refuses values that version %d facts may hold, so no upcast is generated for the change, and the consumer does not compile until its handler has the upcast, which must map each value version %d refuses to one it accepts", newVersion, o.Version, newVersion)
	case cs.enum:
		upcasts = "through an upcast written by hand: " + enumOwnType + ", and the consumer does not compile until its handler has the upcast"
	}
	// The publisher of a dual publish window writes the old version
	// through downcasts, which NewPublisher and NewOutboxWriter take.
	downcasts := ""
	switch {
	case cs.widens:
		downcasts = fmt.Sprintf(", writing version %d through a downcast written by hand: version %d refuses values that version %d facts may hold, so no downcast is generated for the change, and the publisher does not compile until the Downcasters that NewPublisher and NewOutboxWriter take has the downcast, which must map each value version %d refuses to one it accepts", o.Version, o.Version, newVersion, o.Version)
	case cs.enum:
		downcasts = fmt.Sprintf(", writing version %d through a downcast written by hand: %s, and the publisher does not compile until the Downcasters that NewPublisher and NewOutboxWriter take has the downcast", o.Version, enumOwnType)
	}
	switch d {
	case Backward:
		return fmt.Sprintf("safe only if the producer of %s deploys before its consumers, and they only once no old fact is left to read; to ship without waiting, %s, so that new consumers read old facts %s", n.RoutingKey, keep, upcasts)
	case Forward:
		msg := fmt.Sprintf("safe only if the consumers of %s deploy before its producer; to deploy the producer first, %s and publish both (warren.json \"versions\"), a dual publish window%s", n.RoutingKey, keep, downcasts)
		if cs.enum || cs.narrows {
			// No old fact breaks new consumers, but they read old
			// facts through upcasts all the same, and a hand-written
			// one is theirs to write.
			msg += "; new consumers read old facts " + upcasts
		}
		return msg
	}
	if cs.narrows || cs.enum {
		upcasts += "," // the note ends in a clause of its own
	}
	return "no safe migration yet: consumers built from either side fail on facts of the other; " + keep + ", so that new consumers read old facts " + upcasts + " and the publisher publishes both (warren.json \"versions\") while old consumers are live" + downcasts
}

// factOf returns the fact of the model with routing key key; nil when
// the directory does not build.
func factOf(m *model.Model, key string) *model.Fact {
	if m == nil {
		return nil
	}
	i := slices.IndexFunc(m.Facts, func(f *model.Fact) bool { return f.RoutingKey == key })
	if i < 0 {
		return nil
	}
	return m.Facts[i]
}

// upcasts returns the upcasts that read version from of fact f as version
// to, oldest first.
func upcasts(f *model.Fact, from, to int) []*model.Cast {
	if f == nil {
		return nil
	}
	var out []*model.Cast
	for _, v := range f.Versions() {
		if v.Upcast != nil && v.Version > from && v.Version <= to {
			out = append(out, v.Upcast)
		}
	}
	return out
}

// byHand reports whether a cast is written by hand.
func byHand(c *model.Cast) bool { return !c.Generated }

// upcastNote says how consumers built for version to read facts of
// version from: each step's upcast, generated or hand-written, and what a
// hand-written one must do. f is nil when the directory does not build.
func upcastNote(f *model.Fact, up []*model.Cast, from, to int) (string, bool) {
	lead := fmt.Sprintf("consumers built for version %d read version %d facts (queued, in an outbox, replayed) through upcasts", to, from)
	if f == nil {
		return lead + " (the directory does not build, so which are generated is not known)", false
	}
	if len(up) == 0 {
		return lead, false
	}
	return lead + ": " + castSteps(up, "the consumer does not compile until its handler has it"), true
}

// downcastSteps says how the publisher writes an older version of fact
// f from its newest: each step's downcast, generated or hand-written,
// and what a hand-written one must do. The generated package's
// NewPublisher and NewOutboxWriter take the hand-written ones (a
// Downcasters value), so a missing one is a compile error in the
// publisher, the first a reader of the advice would meet.
func downcastSteps(f *model.Fact, down []*model.Cast) string {
	switch {
	case f == nil:
		return " (the directory does not build, so which are generated is not known)"
	case len(down) == 0:
		return ""
	}
	return ": " + castSteps(down, "the publisher does not compile until the Downcasters that NewPublisher and NewOutboxWriter take has it")
}

// castSteps says of each cast whether it is generated, and of one written
// by hand, why and what it must do; compile says what does not compile
// without it.
func castSteps(cs []*model.Cast, compile string) string {
	steps := make([]string, 0, len(cs))
	for _, c := range cs {
		verb := "upcast"
		if c.From.Version > c.To.Version {
			verb = "downcast"
		}
		switch {
		case c.Generated:
			steps = append(steps, fmt.Sprintf("%d→%d generated", c.From.Version, c.To.Version))
		case len(c.Narrowed) > 0:
			steps = append(steps, fmt.Sprintf("%d→%d hand-written (%s: %s, so no %s is generated: it must map each value version %d refuses to one it accepts, and %s)", c.From.Version, c.To.Version, c.Method(), strings.Join(c.Narrowed, "; "), verb, c.To.Version, compile))
		case c.Why != "":
			steps = append(steps, fmt.Sprintf("%d→%d hand-written (%s: %s; %s)", c.From.Version, c.To.Version, c.Method(), c.Why, compile))
		default:
			steps = append(steps, fmt.Sprintf("%d→%d hand-written (%s: %s)", c.From.Version, c.To.Version, c.Method(), compile))
		}
	}
	return strings.Join(steps, ", ")
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
