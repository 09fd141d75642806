package guardtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const consumer = "search-indexer"

// testDuplicateDetection: a second claim of a handled (consumer, message) is
// a duplicate and does no work; other messages and other consumers are not.
func testDuplicateDetection(t *testing.T, s *suite) {
	if s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("first delivery of m1 reported as duplicate")
	}
	if !s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("second delivery of m1 not reported as duplicate")
	}
	if !s.handle(t, s.peer(), consumer, "m1") {
		t.Fatal("delivery of m1 through the peer guard not reported as duplicate")
	}
	s.wantWork(t, "m1", 1)
	if s.handle(t, s.Guard, consumer, "m2") {
		t.Error("first delivery of m2 reported as duplicate")
	}
	if s.handle(t, s.Guard, "order-mailer", "m1") {
		t.Error("m1 for another consumer reported as duplicate: claims must be per consumer")
	}
}

// failure is a handler error with a type of its own, like a runtime
// permanent error, that must survive the guard for errors.As.
type failure struct{ reason string }

func (f *failure) Error() string { return "handler failed: " + f.reason }

// testHandlerErrorRollsBack: when the handler fails after doing its work,
// neither the work nor the claim remains; the handler's error comes back
// intact; the retry does the work once.
func testHandlerErrorRollsBack(t *testing.T, s *suite) {
	sentinel := errors.New("disk full")
	dup, err := s.Guard.Run(s.ctx, consumer, "m1", func(ctx context.Context) error {
		if err := s.work(ctx, "m1"); err != nil {
			return err
		}
		return fmt.Errorf("index m1: %w", errors.Join(sentinel, &failure{"no space"}))
	})
	if dup {
		t.Error("failed first delivery reported as duplicate")
	}
	var f *failure
	if !errors.Is(err, sentinel) || !errors.As(err, &f) || f.reason != "no space" {
		t.Fatalf("Run returned %v; want the handler's error, visible to errors.Is and errors.As", err)
	}
	s.wantWork(t, "m1", 0)
	if s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("retry after a failed handler reported as duplicate: the claim was kept")
	}
	s.wantWork(t, "m1", 1)
	if !s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("delivery after a successful retry not reported as duplicate")
	}
}

// testPanicDropsClaim: a panicking handler is rolled back like a failed one,
// and the panic reaches the caller (the runtime turns it into an error).
func testPanicDropsClaim(t *testing.T, s *suite) {
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the handler's panic value %q", r, "boom")
			}
		}()
		_, _ = s.Guard.Run(s.ctx, consumer, "m1", func(ctx context.Context) error {
			if err := s.work(ctx, "m1"); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	s.wantWork(t, "m1", 0)
	if s.handle(t, s.peer(), consumer, "m1") {
		t.Fatal("retry after a panicking handler reported as duplicate: the claim was kept")
	}
	s.wantWork(t, "m1", 1)
}

// testConcurrentDuplicates: two workers handle the same message at the same
// moment, many times over; exactly one of them does the work each time.
// With a shared store they are two guards with separate connection pools,
// so nothing in the process can decide for them: the store must.
func testConcurrentDuplicates(t *testing.T, s *suite) {
	guards := [2]Guard{s.Guard, s.peer()}
	for round := range s.f.ConcurrentRounds {
		id := fmt.Sprintf("m%d", round)
		var calls atomic.Int32
		var dups [2]bool
		var errs [2]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				dups[w], errs[w] = guards[w].Run(s.ctx, consumer, id, func(ctx context.Context) error {
					calls.Add(1)
					if round%2 == 1 {
						// Hold the claim open on odd rounds, so the other worker
						// surely meets an uncommitted claim; even rounds race the
						// inserts themselves.
						time.Sleep(time.Millisecond)
					}
					return s.work(ctx, id)
				})
			}()
		}
		close(start)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: Run errors %v, %v", round, errs[0], errs[1])
		}
		if n := calls.Load(); n != 1 || dups[0] == dups[1] {
			t.Fatalf("round %d: handler ran %d times, duplicates %v; want once, one duplicate", round, n, dups)
		}
		s.wantWork(t, id, 1)
	}
}

// testWaitsForPendingClaim: a duplicate that arrives while the first
// delivery is still being handled waits for its outcome: a duplicate if it
// was kept, a fresh claim if it was dropped.
func testWaitsForPendingClaim(t *testing.T, s *suite) {
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprintf("kept=%v", kept), func(t *testing.T) {
			id := fmt.Sprintf("m-%v", kept)
			first := s.holdClaim(t, s.Guard, id)
			type result struct {
				dup, afterFirst bool
				calls           int
				err             error
			}
			var firstDone atomic.Bool
			second := make(chan result, 1)
			go func() {
				var r result
				r.dup, r.err = s.peer().Run(s.ctx, consumer, id, func(ctx context.Context) error {
					r.calls++
					return s.work(ctx, id)
				})
				r.afterFirst = firstDone.Load()
				second <- r
			}()
			// Give the second delivery time to reach the pending claim. What is
			// asserted does not depend on it: the second delivery may not
			// return before the first has ended, however long this is.
			time.Sleep(50 * time.Millisecond)
			var handlerErr error
			if !kept {
				handlerErr = errors.New("first delivery failed")
			}
			firstDone.Store(true)
			if err := first.finish(handlerErr); err != handlerErr {
				t.Fatalf("first delivery returned %v, want %v", err, handlerErr)
			}
			r := <-second
			switch {
			case r.err != nil:
				t.Fatalf("second delivery: %v", r.err)
			case !r.afterFirst:
				t.Fatalf("second delivery returned (duplicate %v) while the first was still pending", r.dup)
			case kept && (!r.dup || r.calls != 0):
				t.Fatalf("second delivery after a kept claim: duplicate %v, handler ran %d times; want a duplicate", r.dup, r.calls)
			case !kept && (r.dup || r.calls != 1):
				t.Fatalf("second delivery after a dropped claim: duplicate %v, handler ran %d times; want it to claim and run", r.dup, r.calls)
			}
			s.wantWork(t, id, 1)
		})
	}
}
