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

// compareSagaQueues reports each saga present on both sides whose work
// queue was renamed ("queue"): the old queue, still bound to the saga's
// facts, keeps filling on the broker, and what waits in it (its retries
// and poison lane too) is handled by nobody.
func compareSagaQueues(old, new *Dir, r *Report) {
	if old.Schemas.Manifest == nil || new.Schemas.Manifest == nil {
		return
	}
	for _, n := range new.Schemas.Manifest.Sagas {
		for _, o := range old.Schemas.Manifest.Sagas {
			if o.Name != n.Name || o.QueueName() == n.QueueName() {
				continue
			}
			at := new.pos(New, loc{load.ManifestFile, appendPtr("/sagas", n.Name)})
			// Filed under the saga, as its state's changes are.
			r.Changes = append(r.Changes, change(SagaQueueRenamed, "saga "+n.Name, at, "its work queue was renamed from %q to %q: the old queue and its bindings stay on the broker, where the saga's facts keep piling up and what waits there is handled by nobody; let it drain before the deploy, then warren declare --prune unbinds it and deletes it", o.QueueName(), n.QueueName()))
		}
	}
}
