package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// After a fact of key "a" goes to poison, the key's later facts continue
// by default; with Park they follow it to poison, marked with its id, while
// other keys go on.
func TestOrderedPoisonContinuesOrParks(t *testing.T) {
	for _, park := range []bool{false, true} {
		name := map[bool]string{false: "continue", true: "park"}[park]
		t.Run(name, func(t *testing.T) {
			spec := orderedSpec("ordpoison")
			spec.Shards, spec.MaxAttempts, spec.Park = 1, 2, park
			b := newBroker(t, spec)
			conn := b.dial(Config{})
			pub, _ := NewPublisher(conn, b.events())
			f := orderedFact()
			bad := mustPublish(t, pub, f, item{SKU: "a", N: 0})
			for n := 1; n <= 2; n++ {
				mustPublish(t, pub, f, item{SKU: "a", N: n})
			}
			mustPublish(t, pub, f, item{SKU: "b", N: 0})

			var mu sync.Mutex
			var seen []string
			c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, it item) error {
				if it.SKU == "a" && it.N == 0 {
					return Permanent(errBadFact)
				}
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, fmt.Sprintf("%s%d", it.SKU, it.N))
				return nil
			})})
			if err != nil {
				t.Fatal(err)
			}
			stop := run(t, c)
			wantSeen, wantPoison := "a1 a2 b0", 1
			if park {
				wantSeen, wantPoison = "b0", 3
			}
			poison := b.consumer(0).PoisonQueue
			testenv.Eventually(t, "the poison queue filled", func() bool { return b.depth(poison) >= wantPoison })
			testenv.Eventually(t, "the other facts handled", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) >= len(strings.Fields(wantSeen))
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(seen) // keys a and b run in parallel
			if got := strings.Join(seen, " "); got != wantSeen {
				t.Errorf("handled %q, want %q", got, wantSeen)
			}
			if n := b.depth(poison); n != wantPoison {
				t.Fatalf("poison holds %d, want %d", n, wantPoison)
			}
			first := b.get(poison)
			if first.MessageId != bad {
				t.Errorf("poison's first fact is %s, want the failing one %s", first.MessageId, bad)
			}
			if park {
				for range 2 {
					d := b.get(poison)
					if failure, _ := d.Headers[HeaderFailure].(string); !strings.Contains(failure, "parked: fact "+bad) {
						t.Errorf("parked fact's x-failure = %q, want it to name %s", failure, bad)
					}
				}
			}
		})
	}
}

var errBadFact = errors.New("this fact can never be handled")

// The consumer checks each key's sequence numbers: a gap and a step back
// are counted; the same fact again (same id) and a new source are not.
func TestOrderedSequenceGapsAndStepsBack(t *testing.T) {
	spec := orderedSpec("ordseq")
	spec.Shards = 1
	b := newBroker(t, spec)
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	f := orderedFact()
	publish := func(source string, seq int64, env Envelope) {
		t.Helper()
		if err := pub.PublishEnvelope(context.Background(), f.WithSequence(source, seq), env); err != nil {
			t.Fatal(err)
		}
	}
	envs := make([]Envelope, 5)
	for i := range envs {
		envs[i], _ = NewEnvelope(item{SKU: "k", N: i})
	}
	publish("s1", 1, envs[0])
	publish("s1", 2, envs[1])
	publish("s1", 2, envs[1]) // the same fact again: no step back
	publish("s1", 4, envs[2]) // 3 is missing: a gap
	publish("s1", 3, envs[3]) // a step back
	publish("s2", 1, envs[4]) // a new source starts afresh

	var mu sync.Mutex
	handled := 0
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, it item) error {
		mu.Lock()
		defer mu.Unlock()
		handled++
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	testenv.Eventually(t, "six facts handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled >= 6 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	counts := conn.Counts(b.consumer(0).Name)
	if g, s := counts.Get(SequenceGap), counts.Get(SequenceStepBack); g != 1 || s != 1 {
		t.Errorf("counted %d gaps and %d steps back, want 1 and 1", g, s)
	}
}

// The publisher sends the ordering key and numbers each key's facts from
// 1, per key, under one source.
func TestPublisherNumbersFactsPerKey(t *testing.T) {
	spec := orderedSpec("ordpub")
	// Classic: RabbitMQ refuses basic.get on a quorum queue with a
	// single active consumer.
	spec.Shards, spec.QueueType = 1, topology.Classic
	b := newBroker(t, spec)
	pub, _ := NewPublisher(b.dial(Config{}), b.events())
	for _, sku := range []string{"x", "y", "x"} {
		mustPublish(t, pub, orderedFact(), item{SKU: sku})
	}
	var got []string
	sources := map[any]bool{}
	for range 3 {
		d := b.get(b.consumer(0).Shards[0])
		got = append(got, fmt.Sprintf("%v#%v", d.Headers[HeaderOrderingKey], d.Headers[HeaderSequence]))
		sources[d.Headers[HeaderSequenceSource]] = true
	}
	if strings.Join(got, " ") != "x#1 y#1 x#2" {
		t.Errorf("ordering headers %v, want x#1 y#1 x#2", got)
	}
	if len(sources) != 1 || sources[nil] {
		t.Errorf("sources %v: want one, the same for all", sources)
	}
}

// A shard deleted under a running ordered consumer ends Run with an error
// naming it, rather than leaving the consumer reading the other shards
// only.
func TestOrderedConsumerStopsWhenAShardIsDeleted(t *testing.T) {
	spec := orderedSpec("ordgone")
	spec.Shards = 2
	b := newBroker(t, spec)
	conn := b.dial(Config{})
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- c.Run(ctx) }()
	shard := b.consumer(0).Shards[1]
	testenv.Eventually(t, "the consumer on the shard", func() bool {
		fig, err := conn.Figures(context.Background(), b.consumer(0))
		return err == nil && fig.Consumers == 2
	})
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(shard, false, false, false); err != nil {
		t.Fatal(err)
	}
	_ = ch.Close()
	err = receive(t, done)
	if err == nil || !strings.Contains(err.Error(), shard) {
		t.Errorf("Run after the shard was deleted: %v; want an error naming %s", err, shard)
	}
}

