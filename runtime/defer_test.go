package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

func TestDeferAndDeferUntil(t *testing.T) {
	before := time.Now()
	err := fmt.Errorf("partner closed: %w", Defer(time.Hour))
	var de *DeferredError
	if !IsDeferred(err) || !errors.As(err, &de) {
		t.Fatalf("wrapped Defer: IsDeferred %v, errors.As %v", IsDeferred(err), errors.As(err, &de))
	}
	if de.DueAt.Before(before.Add(time.Hour)) || de.DueAt.After(time.Now().Add(time.Hour)) {
		t.Errorf("DueAt %s, want an hour after %s", de.DueAt, before)
	}
	if !strings.HasPrefix(err.Error(), "partner closed: deferred until ") {
		t.Errorf("text %q", err)
	}
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	if err := DeferUntil(at); !errors.As(err, &de) || !de.DueAt.Equal(at) || err.Error() != "deferred until 2026-12-03T09:00:00.000Z" {
		t.Errorf("DeferUntil: %v", err)
	}
	if IsDeferred(errors.New("no")) || IsDeferred(nil) || IsDeferred(Permanent(errors.New("no"))) {
		t.Error("IsDeferred of an error that is no deferral")
	}
	for _, err := range []error{Defer(-time.Millisecond), Defer(topology.MaxDelay + time.Millisecond), DeferUntil(time.Now().Add(topology.MaxDelay + time.Minute))} {
		if IsDeferred(err) || !errors.Is(err, ErrDelay) {
			t.Errorf("%v: want a failure matching ErrDelay, not a deferral", err)
		}
	}
	if d := deferredDelay(time.Now().Add(-time.Hour)); d != time.Millisecond {
		t.Errorf("a deferral due an hour ago waits %s, want 1ms", d)
	}
	if Deferred.String() != "deferred" {
		t.Errorf("Deferred.String() = %q", Deferred.String())
	}
}

// A plain consumer's deferral waits in the delay levels and comes back to
// that consumer alone: a second consumer bound to the same fact (by "#",
// which matches any key) gets the fact once. The attempts are unspent,
// the deferral is counted in x-deferrals, and x-due-at says when it was
// due; a retry after it works as for any fact.
func TestDeferralComesBackOnlyToTheDeferringConsumer(t *testing.T) {
	b := newDelayBroker(t,
		topology.ConsumerSpec{Name: "mailer", Bindings: []string{"item.added"}, Backoff: testLadder},
		topology.ConsumerSpec{Name: "audit", Bindings: []string{"#"}, Backoff: testLadder},
	)
	logs := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(logs)})
	f := itemFact("item.added")
	var mailer, audit seen
	var due atomic.Pointer[time.Time]
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		switch mailer.add(d) {
		case 1:
			err := Defer(30 * time.Millisecond)
			var de *DeferredError
			errors.As(err, &de)
			due.Store(&de.DueAt)
			return fmt.Errorf("partner closed: %w", err)
		case 2:
			return errors.New("partner flaky")
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	a, err := NewConsumer(conn, b.consumer(1), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		audit.add(d)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, a)
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, f, item{SKU: "a"})

	name, auditName := b.consumer(0).Name, b.consumer(1).Name
	testenv.Eventually(t, "the mailer acked after a deferral and a retry", func() bool { return conn.Counts(name).Get(Acked) == 1 })
	ds := mailer.all()
	if len(ds) != 3 {
		t.Fatalf("the mailer had %d deliveries, want 3", len(ds))
	}
	for i, want := range []struct{ attempt, deferrals int }{{1, 0}, {1, 1}, {2, 1}} {
		if d := ds[i]; d.MessageID != id || d.RoutingKey != "item.added" || d.Attempt != want.attempt || d.Deferrals != want.deferrals {
			t.Errorf("delivery %d: %s %q attempt %d deferrals %d; want %s item.added, %d, %d", i+1, d.MessageID, d.RoutingKey, d.Attempt, d.Deferrals, id, want.attempt, want.deferrals)
		}
	}
	if wantDue := due.Load().Truncate(time.Millisecond); !ds[1].DueAt.Equal(wantDue) || !ds[2].DueAt.Equal(wantDue) {
		t.Errorf("DueAt after the deferral %s, on its retry %s; want %s", ds[1].DueAt, ds[2].DueAt, wantDue)
	}
	if got := ds[1].Headers[HeaderAttempts]; got != nil {
		t.Errorf("back from its deferral with x-attempts %v, want none", got)
	}
	if got := ds[1].Headers[HeaderDeferrals]; got != int64(1) {
		t.Errorf("back from its deferral with x-deferrals %v (%T), want 1", got, got)
	}
	counts := conn.Counts(name)
	if counts.Get(Deferred) != 1 || counts.Get(Retried) != 1 || counts.Get(Poisoned) != 0 {
		t.Errorf("mailer counted deferred %d, retried %d, poisoned %d; want 1, 1, 0", counts.Get(Deferred), counts.Get(Retried), counts.Get(Poisoned))
	}
	if got := audit.all(); len(got) != 1 {
		t.Errorf("audit had %d deliveries, want the fact once", len(got))
	}
	if n := conn.Counts(auditName).Get(Delivered); n != 1 {
		t.Errorf("audit counted %d deliveries, want 1", n)
	}
	if got := logs.values("deferred until "+due.Load().UTC().Format(dueAtLayout), "message_id"); len(got) != 1 || got[0] != id {
		t.Errorf("logged the deferral for %v, want once for %s:\n%s", got, id, logs.text())
	}
	if n := b.depth(topology.UnroutableQueue(b.events())); n != 0 {
		t.Errorf("the unroutable lane holds %d", n)
	}
}

