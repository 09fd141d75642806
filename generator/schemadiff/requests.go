package schemadiff

import (
	"cmp"
	"slices"

	"github.com/warrenbus/warren/generator/load"
)

// compareRequests judges the changes to requests present on both sides as
// a fact's are judged, in the manifest's mode: the request schema is
// written by requesters and read by its responder, the reply written by
// the responder and read by requesters. Changes are filed under
// "request <key>" and "reply <key>", and a raised x-version of the request
// file makes a break intentional for both.
func compareRequests(old, new *Dir, r *Report) {
	before := map[string]*load.Request{}
	for _, q := range old.Schemas.Requests {
		before[q.Key] = q
	}
	for _, n := range new.Schemas.Requests {
		o, ok := before[n.Key]
		if !ok {
			continue
		}
		for _, part := range []struct {
			label  string
			os, ns *load.Schema
		}{{"request " + n.Key, o.Schema, n.Schema}, {"reply " + n.Key, o.Reply, n.Reply}} {
			c := &comparer{old: old, new: new, fact: part.label, seen: map[[2]*load.Schema]bool{}}
			c.compare("", part.os, part.ns)
			r.Changes = append(r.Changes, c.out...)
			r.Versions = append(r.Versions, FactVersions{Fact: part.label, Old: o.Version, New: n.Version})
		}
	}
	slices.SortFunc(r.Versions, func(a, b FactVersions) int { return cmp.Compare(a.Fact, b.Fact) })
}
