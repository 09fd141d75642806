package schemadiff

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/warrenbus/warren/generator/load"
)

// Compare compares two schema directories, fact by fact and consumer by
// consumer, and judges every change it finds in its fact's compatibility
// mode ([Dir] reads it from x-compatibility or the manifest).
//
// Facts are paired by routing key; a fact whose routing key changed is
// recognised by its file, which stays the same. A change that breaks a
// direction its mode requires is Intentional when the fact's x-version went
// up, and Breaking otherwise; one that breaks only a direction the mode
// does not require is Ordered, and Report.Deploys says which side deploys
// first. Removing a fact is Intentional only when the old fact was already
// marked deprecated: deprecation is how its consumers were told.
func Compare(old, new *Dir) *Report {
	r := compare(old, new)
	r.judge(old, new)
	r.migrate(old, new)
	r.unpublishedMigrations()
	return r.finish()
}

// compare finds the changes between old and new, with what each breaks,
// and records the versions; judge decides what they mean.
func compare(old, new *Dir) *Report {
	r := &Report{}
	pairs, removed, added := pairFacts(old, new)
	// renamed maps an old routing key to the fact it became on the new side.
	renamed := map[string]string{}
	for _, p := range pairs {
		renamed[p.old.RoutingKey] = p.new.RoutingKey
		r.Versions = append(r.Versions, FactVersions{Fact: p.new.RoutingKey, Old: p.old.Version, New: p.new.Version})
		r.Changes = append(r.Changes, compareVersions(old, new, p.old, p.new)...)
		r.Changes = append(r.Changes, retiredVersions(old, p.old, p.new)...)
		r.Changes = append(r.Changes, unpublishedVersions(old, new, p.old, p.new)...)
	}
	for _, f := range removed {
		r.Versions = append(r.Versions, FactVersions{Fact: f.RoutingKey, Old: f.Version})
		msg := "fact %q was removed: its facts still queued reach consumers that no longer handle it"
		if f.Deprecated {
			msg = "fact %q was removed after being marked deprecated"
		}
		r.Changes = append(r.Changes, change(FactRemoved, f.RoutingKey, old.pos(Old, loc{f.Path(), ""}), msg, f.RoutingKey))
	}
	for _, f := range added {
		r.Versions = append(r.Versions, FactVersions{Fact: f.RoutingKey, New: f.Version})
		r.Changes = append(r.Changes, change(FactAdded, f.RoutingKey, new.pos(New, locOf(f.Schema)), "new fact %q", f.RoutingKey))
	}
	slices.SortFunc(r.Versions, func(a, b FactVersions) int { return cmp.Compare(a.Fact, b.Fact) })
	keepImported(old, new, renamed)
	r.Changes = append(r.Changes, compareConsumers(old, new, renamed)...)
	r.Changes = append(r.Changes, compareDirect(old, new, pairs)...)
	r.Changes = append(r.Changes, compareStreams(old, new)...)
	r.Changes = append(r.Changes, compareStreamStarts(old, new)...)
	r.Changes = append(r.Changes, compareStreamMoves(old, new)...)
	compareRequests(old, new, r)
	compareSagaStates(old, new, r)
	compareSagaQueues(old, new, r)
	return r
}

// keepImported records the imported facts that both sides import as
// unchanged for the consumers' comparison: their schemas are the
// producer's to judge (warren diff --base-module judges an update of them).
func keepImported(old, new *Dir, renamed map[string]string) {
	now := map[string]bool{}
	for _, f := range new.Schemas.ImportedFacts() {
		now[f.RoutingKey] = true
	}
	for _, f := range old.Schemas.ImportedFacts() {
		if now[f.RoutingKey] {
			renamed[f.RoutingKey] = f.RoutingKey
		}
	}
}

// judge sets the mode, Breaking and Verdict of every change.
func (r *Report) judge(old, new *Dir) {
	for i := range r.Changes {
		c := &r.Changes[i]
		c.Mode = new.Mode(nil)
		if c.Fact != "" {
			if f := new.Fact(c.Fact); f != nil {
				c.Mode = new.Mode(f)
			} else if f := old.Fact(c.Fact); f != nil {
				c.Mode = old.Mode(f)
			}
		}
		rule := ruleOf[c.Rule]
		c.Breaking = rule.Always && c.Breaks != Neither || c.Breaks&c.Mode.Requires() != 0
		switch {
		case c.Breaks == Neither:
			c.Verdict = Compatible
		case rule.Always:
			c.Verdict = Breaking
		case !c.Breaking:
			c.Verdict = Ordered
		case c.Rule == VersionRetired || c.Rule == VersionUnpublished:
			// A raised x-version announces neither: it is the consumers
			// still reading the old version that break.
			c.Verdict = Intentional
			if c.stillLive {
				c.Verdict = Breaking
			}
		case c.Rule == FactRemoved:
			c.Verdict = Breaking
			if f := old.Fact(c.Fact); f != nil && f.Deprecated {
				c.Verdict = Intentional
			}
		case c.Rule == RoutingKeyChanged:
			// Every version of a fact shares its routing key, so no
			// version window carries a new one: a raised x-version
			// announces nothing the bindings and the queued facts see.
			c.Verdict = Breaking
		default:
			c.Verdict = Breaking
			if v, _ := r.Version(c.Fact); v.Raised() {
				c.Verdict = Intentional
			}
		}
	}
}

