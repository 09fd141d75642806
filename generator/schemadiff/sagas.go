package schemadiff

import "github.com/warrenbus/warren/generator/load"

// compareSagaStates judges the changes to the state schema of each saga
// present on both sides as a fact's are judged, in the manifest's mode:
// a stored state is written by one version of the service and read by
// the next (and, during a rolling deploy, by the one before), so it must
// stay readable both ways. Changes are filed under "state of saga <name>".
func compareSagaStates(old, new *Dir, r *Report) {
	if old.Schemas.Manifest == nil || new.Schemas.Manifest == nil {
		return
	}
	for _, n := range new.Schemas.Manifest.Sagas {
		for _, o := range old.Schemas.Manifest.Sagas {
			if o.Name != n.Name || o.State == nil || n.State == nil {
				continue
			}
			c := &comparer{old: old, new: new, fact: "state of saga " + n.Name, seen: map[[2]*load.Schema]bool{}}
			c.compare("", o.State, n.State)
			r.Changes = append(r.Changes, c.out...)
		}
	}
}
