package load

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Saga is one entry of the manifest's "sagas", sorted by name: a
// long-running process whose instances are moved by facts and timeouts,
// with a state the runtime keeps in SQL.
type Saga struct {
	Name        string
	Pointer     string // JSON pointer of the entry in warren.json
	Description string
	// State is the schema of the instance's state ("state"); nil when it
	// did not resolve (reported already).
	State *Schema
	// StartsWith are the routing keys of "startsWith", as written.
	StartsWith []string
	// Facts are "handles", sorted by routing key.
	Facts []*SagaFact
	// Timeouts are the names of "timeouts", sorted, with their
	// descriptions.
	Timeouts []SagaTimeout
	// KeepCompleted is "keepCompleted": how long a completed instance is
	// kept; 0 when not given.
	KeepCompleted time.Duration
	// Settings are the saga queue's consumer settings.
	Settings Settings
	// Queue is "queue": the name of the saga's work queue, "" for the
	// default "saga.<name>" (see QueueName).
	Queue string
}

// QueueName returns the name of the saga's work queue: "queue", or
// "saga.<name>" when it is not given.
func (sg *Saga) QueueName() string {
	if sg.Queue != "" {
		return sg.Queue
	}
	return "saga." + sg.Name
}

// SagaFact is one fact a saga handles: how it finds its instance and
// what it does when there is none, or one already.
type SagaFact struct {
	RoutingKey  string
	Pointer     string // of the entry in warren.json
	Correlation string // JSON pointer into the payload
	// WhenMissing is "start", "ignore" or "poison"; defaults applied:
	// "start" for a fact of startsWith, else "poison".
	WhenMissing string
	// WhenExists is "handle", "ignore" or "poison"; default "handle".
	WhenExists string
}

// SagaTimeout is one of a saga's timeouts.
type SagaTimeout struct {
	Name        string
	Description string
}

// readSagas reads the manifest's "sagas"; the meta-schema has checked
// their shape. A startsWith key that "handles" does not list is an error.
func (s *Schemas) readSagas(errs *ErrorList) []*Saga {
	doc := s.Manifest.Doc
	root, _ := doc.Value.(map[string]any)
	decls, _ := root["sagas"].(map[string]any)
	var out []*Saga
	for _, name := range SortedKeys(decls) {
		obj := decls[name].(map[string]any)
		sg := &Saga{Name: name, Pointer: Pointer("sagas", name)}
		sg.Description, _ = obj["description"].(string)
		sg.Queue, _ = obj["queue"].(string)
		ref := obj["state"].(string)
		target, err := s.resolve(FileURI(doc.Path), ref)
		switch {
		case errors.Is(err, errNotLoaded):
		case err != nil:
			errs.Add(doc.Errorf(Append(sg.Pointer, "state"), "saga %s: %s", strconv.Quote(name), strings.Replace(err.Error(), "$ref ", "state ", 1)))
		default:
			sg.State = target
		}
		for _, k := range obj["startsWith"].([]any) {
			sg.StartsWith = append(sg.StartsWith, k.(string))
		}
		handles := obj["handles"].(map[string]any)
		for _, key := range SortedKeys(handles) {
			h := handles[key].(map[string]any)
			f := &SagaFact{RoutingKey: key, Pointer: Append(Append(sg.Pointer, "handles"), key), WhenExists: "handle", WhenMissing: "poison"}
			f.Correlation = h["correlation"].(string)
			if slices.Contains(sg.StartsWith, key) {
				f.WhenMissing = "start"
			}
			if v, ok := h["whenMissing"].(string); ok {
				f.WhenMissing = v
			}
			if v, ok := h["whenExists"].(string); ok {
				f.WhenExists = v
			}
			sg.Facts = append(sg.Facts, f)
		}
		for i, key := range sg.StartsWith {
			if _, ok := handles[key]; !ok {
				errs.Add(doc.Errorf(AppendIndex(Append(sg.Pointer, "startsWith"), i), "saga %s starts with %s, which it does not handle: add it to \"handles\" with its \"correlation\"", strconv.Quote(name), strconv.Quote(key)))
			}
		}
		timeouts, _ := obj["timeouts"].(map[string]any)
		for _, tn := range SortedKeys(timeouts) {
			t := SagaTimeout{Name: tn}
			t.Description, _ = timeouts[tn].(map[string]any)["description"].(string)
			sg.Timeouts = append(sg.Timeouts, t)
		}
		if k, ok := obj["keepCompleted"].(string); ok {
			d, err := time.ParseDuration(k)
			if err != nil {
				errs.Add(doc.Errorf(Append(sg.Pointer, "keepCompleted"), "%s", badDuration(k, "24h", 1)))
			}
			sg.KeepCompleted = d
		}
		sg.Settings = readSettings(doc, sg.Pointer, obj, errs)
		out = append(out, sg)
	}
	return out
}

// FactPointer returns where the saga declares fact key, or the saga's
// place when it does not.
func (sg *Saga) FactPointer(key string) string {
	for _, f := range sg.Facts {
		if f.RoutingKey == key {
			return f.Pointer
		}
	}
	return sg.Pointer
}
