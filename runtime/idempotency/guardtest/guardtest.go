// Package guardtest is the conformance suite that every idempotency guard
// passes: memory, PostgreSQL and SQLite run the same tests, switched on or
// off by the [Features] a store declares. A new store gets the whole
// contract checked by calling [Run] from one test function:
//
//	func TestMyGuard(t *testing.T) {
//		guardtest.Run(t, openMyGuard, guardtest.Features{Transactional: true, SharedStore: true})
//	}
package guardtest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Guard is the behaviour under test: the runtime's Guard contract plus
// pruning.
type Guard interface {
	Run(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error)
	Prune(ctx context.Context, olderThan time.Duration) (deleted int64, err error)
}

// Work is a handler's side effect written through the claim's transaction,
// which the suite counts to check that it commits and rolls back with the
// claim.
type Work interface {
	// Do writes one unit of work under key through the transaction that the
	// guard put in ctx, and fails if there is none.
	Do(ctx context.Context, key string) error
	// Count returns how many units of work under key are committed.
	Count(ctx context.Context, key string) (int, error)
}

// Instance is one store under test, opened fresh for each test of the suite.
type Instance struct {
	Guard Guard // the guard under test
	Peer  Guard // a second guard over the same store sharing nothing else (its own connection pool); required by SharedStore
	Work  Work  // the handler's side effect; required by Transactional
}

// Features says what a store supports beyond the common contract.
type Features struct {
	// Transactional: fn's writes through the claim's transaction commit and
	// roll back with the claim; Instance.Work observes them.
	Transactional bool
	// SharedStore: Instance.Peer sees the same claims through separate
	// connections, so concurrent duplicates race two guards and only the
	// store itself can decide between them.
	SharedStore bool
	// ConcurrentRounds is how many times two workers race for one message
	// id; default 100.
	ConcurrentRounds int
}

// Open returns a guard over a new, empty store whose claims are stamped by
// now; it registers the store's removal with t.Cleanup.
type Open func(t *testing.T, now func() time.Time) Instance

// Run runs the conformance suite against the stores that open makes, each
// test as a subtest on a fresh store:
//
//   - DuplicateDetection: a handled (consumer, message) is a duplicate, per
//     consumer; the work is done once.
//   - HandlerErrorRollsBack: a failing handler leaves neither claim nor work,
//     its error survives errors.Is and errors.As, the retry runs.
//   - PanicDropsClaim: a panicking handler is rolled back and the panic
//     goes on.
//   - ConcurrentDuplicates: two workers race for one message id, many times
//     over; exactly one does the work each time.
//   - WaitsForPendingClaim: a duplicate meeting an open claim waits for its
//     outcome.
//   - PruneRemovesOnlyOldClaims, PruneDefaultWindow: Prune deletes claims
//     older than the window (7 days when zero), and only those.
//   - CancelledBeforeClaim, CancelledWhileHandling, CancelledWhileWaiting:
//     a context that ends claims nothing and keeps nothing.
//   - EmptyKey: no consumer or no message id is an error.
func Run(t *testing.T, open Open, f Features) {
	if f.ConcurrentRounds == 0 {
		f.ConcurrentRounds = 100
	}
	tests := []struct {
		name string
		run  func(t *testing.T, s *suite)
	}{
		{"DuplicateDetection", testDuplicateDetection},
		{"HandlerErrorRollsBack", testHandlerErrorRollsBack},
		{"PanicDropsClaim", testPanicDropsClaim},
		{"ConcurrentDuplicates", testConcurrentDuplicates},
		{"WaitsForPendingClaim", testWaitsForPendingClaim},
		{"PruneRemovesOnlyOldClaims", testPruneRemovesOnlyOldClaims},
		{"PruneDefaultWindow", testPruneDefaultWindow},
		{"CancelledBeforeClaim", testCancelledBeforeClaim},
		{"CancelledWhileHandling", testCancelledWhileHandling},
		{"CancelledWhileWaiting", testCancelledWhileWaiting},
		{"EmptyKey", testEmptyKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			inst := open(t, clock.Now)
			if inst.Guard == nil {
				t.Fatal("Open returned no Guard")
			}
			if f.SharedStore && inst.Peer == nil {
				t.Fatal("Features.SharedStore is set but Open returned no Peer")
			}
			if f.Transactional && inst.Work == nil {
				t.Fatal("Features.Transactional is set but Open returned no Work")
			}
			// A guard that loses track of a claim makes the next Run wait
			// for ever; the deadline turns that into a failure.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tc.run(t, &suite{Instance: inst, f: f, clock: clock, ctx: ctx})
		})
	}
}

// suite is one test's view of the store under test.
type suite struct {
	Instance
	f     Features
	clock *clock
	ctx   context.Context // every call's context, with a generous deadline
}

// peer returns the guard a second worker uses: the peer when the store is
// shared, else the same guard.
func (s *suite) peer() Guard {
	if s.f.SharedStore {
		return s.Peer
	}
	return s.Guard
}

// work does the handler's side effect under key, if the store has one.
func (s *suite) work(ctx context.Context, key string) error {
	if !s.f.Transactional {
		return nil
	}
	return s.Work.Do(ctx, key)
}

// wantWork checks the committed work under key, if the store has it.
func (s *suite) wantWork(t *testing.T, key string, want int) {
	t.Helper()
	if !s.f.Transactional {
		return
	}
	got, err := s.Work.Count(s.ctx, key)
	if err != nil {
		t.Fatalf("count work %q: %v", key, err)
	}
	if got != want {
		t.Errorf("work %q committed %d times, want %d", key, got, want)
	}
}

// handle runs g.Run for (consumer, id) with a handler that does the work
// under id and succeeds, and reports whether it was a duplicate.
func (s *suite) handle(t *testing.T, g Guard, consumer, id string) (duplicate bool) {
	t.Helper()
	calls := 0
	dup, err := g.Run(s.ctx, consumer, id, func(ctx context.Context) error {
		calls++
		return s.work(ctx, id)
	})
	if err != nil {
		t.Fatalf("Run(%q, %q): %v", consumer, id, err)
	}
	if dup == (calls == 1) || calls > 1 {
		t.Fatalf("Run(%q, %q) = duplicate %v, but the handler ran %d times", consumer, id, dup, calls)
	}
	return dup
}

// pending is a claim held open by a handler that waits to be released.
type pending struct {
	release chan error   // send the handler's result to end it
	result  <-chan error // Run's error, once it returns
}

// holdClaim starts handling id on g with a handler that does the work and
// then waits; it returns once the handler runs, so the claim is pending.
func (s *suite) holdClaim(t *testing.T, g Guard, id string) *pending {
	t.Helper()
	started := make(chan struct{})
	release, result := make(chan error), make(chan error, 1)
	go func() {
		_, err := g.Run(s.ctx, consumer, id, func(ctx context.Context) error {
			close(started)
			if err := <-release; err != nil {
				return err
			}
			return s.work(ctx, id)
		})
		result <- err
	}()
	select {
	case <-started:
	case err := <-result:
		t.Fatalf("Run(%q, %q) returned %v before calling the handler", consumer, id, err)
	}
	return &pending{release: release, result: result}
}

// finish ends the pending handler with handlerErr and returns Run's error.
func (p *pending) finish(handlerErr error) error {
	p.release <- handlerErr
	return <-p.result
}

// clock is the store's time, moved by the tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
