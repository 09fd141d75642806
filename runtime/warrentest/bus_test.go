package warrentest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

type itemUpdated struct {
	SKU string `json:"sku"`
}

var factItemUpdated = runtime.Fact{RoutingKey: "catalogue.item.updated", Version: 1}

func shop(t *testing.T, backoff ...time.Duration) topology.Topology {
	t.Helper()
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: len(backoff) + 1, Backoff: backoff},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestALadderOfHoursEndsInPoisonInVirtualTime(t *testing.T) {
	ladder := []time.Duration{time.Second, time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}
	warrentest.Run(t, shop(t, ladder...), func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[itemUpdated](b, factItemUpdated)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error {
				return errors.New("index down")
			}),
		})
		b.Start("search-indexer", c, err)
		start := time.Now()
		id := warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-1"})
		b.Idle()
		calls := b.Calls("search-indexer")
		if len(calls) != 6 {
			t.Fatalf("calls = %d, want 6: %+v", len(calls), calls)
		}
		for i, c := range calls {
			if c.Attempt != i+1 || c.MessageID != id {
				t.Errorf("call %d: attempt %d, id %s", i, c.Attempt, c.MessageID)
			}
		}
		p := b.Poisoned("search-indexer")
		if len(p) != 1 || p[0].Failure != "index down" || p[0].RoutingKey != factItemUpdated.RoutingKey {
			t.Fatalf("poisoned = %+v", p)
		}
		if got := len(b.Retried("search-indexer")); got != 5 {
			t.Errorf("retried = %d, want 5", got)
		}
		if elapsed := time.Since(start); elapsed < 7*time.Hour {
			t.Errorf("virtual time passed = %v, want the whole ladder", elapsed)
		}
		if got := warrentest.Published[itemUpdated](b); len(got) != 1 || got[0].SKU != "BOOK-1" {
			t.Errorf("published = %+v", got)
		}
	})
}

func TestALadderRunsInRealTime(t *testing.T) {
	b := warrentest.New(t, shop(t, 10*time.Millisecond, 20*time.Millisecond))
	warrentest.Register[itemUpdated](b, factItemUpdated)
	failures := 1
	c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
		runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error {
			if d.Attempt <= failures {
				return errors.New("index busy")
			}
			return nil
		}),
	})
	b.Start("search-indexer", c, err)
	warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-2"})
	b.Idle()
	b.WantHandled("search-indexer", 1)
	b.WantRetried("search-indexer", 1)
	b.WantPoisoned("search-indexer", 0)
	if got := b.Handled("search-indexer"); len(got) == 1 && got[0].Attempt != 2 {
		t.Errorf("handled on attempt %d, want 2", got[0].Attempt)
	}
}

func TestGuardSkipsARedeliveredFact(t *testing.T) {
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[itemUpdated](b, factItemUpdated)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error { return nil }),
		}, runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{})))
		b.Start("search-indexer", c, err)
		pub, err := runtime.NewPublisher(b.Conn(), topology.DefaultExchanges.Events)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		env, err := runtime.NewEnvelope(itemUpdated{SKU: "BOOK-3"})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := pub.PublishEnvelope(t.Context(), factItemUpdated, env); err != nil {
				t.Fatal(err)
			}
		}
		b.Idle()
		b.WantHandled("search-indexer", 1)
		b.WantDuplicates("search-indexer", 1)
	})
}

func TestGoldenRecordsThePublishedFacts(t *testing.T) {
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[itemUpdated](b, factItemUpdated)
		warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-4"})
		warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-5"})
		b.Golden("two-updates")
	})
}

func TestPublishAgainIsAbsorbedByTheGuard(t *testing.T) {
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[itemUpdated](b, factItemUpdated)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error { return nil }),
		}, runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{})))
		b.Start("search-indexer", c, err)
		id := warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-6"})
		b.Idle()
		b.PublishAgain(id)
		b.Idle()
		b.WantHandled("search-indexer", 1)
		b.WantDuplicates("search-indexer", 1)
		if d := b.Duplicates("search-indexer"); len(d) == 1 && d[0].MessageID != id {
			t.Errorf("duplicate %s, want %s", d[0].MessageID, id)
		}
	})
}

func TestPublishRawReachesTheConsumerUnvalidated(t *testing.T) {
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		strict := factItemUpdated
		strict.Validate = func(payload []byte) error {
			if !strings.Contains(string(payload), `"sku"`) {
				return errors.New("/sku: required")
			}
			return nil
		}
		called := 0
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(strict, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error { called++; return nil }),
		})
		b.Start("search-indexer", c, err)
		id := b.PublishRaw(factItemUpdated.RoutingKey, json.RawMessage(`{"name":"no sku"}`))
		b.Idle()
		if called != 0 {
			t.Errorf("the handler was called %d times with a payload its schema refuses", called)
		}
		p := b.Poisoned("search-indexer")
		if len(p) != 1 || p[0].MessageID != id || !strings.Contains(p[0].Failure, "/sku: required") {
			t.Fatalf("poisoned = %+v", p)
		}
	})
}

// A failure's story, which a failed Want prints into test output and so
// into CI logs, hides a password as the runtime's log does.
func TestStoryHidesPasswords(t *testing.T) {
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[itemUpdated](b, factItemUpdated)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error {
				return errors.New("ledger down (postgres://booker:s3cret@db:5432/ledger)")
			}),
		})
		b.Start("search-indexer", c, err)
		warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-1"})
		b.Idle()
		story := b.Story("search-indexer")
		if strings.Contains(story, "s3cret") || !strings.Contains(story, "booker:xxxxx@db") {
			t.Errorf("the story shows the password, or not the masked URL:\n%s", story)
		}
	})
}