// finish puts a judged report in its final order and derives the deploy
// orders from it.
func (r *Report) finish() *Report {
	r.Changes = dedupe(r.Changes)
	sortChanges(r.Changes)
	r.Deploys = deploys(r.Changes)
	r.shippedByVersions()
	return r
}

func change(rule, fact string, p Pos, format string, args ...any) Change {
	return Change{Rule: rule, Breaks: ruleOf[rule].Breaks, Fact: fact, Pos: p, Message: fmt.Sprintf(format, args...)}
}

type factPair struct{ old, new *load.Fact }

// pairFacts pairs facts by routing key, then pairs what is left by file:
// a fact file whose routing key changed is the same fact, renamed.
func pairFacts(old, new *Dir) (pairs []factPair, removed, added []*load.Fact) {
	newByKey := map[string]*load.Fact{}
	for _, f := range new.Schemas.Facts {
		newByKey[f.RoutingKey] = f
	}
	matched := map[string]bool{} // new routing keys already paired
	var leftOld []*load.Fact
	for _, f := range old.Schemas.Facts {
		if n, ok := newByKey[f.RoutingKey]; ok {
			pairs = append(pairs, factPair{f, n})
			matched[n.RoutingKey] = true
		} else {
			leftOld = append(leftOld, f)
		}
	}
	newByFile := map[string]*load.Fact{}
	for _, f := range new.Schemas.Facts {
		if !matched[f.RoutingKey] {
			newByFile[f.Path()] = f
		}
	}
	for _, f := range leftOld {
		if n, ok := newByFile[f.Path()]; ok {
			pairs = append(pairs, factPair{f, n})
			matched[n.RoutingKey] = true
			delete(newByFile, f.Path())
		} else {
			removed = append(removed, f)
		}
	}
	for _, f := range new.Schemas.Facts {
		if !matched[f.RoutingKey] {
			added = append(added, f)
		}
	}
	return pairs, removed, added
}

// compareVersions compares a fact present on both sides. When the new
// side keeps the old side's version next to newer ones (versions side by
// side), the kept version is compared with itself as it was, and each
// newer version with the one before it, under the fact's mode as any
// change; otherwise the old fact is compared with the new one.
func compareVersions(old, new *Dir, o, n *load.Fact) []Change {
	kept, ok := n.VersionOf(o.Version)
	if !ok || kept == n || o.RoutingKey != n.RoutingKey {
		return compareFact(old, new, o, n)
	}
	out := compareFact(old, new, o, kept)
	prevDir, prev := old, o
	for _, v := range n.Versions() {
		if v.Version <= o.Version {
			continue
		}
		c := newComparer(prevDir, new, v)
		c.sameSide = prevDir == new
		for _, ch := range c.compareFact(prev, v) {
			if ch.Rule != FactMoved { // a new file for a new version is no move
				out = append(out, ch)
			}
		}
		prevDir, prev = new, v
	}
	return out
}

func newComparer(old, new *Dir, n *load.Fact) *comparer {
	return &comparer{old: old, new: new, fact: n.RoutingKey, seen: map[[2]*load.Schema]bool{}}
}

// compareFact compares one fact present on both sides.
func compareFact(old, new *Dir, o, n *load.Fact) []Change {
	return newComparer(old, new, n).compareFact(o, n)
}

