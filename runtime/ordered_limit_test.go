package runtime

import (
	"context"
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

// Shards that never settle, handed back and forth between two instances
// while their facts wait unstarted in hand (each instance's one worker is
// held by a fact of another shard), spend none of a fact's delivery limit
// beyond one delivery: every fact is handled once the workers are free,
// each key in publish order, and none is dead-lettered to poison. Before,
// each hand-over returned the waiting facts once more, and past the limit
// the broker dead-letters them to poison unhandled.
func TestOrderedHandOversDoNotSpendTheDeliveryLimit(t *testing.T) {
	// Mostly waiting: beside the package's other long tests.
	t.Parallel()
	const limit = 2
	spec := orderedSpec("handlimit")
	spec.DeliveryLimit = limit
	s := startChurn(t, spec)
	if s.cons.DeliveryLimit != limit {
		t.Fatalf("consumer's DeliveryLimit %d, want the shards' %d", s.cons.DeliveryLimit, limit)
	}
	// Enough rounds for the waiting facts to have been returned past the
	// limit, had the hand-overs gone on returning them: a shard handed
	// over more often than that, or kept as often.
	testenv.Eventually(t, "shards handed over or kept, round after round", func() bool {
		return s.handedOver() > limit || s.kept() > limit || s.b.depth(s.cons.PoisonQueue) > 0
	})
	s.finish(t)
}

// Classic shards have no delivery limit, so hand-overs go on while every
// worker is busy; those given up (a shard whose fact is in a worker's
// hand) and those done leave the keys they held queued for the workers.
// The instances keep working through any number of rounds: once the
// workers are free every fact is handled, in order per key. Before, each
// hand-over given up queued its keys once more beside the entries they
// had, until the queue of keys was full and the instance stopped for good.
func TestOrderedHandOversWhileEveryWorkerIsBusy(t *testing.T) {
	// Mostly waiting: beside the package's other long tests.
	t.Parallel()
	spec := orderedSpec("handbusy")
	spec.QueueType = topology.Classic
	s := startChurn(t, spec)
	testenv.Eventually(t, "hand-overs tried, round after round", func() bool { return s.tried() >= 40 })
	s.finish(t)
}

// churn is two instances of an ordered consumer of three shards, each with
// one worker that a gate holds, and two more members of the consumer's
// instances queue that read no shard: with four instances counted the
// share is one shard, so the real instances keep handing their second
// shard to each other.
type churn struct {
	b            *broker
	cons         topology.Consumer
	rec          *logRecorder
	h            *handled
	gate         chan struct{}
	started      atomic.Int32
	keys, perKey int
}

func startChurn(t *testing.T, spec topology.ConsumerSpec) *churn {
	t.Helper()
	spec.Shards, spec.Concurrency = 3, 1
	s := &churn{b: newBroker(t, spec), rec: &logRecorder{}, h: newHandled(), gate: make(chan struct{}), keys: 30, perKey: 2}
	s.cons = s.b.consumer(0)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.rec.text())
		}
	})
	pub, err := NewPublisher(s.b.dial(Config{}), s.b.events())
	if err != nil {
		t.Fatal(err)
	}
	f := orderedFact()
	for n := range s.perKey {
		for k := range s.keys {
			mustPublish(t, pub, f, item{SKU: fmt.Sprintf("key-%02d", k), N: n})
		}
	}
	logs := slog.New(s.rec)
	start := func() {
		c, err := NewConsumer(s.b.dial(Config{Logger: logs}), s.cons, []Route{Handle(f, func(ctx context.Context, d Delivery, it item) error {
			s.started.Add(1)
			<-s.gate
			return s.h.run(it, func() error { return nil })
		})}, withBalanceInterval(30*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		run(t, c)
	}
	start()
	testenv.Eventually(t, "the first instance's worker held", func() bool { return s.started.Load() == 1 })
	members, err := s.b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = members.Close() })
	if _, err := members.QueueDeclare(MembersQueue(s.cons.Name), true, false, false, false,
		amqp.Table{"x-queue-type": "quorum", "x-expires": membersExpiry.Milliseconds()}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := members.Consume(MembersQueue(s.cons.Name), "", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	start()
	return s
}

// handedOver is how often the shard handed over most often was.
func (s *churn) handedOver() (most int) {
	by := map[string]int{}
	for _, shard := range s.rec.values("ordered consumer: shard handed over to another instance", "shard") {
		by[shard]++
		most = max(most, by[shard])
	}
	return most
}

// kept is how often a hand-over was put off to a later round.
func (s *churn) kept() int { return len(s.rec.values("ordered consumer: shard kept for now", "shard")) }

// tried is how many hand-overs were done, given up or put off.
func (s *churn) tried() int {
	return len(s.rec.values("ordered consumer: shard handed over to another instance", "shard")) +
		len(s.rec.values("ordered consumer: shard not handed over", "shard")) + s.kept()
}

// finish frees the workers and checks that every fact was handled, in
// order per key, and none went to poison.
func (s *churn) finish(t *testing.T) {
	t.Helper()
	t.Logf("a shard handed over at most %d times, shards kept %d times, %d hand-overs tried, %d handlers started", s.handedOver(), s.kept(), s.tried(), s.started.Load())
	close(s.gate)
	testenv.Eventually(t, "every fact handled or in poison", func() bool {
		return s.h.distinct()+s.b.depth(s.cons.PoisonQueue) >= s.keys*s.perKey
	})
	if n := s.b.depth(s.cons.PoisonQueue); n != 0 {
		t.Errorf("poison holds %d facts that no handler failed on; want none", n)
	}
	// Consecutive repeats are redeliveries: RabbitMQ 4.0.5 at times
	// crashes the channel of a basic.consume on a quorum queue declared
	// an instant before (rabbit_quorum_queue:consume, {error,noproc}),
	// which closes the connection with INTERNAL_ERROR; the facts whose
	// acks it took are handled again, in their place, as at-least-once
	// delivery allows. Order and completeness are checked as strictly.
	s.h.compactRepeats()
	s.h.checkInOrder(t, s.keys, s.perKey)
}

// A fact that takes its consumer's connection down each time it is
// handled (as a crashing process would) is handled DeliveryLimit times; on
// the last delivery its shard allows, the consumer poisons it itself and,
// with Park, parks its key: the key's later facts follow it to poison,
// those in hand and one published afterwards, while other keys go on. So
// for an ordered consumer and an ordered batch consumer. Before, the
// broker dead-lettered it on its next return, unseen by the consumer, and
// the key's later facts were handled without it.
func TestOrderedFactPastTheDeliveryLimitParksItsKey(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "one at a time", true: "batch"}[batch], func(t *testing.T) {
			const limit = 2
			spec := orderedSpec("limitpark")
			spec.Shards, spec.Park, spec.DeliveryLimit = 1, true, limit
			if batch {
				spec.Batch = &topology.Batch{Size: 4, Wait: 20 * time.Millisecond}
			}
			b := newBroker(t, spec)
			cons := b.consumer(0)
			p := newProxy(t, b.url, nil)
			conn := b.dial(Config{URLs: []string{p.url(b.url, "amqp")}})
			pub, err := NewPublisher(b.dial(Config{}), b.events())
			if err != nil {
				t.Fatal(err)
			}
			f := orderedFact()
			var fatal atomic.Int32
			var mu sync.Mutex
			seen := map[string]int{}
			// handle reports false for the fatal fact, whose handling takes
			// the connection down: nothing is settled.
			handle := func(it item) bool {
				if it.SKU == "a" && it.N == 0 {
					fatal.Add(1)
					p.cut()
					return false
				}
				mu.Lock()
				defer mu.Unlock()
				seen[fmt.Sprintf("%s%d", it.SKU, it.N)]++
				return true
			}
			var c *Consumer
			if batch {
				c, err = NewBatchConsumer(conn, cons, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
					out := Outcomes{}
					for _, it := range batch.items {
						if !handle(it.Fact) {
							<-ctx.Done()
							return nil, ctx.Err()
						}
						out.Done(it.Delivery.MessageID)
					}
					return out, nil
				})
			} else {
				c, err = NewConsumer(conn, cons, []Route{Handle(f, func(ctx context.Context, d Delivery, it item) error {
					if !handle(it) {
						<-ctx.Done()
						return ctx.Err()
					}
					return nil
				})})
			}
			if err != nil {
				t.Fatal(err)
			}
			bad := mustPublish(t, pub, f, item{SKU: "a", N: 0})
			mustPublish(t, pub, f, item{SKU: "a", N: 1})
			mustPublish(t, pub, f, item{SKU: "a", N: 2})
			run(t, c)
			handled := func(fact string) int {
				mu.Lock()
				defer mu.Unlock()
				return seen[fact]
			}
			testenv.Eventually(t, "key a's facts in poison or handled", func() bool {
				return b.depth(cons.PoisonQueue)+handled("a1")+handled("a2") >= 3
			})
			mustPublish(t, pub, f, item{SKU: "a", N: 3})
			mustPublish(t, pub, f, item{SKU: "b", N: 0})
			testenv.Eventually(t, "the other key handled, and a's last fact in poison or handled", func() bool {
				return handled("b0") > 0 && b.depth(cons.PoisonQueue)+handled("a1")+handled("a2")+handled("a3") >= 4
			})
			if n := fatal.Load(); n != limit {
				t.Errorf("the fatal fact was handled %d times, want %d (deliveryLimit)", n, limit)
			}
			for _, fact := range []string{"a1", "a2", "a3"} {
				if n := handled(fact); n != 0 {
					t.Errorf("%s handled %d times; want it parked in poison behind a0", fact, n)
				}
			}
			if n := b.depth(cons.PoisonQueue); n != 4 {
				t.Fatalf("poison holds %d, want a0 and the 3 facts parked behind it", n)
			}
			first := b.get(cons.PoisonQueue)
			if first.MessageId != bad {
				t.Errorf("poison's first fact is %s, want the fatal one %s", first.MessageId, bad)
			}
			if failure, _ := first.Headers[HeaderFailure].(string); !strings.Contains(failure, "last delivery the shard queue allows") {
				t.Errorf("the fatal fact's x-failure = %q, want it to name the delivery limit", failure)
			}
			for range 3 {
				d := b.get(cons.PoisonQueue)
				if failure, _ := d.Headers[HeaderFailure].(string); !strings.Contains(failure, "parked: fact "+bad) {
					t.Errorf("parked fact's x-failure = %q, want it to name %s", failure, bad)
				}
			}
		})
	}
}
