package guardtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testCancelledBeforeClaim: a context that is already done claims nothing.
func testCancelledBeforeClaim(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(s.ctx)
	cancel()
	called := false
	dup, err := s.Guard.Run(ctx, consumer, "m1", func(context.Context) error {
		called = true
		return nil
	})
	if !errors.Is(err, context.Canceled) || dup || called {
		t.Fatalf("Run with a cancelled context = %v, %v, handler called %v; want context.Canceled and no call", dup, err, called)
	}
	if s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("a cancelled Run left a claim behind")
	}
}

// testCancelledWhileHandling: if the context ends while the handler runs,
// the claim and the work are dropped even when the handler returns nil, so
// the message is handled again later.
func testCancelledWhileHandling(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	_, err := s.Guard.Run(ctx, consumer, "m1", func(ctx context.Context) error {
		if err := s.work(ctx, "m1"); err != nil {
			return err
		}
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run whose context was cancelled during the handler returned %v, want context.Canceled", err)
	}
	s.wantWork(t, "m1", 0)
	if s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("claim kept although the context was cancelled before it could commit")
	}
	s.wantWork(t, "m1", 1)
}

// testCancelledWhileWaiting: a duplicate waiting for a pending claim gives up
// when its context ends, without calling the handler.
func testCancelledWhileWaiting(t *testing.T, s *suite) {
	first := s.holdClaim(t, s.Guard, "m1")
	ctx, cancel := context.WithCancel(s.ctx)
	go func() {
		// Let the second delivery reach the pending claim before cancelling;
		// the assertions hold however long this takes.
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	called := false
	dup, err := s.peer().Run(ctx, consumer, "m1", func(context.Context) error {
		called = true
		return nil
	})
	if ferr := first.finish(nil); ferr != nil {
		t.Fatalf("first delivery: %v", ferr)
	}
	if !errors.Is(err, context.Canceled) || dup || called {
		t.Fatalf("waiting Run whose context ended = %v, %v, handler called %v; want context.Canceled and no call", dup, err, called)
	}
	if !s.handle(t, s.Guard, consumer, "m1") {
		t.Fatal("the first delivery's claim was lost")
	}
	s.wantWork(t, "m1", 1)
}
