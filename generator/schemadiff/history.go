package schemadiff

// Version is one earlier state of a schema directory, for a _TRANSITIVE
// comparison: a git revision, say.
type Version struct {
	Label string // how the report names it: "HEAD~2" or a commit
	Dir   *Dir
}

// CompareHistory is [Compare] of base with new, where facts in a
// _TRANSITIVE mode are also compared with their older versions: every
// entry of older (newest first, each older than base) in which the fact
// still has the x-version it has in base. The walk for a fact stops at the
// first entry where its x-version differs or it does not exist: there it
// was last raised, and what came before was announced. A fact whose
// x-version the new side raises is compared with base alone, for the same
// reason.
//
// Changes found only against an older version carry its label in Against,
// and are judged like the others: a consumer built from that version may
// still be running, and facts written under it may still be queued.
func CompareHistory(base *Dir, older []Version, new *Dir) *Report {
	r := compare(base, new)
	seen := map[string]bool{}
	for _, c := range r.Changes {
		seen[changeKey(c)] = true
	}
	reports := make([]*Report, len(older)) // compared lazily, at most once each
	for _, f := range new.Schemas.Facts {
		if !new.Mode(f).Transitive() {
			continue
		}
		b := base.Fact(f.RoutingKey)
		if b == nil || f.Version != b.Version {
			continue // new, or its version raised now
		}
		for i, v := range older {
			o := v.Dir.Fact(f.RoutingKey)
			if o == nil || o.Version != b.Version {
				break
			}
			if reports[i] == nil {
				reports[i] = compare(v.Dir, new)
			}
			for _, c := range reports[i].Changes {
				// How the fact is published is no part of its schema: a
				// stream that went direct since an older version was
				// judged against base when it did.
				if c.Fact != f.RoutingKey || c.Consumer != "" || c.Breaks == Neither || c.Rule == StreamPublishDirect || c.Rule == VersionUnpublished {
					continue
				}
				if k := changeKey(c); !seen[k] {
					seen[k] = true
					c.Against = v.Label
					if c.Pos.Side == Old {
						c.Pos.Label = v.Label
					}
					r.Changes = append(r.Changes, c)
				}
			}
		}
	}
	r.judge(base, new)
	r.migrate(base, new)
	r.unpublishedMigrations()
	return r.finish()
}

// changeKey identifies a change by what it says, wherever it was found.
func changeKey(c Change) string {
	return c.Rule + "\x00" + c.Fact + "\x00" + c.Consumer + "\x00" + c.Path + "\x00" + c.Message
}
