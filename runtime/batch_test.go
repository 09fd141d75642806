package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// testBatch is what a generated batch type is: the batch's facts by type.
type testBatch struct{ items []Item[item] }

func collectItems(f Fact) Route {
	return Collect(f, func(b *testBatch, it Item[item]) { b.items = append(b.items, it) })
}

// batchRecorder keeps every batch a handler saw.
type batchRecorder struct {
	mu      sync.Mutex
	batches [][]Item[item]
}

func (r *batchRecorder) add(b testBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b.items)
}

func (r *batchRecorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, b := range r.batches {
		out = append(out, len(b))
	}
	return out
}

func (r *batchRecorder) facts() int {
	n := 0
	for _, s := range r.sizes() {
		n += s
	}
	return n
}

// batchBroker declares one batch consumer of item.# with the test ladder.
func batchBroker(t *testing.T, size int, wait time.Duration, prefetch int) (*broker, *Conn, topology.Consumer, Fact) {
	t.Helper()
	b, conn, spec, f, _ := loggedBatchBroker(t, size, wait, prefetch)
	return b, conn, spec, f
}

// loggedBatchBroker is batchBroker with the Conn's log records.
func loggedBatchBroker(t *testing.T, size int, wait time.Duration, prefetch int) (*broker, *Conn, topology.Consumer, Fact, *logRecorder) {
	t.Helper()
	b := newBroker(t, topology.ConsumerSpec{Name: "batcher", Bindings: []string{"item.#"}, Backoff: testLadder,
		Prefetch: prefetch, Batch: &topology.Batch{Size: size, Wait: wait}})
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	return b, conn, b.consumer(0), itemFact("item.added"), rec
}

func publishItems(t *testing.T, conn *Conn, b *broker, f Fact, skus ...string) []string {
	t.Helper()
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(skus))
	for i, s := range skus {
		ids[i] = mustPublish(t, pub, f, item{SKU: s, N: i})
	}
	return ids
}

// A batch closes at its size: ten facts waiting in the queue reach a
// handler of batches of four as 4, 4 and, after the wait, 2.
func TestBatchClosesAtSizeOrWait(t *testing.T) {
	b, conn, spec, f := batchBroker(t, 4, 300*time.Millisecond, 20)
	publishItems(t, conn, b, f, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	testenv.Eventually(t, "ten facts in the work queue", func() bool { return b.depth(spec.Queue) == 10 })
	var rec batchRecorder
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		rec.add(batch)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "ten facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 10 })
	if got := rec.sizes(); !slices.Equal(got, []int{4, 4, 2}) {
		t.Errorf("batch sizes %v, want [4 4 2]", got)
	}
	// Each fact arrives typed, with its own delivery.
	var skus []string
	for _, batch := range rec.batches {
		for _, it := range batch {
			if it.Delivery.MessageID == "" || it.Delivery.RoutingKey != "item.added" || it.Delivery.Attempt != 1 {
				t.Errorf("delivery %+v: want a message id, routing key item.added and attempt 1", it.Delivery)
			}
			skus = append(skus, it.Fact.SKU)
		}
	}
	if !slices.Equal(skus, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}) {
		t.Errorf("facts in batches %v, want a to j in order", skus)
	}
}

