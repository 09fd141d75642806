package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/idempotency"
)

// TestMemoryPruneKeepsPendingClaims: Prune never deletes a claim whose
// handler is still running, however old; otherwise a duplicate arriving
// meanwhile would run the handler a second time.
func TestMemoryPruneKeepsPendingClaims(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g := idempotency.NewMemoryGuard(idempotency.MemoryConfig{Now: clock})
	ctx := context.Background()
	inHandler, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := g.Run(ctx, "c", "m1", func(context.Context) error {
			close(inHandler)
			<-release
			return nil
		})
		first <- err
	}()
	<-inHandler
	now = now.Add(30 * 24 * time.Hour) // only this goroutine reads the clock from here on
	n, err := g.Prune(ctx, time.Hour)
	if err != nil || n != 0 {
		t.Fatalf("Prune with a pending claim = %d, %v; want nothing deleted", n, err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	dup, err := g.Run(ctx, "c", "m1", func(context.Context) error { return nil })
	if err != nil || !dup {
		t.Fatalf("after Prune skipped the pending claim, Run = %v, %v; want a duplicate", dup, err)
	}
}