func (c *comparer) compareFact(o, n *load.Fact) []Change {
	new := c.new
	keyPos := new.pos(New, loc{n.KeyDoc.Path, n.KeyPointer})
	if o.RoutingKey != n.RoutingKey {
		c.add(RoutingKeyChanged, "", keyPos, "routing key changed from %q to %q: bindings and messages already queued use the old key", o.RoutingKey, n.RoutingKey)
	}
	if o.Location() != n.Location() {
		c.add(FactMoved, "", new.pos(New, locOf(n.Schema)), "schema moved from %s to %s", o.Location(), n.Location())
	}
	c.compare("", o.Schema, n.Schema)
	breaking := 0
	keyChanged := false // which no x-version announces: versions share the key
	for _, ch := range c.out {
		switch {
		case ch.Rule == RoutingKeyChanged:
			keyChanged = true
		case ch.Breaks != Neither:
			breaking++
		}
	}
	versionPos := new.pos(New, loc{n.Path(), "/x-version"})
	if n.InManifest() {
		versionPos = new.pos(New, loc{n.KeyDoc.Path, load.Append(n.KeyPointer, "version")})
	}
	switch {
	case n.Version < o.Version:
		c.add(VersionLowered, "", versionPos, "x-version lowered from %d to %d", o.Version, n.Version)
	case n.Version > o.Version && keyChanged && breaking > 0:
		c.add(VersionRaised, "", versionPos, "x-version raised from %d to %d to announce %s, but not the routing key change: every version of a fact shares its routing key", o.Version, n.Version, breakingChanges(breaking))
	case n.Version > o.Version && keyChanged:
		c.add(VersionRaised, "", versionPos, "x-version raised from %d to %d, which does not announce the routing key change: every version of a fact shares its routing key", o.Version, n.Version)
	case n.Version > o.Version && breaking > 0:
		c.add(VersionRaised, "", versionPos, "x-version raised from %d to %d to announce %s", o.Version, n.Version, breakingChanges(breaking))
	case n.Version > o.Version:
		c.add(VersionRaised, "", versionPos, "x-version raised from %d to %d, though no change to the fact breaks consumers", o.Version, n.Version)
	}
	return c.out
}

// compareConsumers reports what each consumer receives now compared with
// before, and what its queues become on the broker. A consumer that stops
// receiving a fact that still exists is the dangerous case: its old binding
// stays on the broker, so the fact keeps arriving at a consumer that no
// longer handles it and lands in its poison queue. One that starts
// receiving a fact poisons it wherever code built before runs.
func compareConsumers(old, new *Dir, renamed map[string]string) []Change {
	var out []Change
	newByName := map[string]Consumer{}
	for _, c := range new.Consumers {
		newByName[c.Name] = c
	}
	oldFacts := map[string]bool{}
	for _, f := range append(slices.Clone(old.Schemas.Facts), old.Schemas.ImportedFacts()...) {
		if k, ok := renamed[f.RoutingKey]; ok {
			oldFacts[k] = true
		}
	}
	oldNames := map[string]bool{}
	for _, oc := range old.Consumers {
		oldNames[oc.Name] = true
		at := loc{load.ManifestFile, appendPtr("/consumers", oc.Name)}
		nc, ok := newByName[oc.Name]
		if !ok {
			ch := change(ConsumerRemoved, "", old.pos(Old, at), "%s", removedMessage(old, oc.Name))
			ch.Consumer = oc.Name
			out = append(out, ch)
			continue
		}
		out = append(out, compareBindings(new, oc, nc, renamed, oldFacts)...)
		out = append(out, compareQueues(new, oc, nc)...)
	}
	for _, nc := range new.Consumers {
		if !oldNames[nc.Name] {
			ch := change(ConsumerAdded, "", new.pos(New, loc{load.ManifestFile, appendPtr("/consumers", nc.Name)}), "new consumer %q", nc.Name)
			ch.Consumer = nc.Name
			out = append(out, ch)
		}
	}
	return out
}

// removedMessage says what a removed consumer leaves on the broker. A
// queue consumer's work queue stays bound to the events exchange, so its
// facts keep piling up there. A stream consumer's work queue is bound to
// nothing (it holds only the consumer's own retries and deferrals): what
// stays is the offset it stored under its name in the stream, which the
// stream keeps as long as it exists (a consumer of that name added again
// goes on from it, not from its start), and its queues with what waits in
// them.
func removedMessage(old *Dir, name string) string {
	mc := manifestConsumer(old, name)
	if mc == nil || mc.Stream == "" {
		return fmt.Sprintf("consumer %q was removed; its queues and bindings stay on the broker, where facts keep piling up: warren declare reports them, and --prune unbinds them and deletes them once drained", name)
	}
	where := fmt.Sprintf("in stream %q", mc.Stream)
	if s := streamNamed(old, mc.Stream); s != nil && s.Partitions > 0 {
		where = fmt.Sprintf("in each partition of super stream %q", mc.Stream)
	}
	return fmt.Sprintf("stream consumer %q was removed; its work queue is bound to nothing, so no facts pile up for it, but the offset it stored under its name stays %s for as long as the stream does (a consumer of that name added again goes on from it, not from its start), and its work, retry and poison queues stay with what waits in them (its own retries and deferrals, its poisoned facts): warren declare reports them, and --prune deletes them once drained", name, where)
}

