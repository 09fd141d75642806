package warrentest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// startDeferring starts consumer name of top with handle for
// factOrderPlaced.
func startDeferring(t *testing.T, b *warrentest.Bus, top topology.Topology, name string, handle func(d runtime.Delivery) error, opts ...runtime.ConsumerOption) {
	t.Helper()
	c, ok := top.Consumer(name)
	if !ok {
		t.Fatalf("no consumer %q", name)
	}
	cons, err := runtime.NewConsumer(b.Conn(), c, []runtime.Route{
		runtime.Handle(factOrderPlaced, func(ctx context.Context, d runtime.Delivery, v orderPlaced) error { return handle(d) }),
	}, opts...)
	b.Start(name, cons, err)
}

func buildTopology(t *testing.T, spec topology.Spec) topology.Topology {
	t.Helper()
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// deferOneFact runs spec's consumer "mailer" with handle on the bus, as
// the broker of version speaks, publishes one fact and waits until nothing
// is left to do; then check reads what happened.
func deferOneFact(t *testing.T, version string, spec topology.Spec, handle func(runtime.Delivery) error, check func(b *warrentest.Bus)) {
	t.Helper()
	top := buildTopology(t, spec)
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[orderPlaced](b, factOrderPlaced)
		startDeferring(t, b, top, "mailer", handle)
		warrentest.Publish(b, factOrderPlaced, orderPlaced{ID: "o-1"})
		b.Idle()
		check(b)
	}, warrentest.WithBrokerVersion(version))
}

// A plain consumer's deferral waits in the delay levels in virtual time
// and comes back to that consumer alone, when due, its attempts unspent;
// a consumer bound to the same fact by "#" sees it once.
func TestAPlainDeferralComesBackWhenDueInVirtualTime(t *testing.T) {
	top := buildTopology(t, topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}},
		{Name: "audit", Bindings: []string{"#"}},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[orderPlaced](b, factOrderPlaced)
		opens := time.Now().Add(2 * time.Hour) // the partner opens at 09:00
		var mu sync.Mutex
		var seen []runtime.Delivery
		startDeferring(t, b, top, "mailer", func(d runtime.Delivery) error {
			mu.Lock()
			seen = append(seen, d)
			mu.Unlock()
			if time.Now().Before(opens) {
				return fmt.Errorf("partner closed: %w", runtime.DeferUntil(opens))
			}
			return nil
		})
		startDeferring(t, b, top, "audit", func(runtime.Delivery) error { return nil })
		warrentest.Publish(b, factOrderPlaced, orderPlaced{ID: "o-1"})

		b.Advance(time.Hour)
		b.WantDeferred("mailer", 1)
		b.WantHandled("mailer", 0)
		b.WantHandled("audit", 1)
		if n := len(b.Waiting("mailer")); n != 0 {
			t.Errorf("an hour in: %d facts in mailer's queue, want none (the deferral waits in the delay levels)", n)
		}
		var de *runtime.DeferredError
		if calls := b.Deferred("mailer"); !errors.As(calls[0].Err, &de) || !de.DueAt.Equal(opens) {
			t.Errorf("deferred call's error %v: want a *DeferredError due at %s", calls[0].Err, opens)
		}

		b.Advance(time.Hour + time.Second)
		b.WantHandled("mailer", 1)
		b.WantDeferred("mailer", 1)
		b.WantRetried("mailer", 0)
		b.WantPoisoned("mailer", 0)
		b.WantHandled("audit", 1) // not a second time
		if pub := b.Published(); len(pub) != 1 {
			t.Errorf("published %d facts, want 1 (a deferred copy is not a new fact)", len(pub))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 {
			t.Fatalf("mailer saw %d deliveries, want 2", len(seen))
		}
		again := seen[1]
		if again.Attempt != 1 || again.Deferrals != 1 || again.RoutingKey != "order.placed" || !again.DueAt.Equal(opens.Truncate(time.Millisecond)) {
			t.Errorf("back from the deferral: attempt %d, deferrals %d, key %q, due %s; want 1, 1, order.placed, %s",
				again.Attempt, again.Deferrals, again.RoutingKey, again.DueAt, opens)
		}
		if late := time.Since(opens); late < 0 {
			t.Errorf("handled %s before it was due", -late)
		}
		if got := b.Conn().Counts("mailer"); got.Get(runtime.Deferred) != 1 || got.Get(runtime.Acked) != 1 || got.Get(runtime.Retried) != 0 {
			t.Errorf("counts: deferred %d, acked %d, retried %d; want 1, 1, 0", got.Get(runtime.Deferred), got.Get(runtime.Acked), got.Get(runtime.Retried))
		}
	})
}

