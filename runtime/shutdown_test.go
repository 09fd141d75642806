package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Shutdown in the middle of a busy handler loses nothing.
// A handler that finishes within the shutdown timeout is acked; messages
// prefetched but not started go back to the queue; a handler that outlives
// the timeout has its message delivered again later.
func TestShutdownDuringABusyHandlerLosesNothing(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "busy", Bindings: []string{"item.#"}, Backoff: testLadder, Prefetch: 10, Concurrency: 1})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	pub, _ := NewPublisher(conn, b.events())
	ids := map[string]bool{}
	for i := range 4 {
		ids[mustPublish(t, pub, f, item{SKU: "s", N: i})] = true
	}

	t.Run("finishes within the timeout", func(t *testing.T) {
		started, release := make(chan string, 4), make(chan struct{})
		var acked atomic.Int32
		c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			started <- d.MessageID
			<-release
			if err := ctx.Err(); err != nil {
				return err // shutdown must not cancel a handler within the timeout
			}
			acked.Add(1)
			return nil
		})}, WithShutdownTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, c)
		first := receive(t, started)
		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		// Run must not return while the handler is busy.
		testenv.Eventually(t, "the rest given back", func() bool { return conn.Counts(spec.Name).Get(Returned) == 3 })
		select {
		case err := <-stopped:
			t.Fatalf("Run returned (%v) before its busy handler finished", err)
		default:
		}
		close(release)
		if err := receive(t, stopped); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if acked.Load() != 1 {
			t.Fatalf("%d handlers finished, want 1", acked.Load())
		}
		delete(ids, first)
	})

	t.Run("outlives the timeout", func(t *testing.T) {
		started := make(chan string, 4)
		c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			started <- d.MessageID
			<-ctx.Done() // cancelled when the shutdown timeout expires
			return ctx.Err()
		})}, WithShutdownTimeout(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, c)
		receive(t, started)
		if err := stop(); err == nil {
			t.Fatal("Run returned nil although a handler outlived the shutdown timeout")
		}
	})

	t.Run("everything is delivered again", func(t *testing.T) {
		seen := make(chan Delivery, 10)
		c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			seen <- d
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, c)
		testenv.Eventually(t, "the three unfinished facts handled", func() bool { return len(seen) >= 3 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		close(seen)
		for d := range seen {
			if !ids[d.MessageID] {
				t.Errorf("unexpected or repeated message %s", d.MessageID)
			}
			if !d.Redelivered {
				t.Errorf("message %s not marked redelivered", d.MessageID)
			}
			delete(ids, d.MessageID)
		}
		if len(ids) != 0 {
			t.Errorf("lost messages: %v", ids)
		}
		for _, q := range []string{spec.Queue, spec.PoisonQueue} {
			if n := b.depth(q); n != 0 {
				t.Errorf("queue %s holds %d", q, n)
			}
		}
	})
}