// While one key's fact is held up (here: its handler has not returned),
// the other keys of the same shard are handled, and the held-up key's
// later fact waits for it.
func TestOrderedOtherKeysGoOnWhileOneIsHeldUp(t *testing.T) {
	spec := orderedSpec("ordheld")
	spec.Shards, spec.Concurrency, spec.Prefetch = 1, 2, 10
	b := newBroker(t, spec)
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	f := orderedFact()
	mustPublish(t, pub, f, item{SKU: "a", N: 0})
	mustPublish(t, pub, f, item{SKU: "a", N: 1})
	for n := range 5 {
		mustPublish(t, pub, f, item{SKU: "b", N: n})
	}
	release := make(chan struct{})
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock() // a failing test must not leave the handler waiting
	var mu sync.Mutex
	var seen []string
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, it item) error {
		if it.SKU == "a" && it.N == 0 {
			<-release
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s%d", it.SKU, it.N))
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	handled := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(seen, " ") }
	testenv.Eventually(t, "key b handled while a is held up", func() bool { return handled() == "b0 b1 b2 b3 b4" })
	unblock()
	testenv.Eventually(t, "key a handled in order", func() bool { return handled() == "b0 b1 b2 b3 b4 a0 a1" })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A full shard of an ordered consumer with maxLength refuses publishes of
// its keys like a full work queue: the error matches ErrRejected and names
// the shard.
func TestOrderedFullShardRejectsPublishes(t *testing.T) {
	spec := orderedSpec("ordfull")
	spec.Shards, spec.QueueType, spec.MaxLength = 2, topology.Classic, 2
	b := newBroker(t, spec)
	pub, _ := NewPublisher(b.dial(Config{}), b.events())
	var err error
	for n := 0; n < 5 && err == nil; n++ {
		_, err = pub.Publish(context.Background(), orderedFact(), item{SKU: "one-key", N: n})
	}
	var re *RejectedError
	if !errors.As(err, &re) || len(re.Queues) != 1 || !slices.Contains(b.consumer(0).Shards, re.Queues[0]) {
		t.Fatalf("publish into a full shard: %v; want a RejectedError naming one shard of %v", err, b.consumer(0).Shards)
	}
}

// A fact numbered by its caller but without an ordering key (an outbox
// relay not given the fact) is refused before anything is sent: its number
// would reach the ordered consumer's hash exchange without the key.
func TestNumberedFactWithoutKeyIsRefused(t *testing.T) {
	spec := orderedSpec("ordnokey")
	spec.Shards, spec.QueueType = 1, topology.Classic
	b := newBroker(t, spec)
	pub, _ := NewPublisher(b.dial(Config{}), b.events())
	f := orderedFact()
	f.OrderingKey = ""
	env, err := NewEnvelope(item{SKU: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.PublishEnvelope(context.Background(), f.WithSequence("outbox:t", 1), env); err == nil || !strings.Contains(err.Error(), "no OrderingKey") {
		t.Fatalf("publish of a numbered fact without its key: %v, want an error saying it has no OrderingKey", err)
	}
	if n := b.depth(b.consumer(0).Shards[0]); n != 0 {
		t.Errorf("the shard holds %d messages, want 0: nothing is sent", n)
	}
}
