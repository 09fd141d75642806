package guardtest

import (
	"context"
	"testing"
	"time"
)

// testPruneRemovesOnlyOldClaims: Prune deletes the claims made before the
// window, of every consumer, and keeps the ones inside it, even by a second.
func testPruneRemovesOnlyOldClaims(t *testing.T, s *suite) {
	t0 := s.clock.Now()
	const window = 7 * 24 * time.Hour
	now := t0.Add(8 * 24 * time.Hour)
	s.handle(t, s.Guard, consumer, "old-1")
	s.handle(t, s.Guard, consumer, "old-2")
	s.handle(t, s.Guard, "order-mailer", "old-1")
	s.clock.Set(now.Add(-window).Add(time.Second))
	s.handle(t, s.Guard, consumer, "edge")
	s.clock.Set(now)
	s.handle(t, s.Guard, consumer, "young")

	n, err := s.Guard.Prune(s.ctx, window)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 3 {
		t.Errorf("Prune deleted %d claims, want 3", n)
	}
	for _, c := range []struct {
		consumer, id string
		kept         bool
	}{
		{consumer, "old-1", false},
		{consumer, "old-2", false},
		{"order-mailer", "old-1", false},
		{consumer, "edge", true},
		{consumer, "young", true},
	} {
		if dup := s.handle(t, s.Guard, c.consumer, c.id); dup != c.kept {
			t.Errorf("after Prune, %s/%s is duplicate=%v, want %v", c.consumer, c.id, dup, c.kept)
		}
	}
}

// testPruneDefaultWindow: a window of zero means DefaultRetention, 7 days,
// never "delete everything".
func testPruneDefaultWindow(t *testing.T, s *suite) {
	t0 := s.clock.Now()
	s.handle(t, s.Guard, consumer, "eight-days")
	s.clock.Set(t0.Add(2 * 24 * time.Hour))
	s.handle(t, s.Guard, consumer, "six-days")
	s.clock.Set(t0.Add(8 * 24 * time.Hour))
	n, err := s.Guard.Prune(s.ctx, 0)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 1 {
		t.Errorf("Prune(0) deleted %d claims, want 1 (the one older than 7 days)", n)
	}
	if s.handle(t, s.Guard, consumer, "eight-days") {
		t.Error("claim older than 7 days survived Prune(0)")
	}
	if !s.handle(t, s.Guard, consumer, "six-days") {
		t.Error("claim younger than 7 days deleted by Prune(0)")
	}
}

// testEmptyKey: without a message id or a consumer there is nothing to
// deduplicate on; Run refuses without calling the handler.
func testEmptyKey(t *testing.T, s *suite) {
	for _, k := range [][2]string{{consumer, ""}, {"", "m1"}} {
		called := false
		dup, err := s.Guard.Run(s.ctx, k[0], k[1], func(context.Context) error {
			called = true
			return nil
		})
		if err == nil || dup || called {
			t.Errorf("Run(%q, %q) = %v, %v, handler called %v; want an error and no call", k[0], k[1], dup, err, called)
		}
	}
}