// poisonedAfter runs b's first consumer with handle, publishes one fact
// and returns its poison copy, and what the consumer counted.
func poisonedAfter(t *testing.T, b *broker, handle func() error) (amqp.Delivery, Counts, int) {
	t.Helper()
	conn := b.dial(Config{})
	f := itemFact("item.added")
	var got seen
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		got.add(d)
		return handle()
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})
	poisonQ := b.consumer(0).PoisonQueue
	testenv.Eventually(t, "the fact in poison", func() bool { return b.depth(poisonQ) == 1 })
	return b.get(poisonQ), conn.Counts(b.consumer(0).Name), len(got.all())
}

// A fact deferred more often than maxDeferrals allows goes to poison,
// saying so; its attempts are still unspent.
func TestDeferralBeyondMaxDeferralsGoesToPoison(t *testing.T) {
	b := newDelayBroker(t, topology.ConsumerSpec{Name: "mailer", Bindings: []string{"item.added"}, Backoff: testLadder, MaxDeferrals: 2})
	m, counts, calls := poisonedAfter(t, b, func() error { return Defer(10 * time.Millisecond) })
	failure, _ := m.Headers[HeaderFailure].(string)
	if !strings.HasPrefix(failure, "deferred 2 times, and maxDeferrals allows 2: deferred until ") {
		t.Errorf("x-failure %q", failure)
	}
	if m.Headers[HeaderAttempts] != int64(1) || m.Headers[HeaderDeferrals] != int64(2) {
		t.Errorf("poisoned with x-attempts %v, x-deferrals %v; want 1, 2", m.Headers[HeaderAttempts], m.Headers[HeaderDeferrals])
	}
	if calls != 3 || counts.Get(Deferred) != 2 {
		t.Errorf("%d deliveries, %d deferrals counted; want 3, 2", calls, counts.Get(Deferred))
	}
}