// compareBindings reports the facts a consumer stopped or started
// receiving. oldFacts holds the new routing keys of the facts that existed
// before.
func compareBindings(new *Dir, oc, nc Consumer, renamed map[string]string, oldFacts map[string]bool) []Change {
	var out []Change
	bindingsAt := new.pos(New, loc{load.ManifestFile, appendPtr("/consumers", nc.Name, "bindings")})
	now := map[string]bool{}
	for _, k := range nc.Facts {
		now[k] = true
	}
	before := map[string]bool{}
	for _, k := range oc.Facts {
		nk, stillThere := renamed[k]
		if !stillThere {
			continue // the fact is gone; fact-removed says so
		}
		before[nk] = true
		if now[nk] {
			continue
		}
		var ch Change
		if nk != k {
			ch = change(BindingStoppedMatching, nk, bindingsAt, "consumer %q no longer receives %q (formerly %q): its bindings do not match the new routing key, and the facts queued for it under the old key are poisoned as not handled", oc.Name, nk, k)
		} else {
			ch = change(BindingStoppedMatching, nk, bindingsAt, "consumer %q no longer receives %q: the facts already queued for it are poisoned as not handled, and so is every later one while its old binding stays on the broker (warren declare --prune removes it)", oc.Name, nk)
		}
		ch.Consumer = oc.Name
		out = append(out, ch)
	}
	for _, k := range nc.Facts {
		if before[k] {
			continue
		}
		var ch Change
		if !oldFacts[k] {
			ch = change(BindingStartedMatching, k, bindingsAt, "new fact %q matches the bindings of consumer %q: built from the old schema, it has no handler and poisons it as not handled, so deploy %q before the fact's producer", k, nc.Name, nc.Name)
		} else {
			ch = change(BindingStartedMatching, k, bindingsAt, "consumer %q now receives %q: instances still running code built before poison it as not handled until every instance handles it", nc.Name, k)
		}
		ch.Consumer = nc.Name
		out = append(out, ch)
	}
	return out
}

// dedupe drops repeated changes: a definition shared by two properties of
// one fact is compared once per property, and reports the same change.
func dedupe(cs []Change) []Change {
	type key struct {
		rule, fact, consumer, file, ptr, msg string
		side                                 Side
	}
	seen := map[key]bool{}
	out := cs[:0]
	for _, c := range cs {
		k := key{c.Rule, c.Fact, c.Consumer, c.Pos.File, c.Pos.Pointer, c.Message, c.Pos.Side}
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// breakingChanges says how many changes break consumers, in agreement.
func breakingChanges(n int) string {
	if n == 1 {
		return "1 change that breaks consumers"
	}
	return fmt.Sprintf("%d changes that break consumers", n)
}

// retiredVersions reports the older versions of a fact that the new
// directory no longer declares. Retiring one is intentional once the old
// directory had closed its window (it neither published the version nor
// had a consumer pinned to it), so that its facts had time to drain;
// removed in the same change that stops publishing or reading it, it is
// breaking: facts of it written until the deploy would reach consumers
// that no longer read it.
func retiredVersions(old *Dir, o, n *load.Fact) []Change {
	var out []Change
	// Only a version kept beside a newer one is retired: the newest on
	// the old side, edited into a new x-version, is a raise.
	for _, v := range o.Older {
		if _, kept := n.VersionOf(v.Version); kept || v.Version >= n.Version {
			continue
		}
		live := slices.Contains(old.Schemas.Manifest.PublishedVersions(o.RoutingKey, o.Version), v.Version)
		for _, c := range old.Schemas.Manifest.Consumers {
			live = live || c.VersionOf(o.RoutingKey) == v.Version
		}
		msg := fmt.Sprintf("version %d was retired: consumers built from the new directory no longer read its facts still queued, in poison or in outboxes", v.Version)
		if live {
			msg += fmt.Sprintf("; the old directory still published it or had a consumer pinned to it: first drop it from warren.json (\"versions\", and every consumer's \"versions\"), deploy, and remove the file once warren status and the outbox show no version %d left", v.Version)
		}
		c := change(VersionRetired, n.RoutingKey, old.pos(Old, loc{v.Path(), ""}), "%s", msg)
		c.stillLive = live
		out = append(out, c)
	}
	return out
}