// Beyond maxDeferrals a fact goes to poison, saying how often it was
// deferred and what the bound allows. Each deferral travels the same delay
// levels again: on RabbitMQ before 3.13, which reads a published message's
// x-death, the copy must not carry the levels' entries of its earlier
// journey, or the broker takes it for a dead-letter cycle and drops it.
func TestDeferringBeyondMaxDeferralsPoisons(t *testing.T) {
	for _, version := range []string{"3.10.0", "3.13.7"} {
		t.Run(version, func(t *testing.T) { deferBeyondMaxDeferrals(t, version) })
	}
}

func deferBeyondMaxDeferrals(t *testing.T, version string) {
	spec := topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}, MaxDeferrals: 3},
	}}
	deferOneFact(t, version, spec, func(runtime.Delivery) error { return runtime.Defer(time.Minute) }, func(b *warrentest.Bus) {
		b.WantDeferred("mailer", 3)
		b.WantPoisoned("mailer", 1)
		b.WantRetried("mailer", 0)
		p := b.Poisoned("mailer")[0]
		if want := "deferred 3 times, and maxDeferrals allows 3: deferred until "; !strings.HasPrefix(p.Failure, want) {
			t.Errorf("failure %q, want it to begin %q", p.Failure, want)
		}
		if p.Attempts != 1 || p.Headers[runtime.HeaderDeferrals] != int64(3) {
			t.Errorf("poisoned with x-attempts %d, x-deferrals %v; want 1, 3", p.Attempts, p.Headers[runtime.HeaderDeferrals])
		}
		if calls := b.Calls("mailer"); len(calls) != 4 || calls[3].Deferrals != 3 || calls[3].Deferred {
			t.Errorf("calls %+v: want 4, the last after 3 deferrals and not deferred", calls)
		}
	})
}

// A fact published for later, then deferred, travels the delay levels
// twice and arrives both times (on RabbitMQ 3.10 too, see above).
func TestADelayedFactCanBeDeferred(t *testing.T) {
	top := buildTopology(t, topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[orderPlaced](b, factOrderPlaced)
		startDeferring(t, b, top, "mailer", func(d runtime.Delivery) error {
			if d.Deferrals == 0 {
				return runtime.Defer(time.Hour)
			}
			return nil
		})
		pub, err := runtime.NewPublisher(b.Conn(), top.Exchanges[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.In(time.Hour).Publish(b.Context(), factOrderPlaced, orderPlaced{ID: "o-1"}); err != nil {
			t.Fatal(err)
		}
		b.Idle()
		b.WantDeferred("mailer", 1)
		b.WantHandled("mailer", 1)
	}, warrentest.WithBrokerVersion("3.10.0"))
}

// Without delay levels a plain consumer cannot defer: the deferral is a
// failure that walks the retry ladder, and says what is missing.
func TestDeferringWithoutDelayLevelsIsAFailure(t *testing.T) {
	spec := topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}, MaxAttempts: 2, Backoff: []time.Duration{10 * time.Millisecond}},
	}}
	deferOneFact(t, "3.13.7", spec, func(runtime.Delivery) error { return runtime.Defer(time.Hour) }, func(b *warrentest.Bus) {
		b.WantDeferred("mailer", 0)
		b.WantRetried("mailer", 1)
		b.WantPoisoned("mailer", 1)
		if f := b.Poisoned("mailer")[0].Failure; !strings.Contains(f, `deferral needs the delay levels ("delayedFacts": true`) {
			t.Errorf("failure %q: does not say that deferral needs delayedFacts", f)
		}
	})
}

