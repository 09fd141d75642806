package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// claimGuard is the smallest Guard by the contract: a claim is kept only
// when fn succeeds. failNext makes the store fail, as a database might.
type claimGuard struct {
	mu       sync.Mutex
	claimed  map[string]bool
	failNext atomic.Int32
	errs     []error // what fn returned, as the guard saw it
}

func (g *claimGuard) Run(ctx context.Context, consumer, id string, fn func(context.Context) error) (bool, error) {
	if g.failNext.Add(-1) >= 0 {
		return false, errors.New("store: connection refused")
	}
	key := consumer + "/" + id
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.claimed[key] {
		return true, nil
	}
	err := fn(ctx)
	g.errs = append(g.errs, err)
	if err != nil {
		return false, fmt.Errorf("guarded: %w", err)
	}
	g.claimed[key] = true
	return false, nil
}

func TestGuardSkipsDuplicatesAndStoreErrorsSpendNoAttempt(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "guarded", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	g := &claimGuard{claimed: map[string]bool{}}
	g.failNext.Store(1)
	var handled, firstAttempt atomic.Int32
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if handled.Add(1) == 1 {
			firstAttempt.Store(int32(d.Attempt))
		}
		if v.SKU == "bad" {
			return Permanent(errors.New("bad sku"))
		}
		if v.SKU == "panic" {
			panic("in the transaction")
		}
		return nil
	})}, WithGuard(g))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	env, err := NewEnvelope(item{SKU: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The first delivery meets a store error (an outage: held in a delay
	// queue without spending an attempt); it is then handled as attempt 1;
	// the republished envelope is a duplicate.
	if err := pub.PublishEnvelope(ctx, f, env); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the fact handled", func() bool { return conn.Counts(spec.Name).Get(Acked) == 1 })
	if err := pub.PublishEnvelope(ctx, f, env); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the duplicate skipped", func() bool { return conn.Counts(spec.Name).Get(DuplicateSkipped) == 1 })
	if n := handled.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	if held, retried := conn.Counts(spec.Name).Get(Held), conn.Counts(spec.Name).Get(Retried); held != 1 || retried != 0 {
		t.Errorf("held %d, retried %d; want the store error held once and nothing retried", held, retried)
	}
	if n := firstAttempt.Load(); n != 1 {
		t.Errorf("handled as attempt %d after the store error, want 1: it spent an attempt", n)
	}

	// A permanent error keeps its mark through the guard's wrapping, and a
	// panic reaches the guard as an error (so it can roll back).
	mustPublish(t, pub, f, item{SKU: "bad"})
	d := b.get(spec.PoisonQueue)
	if s, _ := d.Headers[HeaderFailure].(string); s != "guarded: bad sku" || amqpmsg.HeaderInt(d.Headers, HeaderAttempts) != 1 {
		t.Errorf("poison copy: x-failure %q, x-attempts %d", s, amqpmsg.HeaderInt(d.Headers, HeaderAttempts))
	}
	mustPublish(t, pub, f, item{SKU: "panic"})
	testenv.Eventually(t, "the panic retried", func() bool { return conn.Counts(spec.Name).Get(Retried) >= 1 })
	g.mu.Lock()
	defer g.mu.Unlock()
	var p *PanicError
	if !errors.As(g.errs[len(g.errs)-1], &p) {
		t.Errorf("the guard saw %v from a panicking handler, want a *PanicError", g.errs[len(g.errs)-1])
	}
}
