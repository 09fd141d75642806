package schemadiff

import (
	"slices"

	"github.com/warrenbus/warren/generator/model"
)

// CompareImport judges an update of an imported directory, old to new,
// from the side of one consumer directory that imports it and binds its
// facts with bindings. Only the facts those bindings match, before or
// after, count; the producer's own consumers are not this consumer's
// business and are left out. Each change is judged in the producer's mode
// for its fact, as [Compare] judges it, with one difference: a break the
// producer announced by raising x-version ([Intentional]) still breaks
// this consumer, so it is [Breaking] here. The producer's repository
// keeps judging its changes with [Compare], knowing nothing of remote
// consumers.
func CompareImport(old, new *Dir, bindings []string) *Report {
	bound := func(key string) bool {
		return slices.ContainsFunc(bindings, func(p string) bool { return model.TopicMatch(p, key) })
	}
	r := Compare(old, new)
	out := &Report{Importer: true}
	for _, c := range r.Changes {
		if c.Consumer != "" || c.Fact == "" || streamRules[c.Rule] || !bound(c.Fact) && !boundBefore(old, new, c.Fact, bound) {
			continue
		}
		if c.Rule == VersionUnpublished && c.Verdict != Ordered {
			// It breaks the consumers here pinned to the version, which
			// the producer's directories do not show; the producer's own
			// consumers are not theirs to judge.
			c.Verdict = Intentional
			c.Message += " (a consumer here pinned to it, consumers.<name>.versions, poisons every fact: move it to a version still published and deploy it before updating)"
			out.Changes = append(out.Changes, c)
			continue
		}
		if c.Verdict == Intentional {
			c.Verdict = Breaking
			c.Message += " (announced by a raised x-version, but a break for the consumers here all the same)"
		}
		out.Changes = append(out.Changes, c)
	}
	for _, v := range r.Versions {
		if bound(v.Fact) || boundBefore(old, new, v.Fact, bound) {
			out.Versions = append(out.Versions, v)
		}
	}
	return out.finish()
}

// boundBefore reports whether the fact that is key in new (or was, in old)
// had a routing key on the old side that the bindings match: a fact whose
// key changed away from the bindings is this consumer's concern too.
func boundBefore(old, new *Dir, key string, bound func(string) bool) bool {
	if old.Fact(key) != nil {
		return bound(key)
	}
	n := new.Fact(key)
	if n == nil {
		return false
	}
	for _, f := range old.Schemas.Facts {
		if f.Path() == n.Path() && bound(f.RoutingKey) {
			return true
		}
	}
	return false
}