// A deferral until a time that has passed comes back at once; a negative
// one is a failure matching ErrDelay, not a deferral.
func TestDeferralsOutOfRange(t *testing.T) {
	if err := runtime.Defer(-time.Second); runtime.IsDeferred(err) || !errors.Is(err, runtime.ErrDelay) {
		t.Errorf("Defer(-1s) = %v: want a failure matching ErrDelay", err)
	}
	if err := runtime.Defer(topology.MaxDelay + time.Millisecond); runtime.IsDeferred(err) || !errors.Is(err, runtime.ErrDelay) {
		t.Errorf("Defer(MaxDelay+1ms) = %v: want a failure matching ErrDelay", err)
	}
	if err := runtime.DeferUntil(time.Now().Add(topology.MaxDelay + time.Hour)); runtime.IsDeferred(err) || !errors.Is(err, runtime.ErrDelay) {
		t.Errorf("DeferUntil(beyond MaxDelay) = %v: want a failure matching ErrDelay", err)
	}
	top := buildTopology(t, topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}, MaxAttempts: 2, Backoff: []time.Duration{10 * time.Millisecond}},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[orderPlaced](b, factOrderPlaced)
		past := time.Now().Add(-time.Hour)
		var mu sync.Mutex
		var due []time.Time
		startDeferring(t, b, top, "mailer", func(d runtime.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			due = append(due, d.DueAt)
			switch len(due) {
			case 1:
				return runtime.DeferUntil(past)
			case 2:
				return runtime.Defer(-time.Second)
			}
			return nil
		})
		start := time.Now()
		warrentest.Publish(b, factOrderPlaced, orderPlaced{ID: "o-1"})
		b.Idle()
		b.WantDeferred("mailer", 1)
		b.WantRetried("mailer", 1)
		b.WantHandled("mailer", 1)
		if waited := time.Since(start); waited > time.Second {
			t.Errorf("a deferral until an hour ago and a 10ms retry took %s of virtual time", waited)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(due) != 3 || !due[1].Equal(past.Truncate(time.Millisecond)) {
			t.Errorf("due times %v: want the second delivery due at %s", due, past)
		}
	})
}

// An ordered consumer defers in place: the key's later facts wait behind
// the deferred one, other keys go on, and no attempt is spent.
func TestAnOrderedDeferralHoldsItsKeyInVirtualTime(t *testing.T) {
	top := buildTopology(t, topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "fulfilment", Bindings: []string{"orders.#"}, Ordered: true, Shards: 1, Concurrency: 2},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		var handled []string
		var attempts []int
		c, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.Handle(factStep, func(ctx context.Context, d runtime.Delivery, v step) error {
				mu.Lock()
				defer mu.Unlock()
				if v.OrderID == "a" && v.N == 1 && d.Deferrals == 0 {
					return runtime.Defer(10 * time.Minute)
				}
				handled = append(handled, fmt.Sprintf("%s%d", v.OrderID, v.N))
				attempts = append(attempts, d.Attempt)
				return nil
			}),
		})
		b.Start("fulfilment", c, err)
		warrentest.Publish(b, factStep, step{OrderID: "a", N: 1})
		warrentest.Publish(b, factStep, step{OrderID: "a", N: 2})
		warrentest.Publish(b, factStep, step{OrderID: "b", N: 1})
		b.Advance(5 * time.Minute)
		mu.Lock()
		if strings.Join(handled, ",") != "b1" {
			t.Errorf("five minutes in, handled %v: want b1 only, a's facts waiting behind its deferral", handled)
		}
		mu.Unlock()
		b.Advance(5*time.Minute + time.Second)
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(handled, ",") != "b1,a1,a2" {
			t.Errorf("handled %v, want b1,a1,a2", handled)
		}
		for i, a := range attempts {
			if a != 1 {
				t.Errorf("%s handled on attempt %d, want 1: a deferral spends none", handled[i], a)
			}
		}
		b.WantDeferred("fulfilment", 1)
		b.WantRetried("fulfilment", 0)
		if got := b.Conn().Counts("fulfilment").Get(runtime.Deferred); got != 1 {
			t.Errorf("counted %d deferrals, want 1", got)
		}
	})
}

