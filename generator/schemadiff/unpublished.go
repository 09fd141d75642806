package schemadiff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// A fact published in several versions (warren.json "versions") is a
// window for the consumers still built for an older one: a consumer pinned
// to version N reads N and, through upcasts, every older version, and no
// newer one (its own schema judges a newer copy, and poisons what it
// rejects, see runtime.VersionError). The publish list is no part of any
// schema, so the comparison of the fact's schemas does not see it close:
// version-unpublished does. It breaks forward, old consumers and the new
// publisher: a consumer of the old directory pinned to a version that no
// longer reaches it poisons every fact until it is moved to a published
// version and deployed. The old directory is what runs until the deploy,
// so its pins count, even when the same change moves them.

// unpublishedVersions reports each older version the old directory
// published beside the newest and the new one no longer publishes, while
// it still declares it (a version whose file is gone is version-retired).
// The change is live, and breaking, when a consumer of the old directory
// reads nothing the new publisher publishes, having read that version
// before; it names them.
func unpublishedVersions(old, new *Dir, o, n *load.Fact) []Change {
	if o.RoutingKey != n.RoutingKey || old.Schemas.Manifest == nil || new.Schemas.Manifest == nil {
		return nil // a routing key changed breaks everything: routing-key-changed
	}
	key := o.RoutingKey
	before := old.Schemas.Manifest.PublishedVersions(key, o.Version)
	after := new.Schemas.Manifest.PublishedVersions(key, n.Version)
	var out []Change
	for _, v := range before {
		if v >= o.Version || slices.Contains(after, v) {
			continue // the newest is the schema comparison's; still published
		}
		if _, declared := n.VersionOf(v); !declared {
			continue // retired: version-retired
		}
		var stranded []string
		for _, c := range old.Schemas.Manifest.Consumers {
			pin := c.VersionOf(key)
			if pin == 0 || !old.binds(c.Name, key) || pin >= o.Version || load.VersionRead(before, pin) != v || load.VersionRead(after, pin) != 0 {
				continue
			}
			name := c.Name
			if pin != v {
				name += fmt.Sprintf(" (pinned to version %d, which read it through upcasts)", pin)
			}
			stranded = append(stranded, name)
		}
		now := fmt.Sprintf("the newest alone, %d, without a \"versions\" entry", n.Version)
		switch listed := slices.ContainsFunc(new.Schemas.Manifest.Versions, func(pv *load.PublishVersions) bool { return pv.Fact == key }); {
		case listed && len(after) == 1:
			now = fmt.Sprintf("version %d alone", after[0])
		case listed:
			now = "versions " + joinInts(after)
		}
		msg := fmt.Sprintf("version %d is no longer published (warren.json \"versions\" published %s; now %s)", v, joinInts(before), now)
		if len(stranded) > 0 {
			msg += fmt.Sprintf(": consumers of the old directory pinned to it (%s) read no version published now and poison each %s their own version's schema refuses until they are moved and deployed; keep publishing version %d (\"versions\": {%s: {\"publish\": [%s]}}) until every consumer pinned to it is moved to a published version and deployed, then drop it",
				strings.Join(stranded, ", "), key, v, strconv.Quote(key), joinInts(slices.Sorted(slices.Values(append(slices.Clone(after), v)))))
		} else {
			msg += fmt.Sprintf(": no consumer of the old directory was pinned to it; a consumer still built for it elsewhere (in another service importing this directory) poisons every %s", key)
		}
		ch := change(VersionUnpublished, key, unpublishedPos(old, new, key), "%s", msg)
		ch.stillLive = len(stranded) > 0
		out = append(out, ch)
	}
	return out
}

// binds reports whether the directory's consumer name receives fact key.
func (d *Dir) binds(name, key string) bool {
	i := slices.IndexFunc(d.Consumers, func(c Consumer) bool { return c.Name == name })
	return i >= 0 && slices.Contains(d.Consumers[i].Facts, key)
}

// unpublishedPos is where the fact's publish list is: the new manifest's
// entry, else the old one's that was dropped.
func unpublishedPos(old, new *Dir, key string) Pos {
	for _, pv := range new.Schemas.Manifest.Versions {
		if pv.Fact == key {
			return new.pos(New, loc{load.ManifestFile, load.Append(pv.Pointer, "publish")})
		}
	}
	for _, pv := range old.Schemas.Manifest.Versions {
		if pv.Fact == key {
			return old.pos(Old, loc{load.ManifestFile, pv.Pointer})
		}
	}
	return new.pos(New, loc{load.ManifestFile, ""})
}

// unpublishedMigrations adds the migration of each fact with a live
// version-unpublished change: no version window ships it, whatever its
// other changes, until the old version is published again.
func (r *Report) unpublishedMigrations() {
	for _, c := range r.Changes {
		if c.Rule != VersionUnpublished || !c.stillLive || !c.Breaking {
			continue
		}
		_, advice, _ := strings.Cut(c.Message, "; keep publishing ")
		note := "keep publishing " + advice
		i := slices.IndexFunc(r.Migrations, func(m Migration) bool { return m.Fact == c.Fact })
		if i < 0 {
			r.Migrations = append(r.Migrations, Migration{Fact: c.Fact, Message: note})
			continue
		}
		r.Migrations[i].Safe = false
		r.Migrations[i].Message += "; " + note
	}
	slices.SortStableFunc(r.Migrations, func(a, b Migration) int { return strings.Compare(a.Fact, b.Fact) })
}