// Each fact of one batch settles on its own: done ones are acked, a failed
// one walks its retry ladder with its own attempt header, a permanent one
// goes to poison with its own failure headers.
func TestBatchSettlesEachFactOnItsOwn(t *testing.T) {
	b, conn, spec, f := batchBroker(t, 4, 500*time.Millisecond, 20)
	ids := publishItems(t, conn, b, f, "done-1", "flaky", "broken", "done-2")
	testenv.Eventually(t, "four facts in the work queue", func() bool { return b.depth(spec.Queue) == 4 })
	var rec batchRecorder
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		rec.add(batch)
		out := Outcomes{}
		for _, it := range batch.items {
			switch {
			case it.Fact.SKU == "flaky" && it.Delivery.Attempt == 1:
				out.Fail(it.Delivery.MessageID, errors.New("search index busy"))
			case it.Fact.SKU == "broken":
				out.Fail(it.Delivery.MessageID, Permanent(errors.New("sku broken is unknown")))
			default:
				out.Done(it.Delivery.MessageID)
			}
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	d := b.get(spec.PoisonQueue)
	if d.MessageId != ids[2] {
		t.Errorf("poisoned %s, want the broken fact %s", d.MessageId, ids[2])
	}
	checkPoison(t, d, spec, b.events(), "item.added", 1, "sku broken is unknown")
	testenv.Eventually(t, "three facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 3 })
	counts := conn.Counts(spec.Name)
	if counts.Get(Retried) != 1 || counts.Get(Poisoned) != 1 {
		t.Errorf("retried %d and poisoned %d, want 1 and 1", counts.Get(Retried), counts.Get(Poisoned))
	}
	if got := rec.sizes(); !slices.Equal(got, []int{4, 1}) {
		t.Fatalf("batch sizes %v, want [4 1]: the batch, then the retry alone", got)
	}
	retry := rec.batches[1][0]
	if retry.Delivery.MessageID != ids[1] || retry.Delivery.Attempt != 2 || amqpmsg.HeaderInt(retry.Delivery.Headers, HeaderAttempts) != 1 {
		t.Errorf("retry %s attempt %d (x-attempts %d), want %s on attempt 2 (x-attempts 1)",
			retry.Delivery.MessageID, retry.Delivery.Attempt, amqpmsg.HeaderInt(retry.Delivery.Headers, HeaderAttempts), ids[1])
	}
}

// A fact that fails its checks goes to poison before the batch reaches
// the handler, and the rest of its batch is handled without it.
func TestBatchPoisonsAnInvalidFactAndHandlesTheRest(t *testing.T) {
	b, conn, spec, f := batchBroker(t, 4, 500*time.Millisecond, 20)
	publishItems(t, conn, b, f, "a", "b")
	bad := `{"id":"bad-1","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":""}}`
	b.publishRaw("item.added", []byte(bad))
	publishItems(t, conn, b, f, "c")
	testenv.Eventually(t, "four facts in the work queue", func() bool { return b.depth(spec.Queue) == 4 })
	var rec batchRecorder
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		rec.add(batch)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	d := b.get(spec.PoisonQueue)
	checkPoison(t, d, spec, b.events(), "item.added", 1, "payload of item.added does not match its schema: /sku")
	testenv.Eventually(t, "three facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 3 })
	if got := rec.sizes(); !slices.Equal(got, []int{3}) {
		t.Errorf("batch sizes %v, want [3]: the valid facts in one batch", got)
	}
}

// One error fails every fact of the batch, and a panic does too, as a
// retry: the next attempt has them all again.
func TestBatchErrorAndPanicRetryTheWholeBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func()
	}{
		{"error", nil},
		{"panic", func() { panic("index client is nil") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, conn, spec, f := batchBroker(t, 3, 500*time.Millisecond, 20)
			publishItems(t, conn, b, f, "a", "b", "c")
			testenv.Eventually(t, "three facts in the work queue", func() bool { return b.depth(spec.Queue) == 3 })
			var rec batchRecorder
			c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
				rec.add(batch)
				if batch.items[0].Delivery.Attempt == 1 {
					if tc.fail != nil {
						tc.fail()
					}
					return nil, errors.New("warehouse unreachable")
				}
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			run(t, c)
			testenv.Eventually(t, "three facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 3 })
			if n := conn.Counts(spec.Name).Get(Retried); n != 3 {
				t.Errorf("retried %d, want 3", n)
			}
			if n := rec.facts(); n != 6 {
				t.Errorf("handler saw %d facts, want 6: each twice", n)
			}
		})
	}
}

// A batch handler's panic fails each fact of the batch, and its stack is
// logged once, for the batch, not once a fact.
func TestBatchPanicLogsItsStackOnce(t *testing.T) {
	b, conn, spec, f, logs := loggedBatchBroker(t, 3, 500*time.Millisecond, 20)
	publishItems(t, conn, b, f, "a", "b", "c")
	testenv.Eventually(t, "three facts in the work queue", func() bool { return b.depth(spec.Queue) == 3 })
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		if batch.items[0].Delivery.Attempt == 1 {
			panic("index client is nil")
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "three facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 3 })
	if errs := logs.values("handler failed; retrying", "err"); len(errs) != 3 {
		t.Errorf("%d facts logged as retried, want 3", len(errs))
	}
	var stacks []string
	logs.mu.Lock()
	for _, rec := range logs.records {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "stack" {
				stacks = append(stacks, rec.Message)
			}
			return true
		})
	}
	logs.mu.Unlock()
	if len(stacks) != 1 || !strings.HasPrefix(stacks[0], "batch handler panicked") {
		t.Errorf("records with the stack: %q; want one, the batch's", stacks)
	}
}

// Outcomes that leave a fact out retry it with an error naming it; an
// outcome for a fact not in the batch is logged by its id.
func TestBatchMissingAndUnknownOutcomesAreNamed(t *testing.T) {
	b, conn, spec, f, logs := loggedBatchBroker(t, 3, 500*time.Millisecond, 20)
	ids := publishItems(t, conn, b, f, "a", "b", "c")
	testenv.Eventually(t, "three facts in the work queue", func() bool { return b.depth(spec.Queue) == 3 })
	var rec batchRecorder
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		rec.add(batch)
		if len(batch.items) == 1 {
			return Outcomes{batch.items[0].Delivery.MessageID: nil}, nil
		}
		// c is left out, and an id of another batch slips in.
		return Outcomes{ids[0]: nil, ids[1]: nil, "not-in-batch": nil}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "three facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 3 })
	if got := rec.sizes(); !slices.Equal(got, []int{3, 1}) || rec.batches[1][0].Delivery.MessageID != ids[2] {
		t.Fatalf("batches %v, want [3 1] with the left-out fact retried", got)
	}
	errs := logs.values("handler failed; retrying", "err")
	if len(errs) != 1 || !strings.Contains(errs[0], "no outcome for "+ids[2]) || !strings.Contains(errs[0], "not-in-batch") {
		t.Errorf("retry errors %q: want one naming %s and not-in-batch", errs, ids[2])
	}
	if got := logs.values("batch handler returned outcomes for facts not in its batch; they are ignored", "message_ids"); len(got) != 1 || got[0] != "not-in-batch" {
		t.Errorf("unknown outcomes logged as %q, want not-in-batch", got)
	}
}

// A batch whose dependency is unavailable is held, every fact without
// spending an attempt, and a run of such batches pauses the consumer.
func TestBatchUnavailableHoldsAndPauses(t *testing.T) {
	b, conn, spec, f := batchBroker(t, 2, 500*time.Millisecond, 20)
	publishItems(t, conn, b, f, "a", "b", "c", "d")
	testenv.Eventually(t, "four facts in the work queue", func() bool { return b.depth(spec.Queue) == 4 })
	var down sync.Mutex
	down.Lock()
	isDown := true
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		down.Lock()
		defer down.Unlock()
		if isDown {
			return nil, Unavailable(errors.New("warehouse down"))
		}
		for _, it := range batch.items {
			if it.Delivery.Attempt != 1 {
				return nil, Permanent(fmt.Errorf("fact %s on attempt %d: an outage must spend none", it.Delivery.MessageID, it.Delivery.Attempt))
			}
		}
		return nil, nil
	}, WithOutagePolicy(OutagePolicy{PauseAfter: 2, ProbeMin: 20 * time.Millisecond, ProbeMax: 40 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	down.Unlock()
	run(t, c)
	testenv.Eventually(t, "the consumer paused", func() bool { return c.Health().Paused })
	down.Lock()
	isDown = false
	down.Unlock()
	testenv.Eventually(t, "four facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 4 })
	counts := conn.Counts(spec.Name)
	if counts.Get(Held) < 4 || counts.Get(Retried) != 0 || counts.Get(Poisoned) != 0 {
		t.Errorf("held %d, retried %d, poisoned %d: want every fact held, none retried or poisoned",
			counts.Get(Held), counts.Get(Retried), counts.Get(Poisoned))
	}
}

// What cannot apply to a batch consumer is refused when it is built.
func TestNewBatchConsumerRefuses(t *testing.T) {
	b, conn, spec, f := batchBroker(t, 4, time.Second, 8)
	plain := newBroker(t, topology.ConsumerSpec{Name: "plain", Bindings: []string{"item.#"}, Backoff: testLadder}).consumer(0)
	handler := func(context.Context, testBatch) (Outcomes, error) { return nil, nil }
	routes := []Route{collectItems(f)}
	_ = b
	os := orderedSpec("ordered-batcher")
	os.Batch = &topology.Batch{Size: 4, Wait: time.Second}
	ordered := newBroker(t, os).consumer(0)
	// An ordered batch consumer defers in place, so its bound applies.
	if _, err := NewBatchConsumer(conn, ordered, routes, handler, WithMaxDeferInPlace(time.Minute)); err != nil {
		t.Errorf("ordered batch consumer with WithMaxDeferInPlace: %v", err)
	}
	for _, tc := range []struct {
		name string
		new  func() error
		want string
	}{
		{"middleware", func() error {
			_, err := NewBatchConsumer(conn, spec, routes, handler, WithMiddleware(func(next HandlerFunc) HandlerFunc { return next }))
			return err
		}, "WithMiddleware does not apply"},
		{"prefetch below size", func() error {
			_, err := NewBatchConsumer(conn, spec, routes, handler, WithPrefetch(2))
			return err
		}, "batch size 4: expected at most the prefetch (2)"},
		{"guard that cannot claim a batch", func() error {
			_, err := NewBatchConsumer(conn, spec, routes, handler, WithGuard(singleGuard{}))
			return err
		}, "cannot claim a batch"},
		{"plain consumer", func() error {
			_, err := NewBatchConsumer(conn, plain, routes, handler)
			return err
		}, "not a batch consumer"},
		{"max defer in place", func() error {
			_, err := NewBatchConsumer(conn, spec, routes, handler, WithMaxDeferInPlace(time.Minute))
			return err
		}, "WithMaxDeferInPlace does not apply"},
		{"wait zero", func() error {
			s := spec
			s.Batch.Wait = 0
			_, err := NewBatchConsumer(conn, s, routes, handler)
			return err
		}, "batch wait 0s: expected a positive duration"},
		{"wait negative", func() error {
			s := spec
			s.Batch.Wait = -time.Second
			_, err := NewBatchConsumer(conn, s, routes, handler)
			return err
		}, "batch wait -1s: expected a positive duration"},
		{"size negative", func() error {
			s := spec
			s.Batch.Size = -1
			_, err := NewBatchConsumer(conn, s, routes, handler)
			return err
		}, "batch size -1: expected at least 1"},
		{"ordered with middleware", func() error {
			_, err := NewBatchConsumer(conn, ordered, routes, handler, WithMiddleware(func(next HandlerFunc) HandlerFunc { return next }))
			return err
		}, "WithMiddleware does not apply"},
		{"batch consumer built as plain", func() error {
			_, err := NewConsumer(conn, spec, routes)
			return err
		}, "build it with NewBatchConsumer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.new()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// singleGuard is a Guard without batch claims.
type singleGuard struct{}

func (singleGuard) Run(ctx context.Context, _, _ string, fn func(context.Context) error) (bool, error) {
	return false, fn(ctx)
}

// Batches work on a classic work queue with priorities and a bound as on
// the quorum queues of the other tests.
func TestBatchOnABoundedClassicPriorityQueue(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "batcher", Bindings: []string{"item.#"}, Backoff: testLadder,
		QueueType: topology.Classic, MaxPriority: 10, MaxLength: 100,
		Batch: &topology.Batch{Size: 3, Wait: 200 * time.Millisecond}})
	conn := b.dial(Config{})
	spec, f := b.consumer(0), itemFact("item.added")
	publishItems(t, conn, b, f, "a", "b", "c", "d", "e", "f")
	testenv.Eventually(t, "six facts in the work queue", func() bool { return b.depth(spec.Queue) == 6 })
	var rec batchRecorder
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		rec.add(batch)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "six facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 6 })
	if got := rec.sizes(); !slices.Equal(got, []int{3, 3}) {
		t.Errorf("batch sizes %v, want [3 3]", got)
	}
}

// batchMetrics records the batches a consumer observes.
type batchMetrics struct {
	nopMetrics
	mu    sync.Mutex
	sizes []int
	waits []time.Duration
}

func (m *batchMetrics) ObserveBatch(_ string, size int, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sizes = append(m.sizes, size)
	m.waits = append(m.waits, wait)
}

// A Metrics that is a BatchMetrics hears each batch's size and wait: the
// full batch, then the partial last one, closed at its wait.
func TestBatchMetricsObserveEachBatch(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "batcher", Bindings: []string{"item.#"}, Backoff: testLadder,
		Prefetch: 20, Batch: &topology.Batch{Size: 4, Wait: 300 * time.Millisecond}})
	m := &batchMetrics{}
	conn := b.dial(Config{Metrics: m})
	spec, f := b.consumer(0), itemFact("item.added")
	publishItems(t, conn, b, f, "a", "b", "c", "d", "e")
	testenv.Eventually(t, "five facts in the work queue", func() bool { return b.depth(spec.Queue) == 5 })
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(context.Context, testBatch) (Outcomes, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "five facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 5 })
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Equal(m.sizes, []int{4, 1}) || len(m.waits) != 2 || m.waits[1] < 300*time.Millisecond {
		t.Errorf("observed sizes %v and waits %v; want [4 1], the second at least the 300ms wait", m.sizes, m.waits)
	}
}

// A fact of a batch that its handler defers waits in the delay levels and
// comes back on its own, its attempt unspent and its deferral counted,
// while the rest of its batch is acked.
func TestBatchDefersOneFact(t *testing.T) {
	b := newDelayBroker(t, topology.ConsumerSpec{Name: "batcher", Bindings: []string{"item.#"}, Backoff: testLadder,
		Prefetch: 20, Batch: &topology.Batch{Size: 3, Wait: 200 * time.Millisecond}})
	conn := b.dial(Config{})
	spec, f := b.consumer(0), itemFact("item.added")
	ids := publishItems(t, conn, b, f, "a", "later", "c")
	testenv.Eventually(t, "three facts in the work queue", func() bool { return b.depth(spec.Queue) == 3 })
	var rec batchRecorder
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		rec.add(batch)
		out := Outcomes{}
		for _, it := range batch.items {
			if it.Fact.SKU == "later" && it.Delivery.Deferrals == 0 {
				out.Fail(it.Delivery.MessageID, Defer(50*time.Millisecond))
				continue
			}
			out.Done(it.Delivery.MessageID)
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "three facts acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == 3 })
	if n := conn.Counts(spec.Name).Get(Deferred); n != 1 {
		t.Errorf("deferred %d, want 1", n)
	}
	if got := rec.sizes(); !slices.Equal(got, []int{3, 1}) {
		t.Fatalf("batch sizes %v, want [3 1]", got)
	}
	back := rec.batches[1][0].Delivery
	if back.MessageID != ids[1] || back.Attempt != 1 || back.Deferrals != 1 {
		t.Errorf("came back: %s attempt %d deferrals %d; want %s, attempt 1, deferrals 1", back.MessageID, back.Attempt, back.Deferrals, ids[1])
	}
}

// A batch takes facts in the order the queue hands them out: on a priority
// queue the high ones first. Classic queues on every broker; a quorum
// queue's two levels (RabbitMQ 4) when the broker has them, since quorum
// priorities exist only there (TestQuorumPriorityOnRabbitMQ4 checks the
// refusal on RabbitMQ 3).
func TestBatchTakesHighPriorityFactsFirst(t *testing.T) {
	cases := []struct {
		name string
		spec topology.ConsumerSpec
		high uint8
	}{
		{"classic", topology.ConsumerSpec{QueueType: topology.Classic, MaxPriority: 10}, 9},
	}
	if probe := newBroker(t); brokerOf(transport.Network{Connection: probe.raw}) >= topology.RabbitMQ4 {
		cases = append(cases, struct {
			name string
			spec topology.ConsumerSpec
			high uint8
		}{"quorum", topology.ConsumerSpec{QueueType: topology.Quorum, MaxPriority: topology.QuorumMaxPriority}, topology.QuorumHighPriority})
	} else {
		t.Log("RabbitMQ 3: quorum queues have no priorities; classic only")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Name, spec.Bindings, spec.Backoff, spec.Prefetch = "prio-batch", []string{"item.#"}, testLadder, 10
			spec.Batch = &topology.Batch{Size: 10, Wait: 200 * time.Millisecond}
			b := newBroker(t, spec)
			conn := b.dial(Config{})
			pub, err := NewPublisher(conn, b.events())
			if err != nil {
				t.Fatal(err)
			}
			f := itemFact("item.added")
			const low, urgent = 50, 5
			for i := range low {
				mustPublish(t, pub, f, item{SKU: "low", N: i})
			}
			for i := range urgent {
				mustPublish(t, pub, f.WithPriority(tc.high), item{SKU: "high", N: i})
			}
			var rec batchRecorder
			c, err := NewBatchConsumer(conn, b.consumer(0), []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
				rec.add(batch)
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			run(t, c)
			testenv.Eventually(t, "every fact acked", func() bool { return conn.Counts(b.consumer(0).Name).Get(Acked) == low+urgent })
			rec.mu.Lock()
			defer rec.mu.Unlock()
			highs := 0
			for _, it := range rec.batches[0] {
				if it.Fact.SKU == "high" {
					highs++
				}
			}
			if highs != urgent {
				t.Errorf("the first batch held %d of the %d high-priority facts, want all", highs, urgent)
			}
		})
	}
}

// Collect gives a batch type's field room for the batch's facts only when
// the field is the one of its item type; two fields of one type are left
// to grow as they are appended to.
func TestCollectFindsTheFieldOfItsItems(t *testing.T) {
	type one struct {
		Items  []Item[item]
		Others []Item[string]
	}
	type two struct {
		A, B []Item[item]
	}
	if got := itemsField[one, item](); got != 0 {
		t.Errorf("field of []Item[item] in %T: %d, want 0", one{}, got)
	}
	if got := itemsField[one, string](); got != 1 {
		t.Errorf("field of []Item[string] in %T: %d, want 1", one{}, got)
	}
	if got := itemsField[two, item](); got != -1 {
		t.Errorf("field of []Item[item] in %T, which has two: %d, want -1", two{}, got)
	}
	bo := &batchOf[one]{facts: []*batchFact{{in: inbound{routingKey: "a"}}, {in: inbound{routingKey: "b"}}, {in: inbound{routingKey: "a"}}}}
	bo.size(0, "a", reflect.TypeFor[[]Item[item]]())
	if c := cap(bo.b.Items); c != 2 {
		t.Errorf("room for %d items of key a, want 2", c)
	}
}