// Without delay levels a plain consumer cannot defer: the deferral is a
// failure that walks the retry ladder, its text saying what is missing.
func TestDeferralWithoutDelayLevelsWalksTheRetryLadder(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "mailer", Bindings: []string{"item.added"}, MaxAttempts: 2, Backoff: testLadder})
	m, counts, calls := poisonedAfter(t, b, func() error { return fmt.Errorf("partner closed: %w", Defer(time.Hour)) })
	failure, _ := m.Headers[HeaderFailure].(string)
	if !strings.HasPrefix(failure, `not deferred: deferral needs the delay levels ("delayedFacts": true in warren.json, topology.Spec.Delays): partner closed: deferred until `) {
		t.Errorf("x-failure %q", failure)
	}
	if calls != 2 || counts.Get(Retried) != 1 || counts.Get(Deferred) != 0 || m.Headers[HeaderAttempts] != int64(2) {
		t.Errorf("%d deliveries, retried %d, deferred %d, x-attempts %v; want 2, 1, 0, 2", calls, counts.Get(Retried), counts.Get(Deferred), m.Headers[HeaderAttempts])
	}
}

// An ordered consumer defers in place: the deferred fact's key waits
// behind it while other keys go on, no attempt is spent, and a consumer
// stopped during a deferral returns the key's facts to their shard in
// order.
func TestOrderedDeferralHoldsItsKeyAndNotOthers(t *testing.T) {
	spec := orderedSpec("ordered")
	spec.MaxDeferrals = 10000 // deferred until another key was handled, however long that takes
	b := newBroker(t, spec)
	conn := b.dial(Config{})
	f := orderedFact()
	var mu sync.Mutex
	var order []string
	var bHandled atomic.Bool
	stopped := make(chan struct{})
	var stopDeferring atomic.Bool
	routes := []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		name := fmt.Sprintf("%s%d", v.SKU, v.N)
		if name == "a1" && (d.Deferrals == 0 || !bHandled.Load()) {
			return Defer(10 * time.Millisecond)
		}
		if name == "a1" && stopDeferring.Load() {
			select {
			case <-stopped:
			default:
				close(stopped)
			}
			return Defer(10 * time.Minute) // stopped while it waits
		}
		mu.Lock()
		order = append(order, fmt.Sprintf("%s@%d", name, d.Attempt))
		mu.Unlock()
		if v.SKU == "b" {
			bHandled.Store(true)
		}
		return nil
	})}
	c, err := NewConsumer(conn, b.consumer(0), routes, WithShutdownTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a", N: 1})
	mustPublish(t, pub, f, item{SKU: "a", N: 2})
	mustPublish(t, pub, f, item{SKU: "b", N: 1})
	name := b.consumer(0).Name
	testenv.Eventually(t, "all three handled", func() bool { return conn.Counts(name).Get(Acked) == 3 })
	mu.Lock()
	if got := strings.Join(order, ","); got != "b1@1,a1@1,a2@1" {
		t.Errorf("handled %s, want b1@1,a1@1,a2@1: a's facts behind its deferral, b's not, no attempt spent", got)
	}
	mu.Unlock()
	counts := conn.Counts(name)
	if counts.Get(Deferred) < 1 || counts.Get(RetriedInPlace) != 0 || counts.Get(Poisoned) != 0 {
		t.Errorf("deferred %d, retried in place %d, poisoned %d; want at least 1, 0, 0", counts.Get(Deferred), counts.Get(RetriedInPlace), counts.Get(Poisoned))
	}

	// Stopped during an in-place deferral: a1 and a2 go back to their
	// shard, in order, and a new consumer handles them so.
	stopDeferring.Store(true)
	mu.Lock()
	order = nil
	mu.Unlock()
	mustPublish(t, pub, f, item{SKU: "a", N: 1})
	mustPublish(t, pub, f, item{SKU: "a", N: 2})
	receive(t, stopped)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	shardsHold := func() int {
		n := 0
		for _, s := range b.consumer(0).Shards {
			n += b.depth(s)
		}
		return n
	}
	testenv.Eventually(t, "a1 and a2 back in their shard", func() bool { return shardsHold() == 2 })
	stopDeferring.Store(false)
	c2, err := NewConsumer(conn, b.consumer(0), routes)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c2)
	testenv.Eventually(t, "a1 and a2 handled again", func() bool { return conn.Counts(name).Get(Acked) == 5 })
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, ","); got != "a1@1,a2@1" {
		t.Errorf("after the stop, handled %s, want a1@1,a2@1", got)
	}
}