// An ordered consumer refuses to hold a fact in place beyond
// WithMaxDeferInPlace: the deferral is a failure, retried in place.
func TestAnOrderedDeferralBeyondItsBoundIsAFailure(t *testing.T) {
	top := buildTopology(t, topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "fulfilment", Bindings: []string{"orders.#"}, Ordered: true, Shards: 1, MaxAttempts: 2, Backoff: []time.Duration{time.Second}},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		c, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.Handle(factStep, func(ctx context.Context, d runtime.Delivery, v step) error {
				return runtime.Defer(2 * time.Hour)
			}),
		}, runtime.WithMaxDeferInPlace(time.Hour))
		b.Start("fulfilment", c, err)
		warrentest.Publish(b, factStep, step{OrderID: "a", N: 1})
		b.Idle()
		b.WantDeferred("fulfilment", 0)
		b.WantPoisoned("fulfilment", 1)
		if f := b.Poisoned("fulfilment")[0].Failure; !strings.Contains(f, "beyond the 1h0m0s an ordered consumer holds a fact in place") {
			t.Errorf("failure %q: does not name the in-place bound", f)
		}
	})
}

// WithMaxDeferInPlace is an ordered consumer's: a plain consumer and a
// responder refuse it, and it must be positive.
func TestWithMaxDeferInPlaceApplies(t *testing.T) {
	top := buildTopology(t, topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}},
		{Name: "fulfilment", Bindings: []string{"orders.#"}, Ordered: true},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		route := runtime.Handle(factOrderPlaced, func(context.Context, runtime.Delivery, orderPlaced) error { return nil })
		if _, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{route}, runtime.WithMaxDeferInPlace(time.Minute)); err == nil || !strings.Contains(err.Error(), "WithMaxDeferInPlace does not apply") {
			t.Errorf("plain consumer: err = %v", err)
		}
		if _, err := runtime.NewConsumer(b.Conn(), top.Consumers[1], []runtime.Route{route}, runtime.WithMaxDeferInPlace(0)); err == nil || !strings.Contains(err.Error(), "WithMaxDeferInPlace(0s): expected a positive duration") {
			t.Errorf("ordered consumer, 0: err = %v", err)
		}
		if _, err := runtime.NewConsumer(b.Conn(), top.Consumers[1], []runtime.Route{route}, runtime.WithMaxDeferInPlace(time.Minute)); err != nil {
			t.Errorf("ordered consumer: %v", err)
		}
	})
}

// A DeferredError made by hand, due beyond what the delay levels hold, is
// a failure rather than a deferral.
func TestADeferralBeyondTheDelayLevelsIsAFailure(t *testing.T) {
	spec := topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{{Name: "mailer", Bindings: []string{"order.placed"}, MaxAttempts: 1}}}
	far := func(runtime.Delivery) error {
		return &runtime.DeferredError{DueAt: time.Now().Add(topology.MaxDelay + time.Hour)}
	}
	deferOneFact(t, "3.13.7", spec, far, func(b *warrentest.Bus) {
		b.WantDeferred("mailer", 0)
		b.WantPoisoned("mailer", 1)
		if f := b.Poisoned("mailer")[0].Failure; !strings.HasPrefix(f, "not deferred: due at ") {
			t.Errorf("failure %q", f)
		}
	})
}
