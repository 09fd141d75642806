// Package saga runs long-running business processes declared in a
// manifest's "sagas": an instance per correlation id (an order), moved by
// facts and by timeouts of its own, whose state lives in a SQL table beside
// the idempotency guard's claims and the outbox.
//
// A saga is a consumer on the runtime's one engine: each fact is claimed
// by the guard, and in the claim's transaction its instance's state is
// read, the handler called, and the new state written with the version it
// read, together with the outbox rows of the facts the handler publishes
// and of the timeouts it schedules. A write that finds another version
// (another service instance handled a fact of the same instance first)
// reads the new state and calls the handler again, in the same
// transaction, without spending one of the fact's attempts; the conflict is
// counted ([Store.Stats]).
//
// Generated code binds a handler with [New]; this package is what it
// calls, and what [Store] keeps.
package saga

import (
	"context"
	"time"

	"github.com/warrenbus/warren/runtime"
)

// Instance is one saga instance as a handler sees it.
type Instance[S any] struct {
	ID      string // the correlation id the facts carry
	State   S      // the state as last committed; the zero value when New
	Version int64  // the version State was read at; 0 when New
	New     bool   // no instance existed: this fact starts one
	// Timeouts are the timeouts pending, by name.
	Timeouts []string
}

// Step is what a handler returns: the instance's new state, the facts to
// publish, the timeouts to schedule or cancel, and whether the saga is
// complete. Build it with [Next]; each method returns a new Step.
type Step[S any] struct {
	state   S
	publish []publish
	// timeouts are the Schedule and Cancel calls, in the order made; for
	// each name the last one is what the step does.
	timeouts []timeoutCall
	complete bool
}

type publish struct {
	fact    runtime.Fact
	payload any
}

// timeoutCall is one Schedule (cancel false, in d) or Cancel of a step.
type timeoutCall struct {
	timeout string
	cancel  bool
	in      time.Duration
}

// Next returns a step that leaves the instance in state.
func Next[S any](state S) Step[S] { return Step[S]{state: state} }

// Publish adds a fact to publish if, and only if, the step commits: it is
// written to the outbox in the step's transaction and validated against
// its schema there (a payload that does not match rolls the step back).
func (s Step[S]) Publish(f runtime.Fact, payload any) Step[S] {
	s.publish = append(append([]publish(nil), s.publish...), publish{f, payload})
	return s
}

// Schedule arranges for timeout to fire in d, as a fact of the saga's own
// scheduled in the outbox. Scheduling a timeout that is pending moves it:
// the step commits with one timeout of that name, due in d.
//
// Of the Schedule and Cancel calls of one step for one name, the last
// wins: Schedule(x, a).Schedule(x, b) schedules x once, in b;
// Schedule(x, d).Cancel(x) leaves x cancelled; Cancel(x).Schedule(x, d)
// schedules it. A name the saga does not declare, in Schedule or Cancel,
// fails the handling with a permanent error (the fact goes to poison,
// nothing of the step is written), as do a negative d in the Schedule
// that stands and a step that completes the instance with a timeout
// scheduled: a complete instance has none (see [Step.Complete]). A d of
// 0 fires the timeout at once.
func (s Step[S]) Schedule(timeout string, d time.Duration) Step[S] {
	s.timeouts = append(append([]timeoutCall(nil), s.timeouts...), timeoutCall{timeout: timeout, in: d})
	return s
}

// Cancel cancels a pending timeout; one the saga declares that is not
// pending is ignored. It undoes a Schedule of the same name made before
// it in the step (see [Step.Schedule]); a name the saga does not declare
// fails the handling, as in Schedule.
func (s Step[S]) Cancel(timeout string) Step[S] {
	s.timeouts = append(append([]timeoutCall(nil), s.timeouts...), timeoutCall{timeout: timeout, cancel: true})
	return s
}

// Complete ends the instance: its pending timeouts are cancelled, later
// facts find it complete (and are dropped), and it is removed once it has
// been complete for the store's KeepCompleted. A step that completes
// cannot also schedule a timeout, which would never fire: Complete with a
// Schedule left standing (not undone by a later Cancel) fails the
// handling with a permanent error, whichever of them was called first.
// Cancel beside Complete is allowed, and changes nothing.
func (s Step[S]) Complete() Step[S] {
	s.complete = true
	return s
}

// lastCalls returns, per timeout name, the last Schedule or Cancel of the
// step, in the order of those calls.
func (s Step[S]) lastCalls() []timeoutCall {
	last := map[string]int{}
	for i, c := range s.timeouts {
		last[c.timeout] = i
	}
	var out []timeoutCall
	for i, c := range s.timeouts {
		if last[c.timeout] == i {
			out = append(out, c)
		}
	}
	return out
}

// Rule is what a fact does when it finds no instance, or one.
type Rule string

// The rules of a fact of a saga.
const (
	Start  Rule = "start"  // no instance: start one
	Handle Rule = "handle" // an instance: handle the fact
	Ignore Rule = "ignore" // ack the fact without calling the handler
	Poison Rule = "poison" // send the fact to the poison queue
)

// Definition is what generated code knows of a saga.
type Definition struct {
	Name string // the saga's name in the manifest
	// ValidateState checks a stored state against the state's schema
	// before the handler sees it.
	ValidateState func(state []byte) error
	// KeepCompleted is how long [Store.PruneEvery] keeps a completed
	// instance (the manifest's keepCompleted); 0 means DefaultKeepCompleted.
	KeepCompleted time.Duration
}

// Binding is one fact, or the timeouts, of a saga bound to its handler
// method; made by [On] and [OnTimeout].
type Binding[S any] struct {
	fact        runtime.Fact
	correlation string
	whenMissing Rule
	whenExists  Rule
	timeout     string // "" for a fact
	// call decodes the payload and calls the handler method.
	call func(ctx context.Context, in Instance[S], payload []byte) (Step[S], error)
}
