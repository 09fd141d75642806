package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/idempotency"
)

// countingPruner records the windows it is asked to prune and fails every
// call.
type countingPruner struct{ windows chan time.Duration }

func (p *countingPruner) Prune(_ context.Context, olderThan time.Duration) (int64, error) {
	p.windows <- olderThan
	return 0, errors.New("database down")
}

// TestPruneEvery: prunes at once and then on every tick, passes the window,
// reports failures without stopping, and returns when ctx ends.
func TestPruneEvery(t *testing.T) {
	p := &countingPruner{windows: make(chan time.Duration, 100)}
	errs := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		idempotency.PruneEvery(ctx, p, time.Millisecond, time.Hour, func(err error) { errs <- err })
	}()
	for i := range 3 {
		select {
		case w := <-p.windows:
			if w != time.Hour {
				t.Errorf("prune %d: window %s, want 1h", i, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("prune %d never happened", i)
		}
		if err := <-errs; err == nil || err.Error() != "database down" {
			t.Errorf("prune %d: onError got %v, want the prune's error", i, err)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("PruneEvery did not return after its context ended")
	}
}
