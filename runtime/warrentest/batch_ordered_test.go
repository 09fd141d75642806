package warrentest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

type stepBatch struct{ steps []runtime.Item[step] }

// An ordered batch consumer on the kit: a batch holds at most one fact per
// key, each key's facts are handled in publish order, and a fact that
// fails is retried in place (no retry queue) while its key's later facts
// wait behind it and the other keys go on.
func TestAnOrderedBatchHoldsOneFactPerKeyInVirtualTime(t *testing.T) {
	top := buildTopology(t, topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "ledger", Bindings: []string{"orders.#"}, Ordered: true, Shards: 2, Concurrency: 2,
			MaxAttempts: 3, Backoff: []time.Duration{time.Minute, time.Minute},
			Batch: &topology.Batch{Size: 10, Wait: time.Second}},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		var batches [][]string // each batch's facts, as key+n
		var handled []string   // the facts done, in the order they were done
		failures := 0
		c, err := runtime.NewBatchConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.Collect(factStep, func(b *stepBatch, it runtime.Item[step]) { b.steps = append(b.steps, it) }),
		}, func(ctx context.Context, batch stepBatch) (runtime.Outcomes, error) {
			mu.Lock()
			defer mu.Unlock()
			out := runtime.Outcomes{}
			var facts []string
			for _, it := range batch.steps {
				name := fmt.Sprintf("%s%d", it.Fact.OrderID, it.Fact.N)
				facts = append(facts, name)
				if name == "a2" && failures < 2 {
					failures++
					out.Fail(it.Delivery.MessageID, errors.New("flaky"))
					continue
				}
				handled = append(handled, name)
				out.Done(it.Delivery.MessageID)
			}
			batches = append(batches, facts)
			return out, nil
		})
		b.Start("ledger", c, err)
		for n := 1; n <= 4; n++ {
			for _, key := range []string{"a", "b", "c"} {
				warrentest.Publish(b, factStep, step{OrderID: key, N: n})
			}
		}
		b.Idle()
		mu.Lock()
		defer mu.Unlock()
		for _, batch := range batches {
			keys := map[byte]bool{}
			for _, f := range batch {
				if keys[f[0]] {
					t.Errorf("batch %v holds two facts of key %c", batch, f[0])
				}
				keys[f[0]] = true
			}
		}
		for _, key := range []string{"a", "b", "c"} {
			var got []string
			for _, f := range handled {
				if strings.HasPrefix(f, key) {
					got = append(got, f)
				}
			}
			if want := []string{key + "1", key + "2", key + "3", key + "4"}; !slices.Equal(got, want) {
				t.Errorf("key %s: handled %v, want %v", key, got, want)
			}
		}
		// b and c finished while a2 waited out its retries in place.
		if i, j := slices.Index(handled, "c4"), slices.Index(handled, "a2"); i > j {
			t.Errorf("handled %v: c4 after a2, want the other keys to go on while a2 is retried", handled)
		}
		if failures != 2 {
			t.Errorf("a2 failed %d times, want 2", failures)
		}
		b.WantHandled("ledger", 12)
		b.WantRetried("ledger", 2)
		b.WantPoisoned("ledger", 0)
		if got := b.Conn().Counts("ledger").Get(runtime.RetriedInPlace); got != 2 {
			t.Errorf("counted %d retries in place, want 2", got)
		}
		if got := b.Conn().Counts("ledger").Get(runtime.Retried); got != 0 {
			t.Errorf("counted %d retries through the retry queues, want 0: an ordered batch retries in place", got)
		}
		var attempts []int
		for _, call := range b.Calls("ledger") {
			if call.MessageID != "" && strings.Contains(string(call.Body), `"order_id":"a","n":2`) {
				attempts = append(attempts, call.Attempt)
			}
		}
		if !slices.Equal(attempts, []int{1, 2, 3}) {
			t.Errorf("a2 called on attempts %v, want [1 2 3]", attempts)
		}
	})
}

// An ordered batch consumer whose fact goes to poison for good: with Park
// the key's later facts follow it there, and the other keys are handled.
func TestAnOrderedBatchParksAKeyBehindItsPoisonedFact(t *testing.T) {
	top := buildTopology(t, topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "ledger", Bindings: []string{"orders.#"}, Ordered: true, Shards: 1, Park: true,
			Batch: &topology.Batch{Size: 5, Wait: time.Second}},
	}})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		var handled []string
		c, err := runtime.NewBatchConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.Collect(factStep, func(b *stepBatch, it runtime.Item[step]) { b.steps = append(b.steps, it) }),
		}, func(ctx context.Context, batch stepBatch) (runtime.Outcomes, error) {
			mu.Lock()
			defer mu.Unlock()
			out := runtime.Outcomes{}
			for _, it := range batch.steps {
				if it.Fact.OrderID == "a" && it.Fact.N == 1 {
					out.Fail(it.Delivery.MessageID, runtime.Permanent(errors.New("no such order")))
					continue
				}
				handled = append(handled, fmt.Sprintf("%s%d", it.Fact.OrderID, it.Fact.N))
				out.Done(it.Delivery.MessageID)
			}
			return out, nil
		})
		b.Start("ledger", c, err)
		for n := 1; n <= 3; n++ {
			warrentest.Publish(b, factStep, step{OrderID: "a", N: n})
			warrentest.Publish(b, factStep, step{OrderID: "b", N: n})
		}
		b.Idle()
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(handled, ",") != "b1,b2,b3" {
			t.Errorf("handled %v, want b1,b2,b3: a's facts parked behind a1", handled)
		}
		poisoned := b.Poisoned("ledger")
		if len(poisoned) != 3 {
			t.Fatalf("%d facts in poison, want a1 and the two parked behind it", len(poisoned))
		}
		if !strings.Contains(poisoned[1].Failure, "parked") || !strings.Contains(poisoned[2].Failure, "parked") {
			t.Errorf("poison failures %q, %q: want the later facts of a parked", poisoned[1].Failure, poisoned[2].Failure)
		}
	})
}
