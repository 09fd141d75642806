package schemadiff

import (
	"cmp"
	"slices"
)

// Verdict says what a change means for the people who run the consumers.
type Verdict string

const (
	// Breaking is a change that breaks a direction its mode requires, to
	// a fact whose x-version was not raised, or that fails in every mode
	// (Rule.Always). It fails the diff: nobody announced it.
	Breaking Verdict = "breaking"
	// Intentional is a change that breaks a direction its mode requires,
	// to a fact whose x-version was raised (or a fact removed after being
	// deprecated): the author saw it coming and told the consumers.
	Intentional Verdict = "intentional"
	// Ordered is a change that breaks only a direction its mode does not
	// require: it is safe when producers and consumers deploy in the order
	// the report gives.
	Ordered Verdict = "ordered"
	// Compatible is a change that breaks no consumer in either direction.
	Compatible Verdict = "compatible"
)

// rank orders verdicts for reports: the changes that fail a build first.
func (v Verdict) rank() int {
	switch v {
	case Breaking:
		return 0
	case Intentional:
		return 1
	case Ordered:
		return 2
	default:
		return 3
	}
}

// Side says which of the two directories a position points into.
type Side string

const (
	Old Side = "old" // the directory before the change
	New Side = "new" // the directory after the change
)

// Pos is a place in one of the two schema directories.
type Pos struct {
	Side    Side   // which directory File is in
	File    string // slash-separated path relative to that schema directory
	Line    int    // 1-based; 0 when unknown
	Col     int    // 1-based byte column; 0 when unknown
	Pointer string // JSON pointer into File
	// Label names the older version File is in, for a change a _TRANSITIVE
	// mode found against it; "" for the two directories compared.
	Label string
}

// Change is one difference between the two directories, classified by a
// rule. Rule names are stable: scripts and reviewers may rely on them.
type Change struct {
	Rule   string    // stable rule name, e.g. "property-removed"
	Breaks Direction // the directions in which consumers fail because of it
	Mode   Mode      // the compatibility mode it is judged in: its fact's, or the manifest's
	// Breaking reports that the change breaks a direction its mode
	// requires (or fails in every mode); its Verdict says whether that was
	// announced.
	Breaking bool
	Verdict  Verdict // see [Verdict]
	Fact     string  // routing key of the fact (the new key when it changed); "" for consumer-only changes
	Consumer string  // consumer name, for changes to what a consumer receives
	Path     string  // JSON pointer from the fact's root schema, $refs followed ("" is the fact itself)
	Pos      Pos     // where to look: in the new directory, or the old one for removals
	Message  string  // what changed, in a sentence
	// Against names the older version the change was found against, for
	// a _TRANSITIVE mode; "" is the directory the report compares with.
	Against string

	// stillLive is set on a version-retired change whose version the old
	// directory still published or had a consumer pinned to: retired in
	// the same change that stopped needing it, so nothing has drained yet;
	// and on a version-unpublished change whose version a consumer of the
	// old directory still read, and which reads no version published now.
	stillLive bool
	// stream is the stream a stream-publish-direct change's fact is now
	// written into, for its deploy order.
	stream string
	// enumType is set on a change to the values of an enum or const
	// that the generator declares as a Go type of its own (a string or
	// integer enum, model.EnumBase): shipped as a new version, each
	// version has its own type for it, which generated casts do not
	// convert, so the migration says both casts are written by hand.
	enumType bool
}

// FactVersions records the x-version of a fact on both sides.
type FactVersions struct {
	Fact string // routing key (new key when it changed)
	Old  int    // x-version before; 0 when the fact is new
	New  int    // x-version after; 0 when the fact was removed
}

// Raised reports whether the author raised x-version to announce a
// breaking change.
func (v FactVersions) Raised() bool { return v.Old > 0 && v.New > v.Old }

// Report is the result of comparing two schema directories.
type Report struct {
	Changes  []Change       // sorted: breaking, intentional, ordered, compatible; then by fact, consumer, path, rule
	Versions []FactVersions // one per fact present on either side, sorted by routing key
	// Migrations say, per fact with a change that breaks consumers, which
	// way of shipping it is safe (see migrate.go), sorted by routing key.
	Migrations []Migration
	// Deploys says, for each fact with a change that breaks in some
	// direction, which side must deploy first; sorted by fact.
	Deploys []Deploy
	// Importer marks a report of [CompareImport]: judged for the
	// consumers of a directory that imports the compared one.
	Importer bool
}

// Unannounced counts breaking changes that no x-version announced. A
// report with any fails `warren diff`.
func (r *Report) Unannounced() int { return r.count(Breaking) }

// Intentional counts breaking changes announced by a raised x-version.
func (r *Report) Intentional() int { return r.count(Intentional) }

// Ordered counts changes that are safe only in the deploy order given.
func (r *Report) Ordered() int { return r.count(Ordered) }

// Compatible counts compatible changes.
func (r *Report) Compatible() int { return r.count(Compatible) }

func (r *Report) count(v Verdict) int {
	n := 0
	for _, c := range r.Changes {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// Version returns the versions recorded for fact.
func (r *Report) Version(fact string) (FactVersions, bool) {
	i, ok := slices.BinarySearchFunc(r.Versions, fact, func(v FactVersions, key string) int { return cmp.Compare(v.Fact, key) })
	if !ok {
		return FactVersions{}, false
	}
	return r.Versions[i], true
}

func sortChanges(cs []Change) {
	slices.SortStableFunc(cs, func(a, b Change) int {
		return cmp.Or(
			cmp.Compare(a.Verdict.rank(), b.Verdict.rank()),
			cmp.Compare(a.Fact, b.Fact),
			cmp.Compare(a.Consumer, b.Consumer),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Against, b.Against),
			cmp.Compare(a.Message, b.Message),
		)
	})
}
