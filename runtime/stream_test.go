package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// newStreamBroker declares a test-unique stream of the "item.#" facts and
// the given stream consumers of it (their Names used as prefixes).
func newStreamBroker(t *testing.T, specs ...topology.ConsumerSpec) *broker {
	t.Helper()
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("items-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour}},
	}
	for _, s := range specs {
		s.Name = testenv.Name(s.Name)
		s.Stream = spec.Streams[0].Name
		spec.Consumers = append(spec.Consumers, s)
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)
	return b
}

// skuLog records the SKUs a handler saw, in order.
type skuLog struct {
	mu   sync.Mutex
	skus []string
}

func (h *skuLog) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.skus = append(h.skus, s)
}

func (h *skuLog) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.skus)
}

// consumers returns the number of consumers of a queue or stream.
func (b *broker) consumers(queue string) int {
	b.t.Helper()
	q, err := amqpmsg.InspectQueue(context.Background(), rawChannels{b.raw}, queue)
	if err != nil {
		b.t.Fatal(err)
	}
	return q.Consumers
}

func (b *broker) storedOffset(conn *Conn, c topology.Consumer) int64 {
	b.t.Helper()
	store, err := conn.offsets(context.Background(), "test")
	if err != nil {
		b.t.Fatal(err)
	}
	off, found, err := store.QueryOffset(context.Background(), c.Name, c.Stream)
	if err != nil || !found {
		b.t.Fatalf("query offset of %s on %s: %v (found %v)", c.Name, c.Stream, err, found)
	}
	return off
}

// A stream consumer reads from its declared start the first time, stores
// its offset, and after a restart (on a new connection) reads exactly the
// facts written since: none again, none skipped.
func TestStreamConsumerResumesAtStoredOffset(t *testing.T) {
	eachReadMode(t, testStreamConsumerResumesAtStoredOffset)
}

func testStreamConsumerResumesAtStoredOffset(t *testing.T, offsets OffsetDialer) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
	f := itemFact("item.added")
	conn := b.dial(Config{StreamOffsets: offsets})
	pub, _ := NewPublisher(conn, b.events())
	for _, s := range []string{"a", "b", "c"} {
		mustPublish(t, pub, f, item{SKU: s})
	}

	var got skuLog
	newReader := func(conn *Conn) *Consumer {
		c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			got.add(v.SKU)
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	stop := run(t, newReader(conn))
	testenv.Eventually(t, "the three facts written before the start skuLog", func() bool { return len(got.list()) == 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if off := b.storedOffset(conn, b.consumer(0)); off != 2 {
		t.Fatalf("stored offset %d after three facts from the first, want 2", off)
	}

	for _, s := range []string{"d", "e"} {
		mustPublish(t, pub, f, item{SKU: s})
	}
	conn2 := b.dial(Config{StreamOffsets: offsets})
	stop = run(t, newReader(conn2))
	testenv.Eventually(t, "the two facts written while stopped skuLog", func() bool { return len(got.list()) >= 5 })
	mustPublish(t, pub, f, item{SKU: "f"})
	testenv.Eventually(t, "a fact written while running skuLog", func() bool { return len(got.list()) >= 6 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "e", "f"}; !slices.Equal(got.list(), want) {
		t.Fatalf("skuLog %v, want %v: each fact once, in stream order", got.list(), want)
	}
	if n := conn2.Counts(b.consumer(0).Name).Get(Acked); n != 3 {
		t.Fatalf("second run acked %d facts, want 3", n)
	}
}

// A stream consumer declared to start at "next" reads nothing written
// before its first start.
func TestStreamConsumerStartsAtNext(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "late", Bindings: []string{"item.#"}, Backoff: testLadder})
	f := itemFact("item.added")
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "before"})
	c, got := skuReader(t, b, conn, f)
	stop := run(t, c)
	// The stream's consume has started once the work queue's, which
	// follows it on the same channel, has.
	testenv.Eventually(t, "the consumer reading its work queue", func() bool { return b.consumers(b.consumer(0).Queue) == 1 })
	mustPublish(t, pub, f, item{SKU: "after"})
	testenv.Eventually(t, "the fact written after the start skuLog", func() bool { return len(got.list()) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"after"}; !slices.Equal(got.list(), want) {
		t.Fatalf("skuLog %v, want %v", got.list(), want)
	}
}

// A stream consumer's "next" or "last" is the position it meant at the
// consumer's first start, whatever that start read: a consumer stopped
// before it settled a fact reads, at its next start, every fact written
// while it was stopped, and none written before its first start. On an
// empty stream too, where no offset before the start can be stored.
func TestStreamConsumerKeepsItsFirstStart(t *testing.T) {
	eachReadMode(t, testStreamConsumerKeepsItsFirstStart)
}

func testStreamConsumerKeepsItsFirstStart(t *testing.T, offsets OffsetDialer) {
	for _, tc := range []struct {
		name          string
		start         topology.Start
		before, first []string // written before the first start; read by it
	}{
		{"next", topology.Start{}, []string{"a", "b"}, nil},
		{"next on an empty stream", topology.Start{Kind: topology.StartNext}, nil, nil},
		{"last", topology.Start{Kind: topology.StartLast}, []string{"a", "b"}, []string{"b"}},
		{"last on an empty stream", topology.Start{Kind: topology.StartLast}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newStreamBroker(t, topology.ConsumerSpec{Name: "late", Bindings: []string{"item.#"}, Backoff: testLadder, Start: tc.start})
			f := itemFact("item.added")
			pub, _ := NewPublisher(b.dial(Config{}), b.events())
			for _, s := range tc.before {
				mustPublish(t, pub, f, item{SKU: s})
			}
			rec := &logRecorder{}
			conn := b.dial(Config{StreamOffsets: offsets, Logger: slog.New(rec)})
			c, got := skuReader(t, b, conn, f)
			stop := run(t, c)
			testenv.Eventually(t, "the consumer's start fixed", func() bool {
				return slices.Contains(rec.values("reading the stream", "start"), tc.start.String()+", fixed now")
			})
			testenv.Eventually(t, "the facts of the first start read", func() bool { return len(got.list()) == len(tc.first) })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.list(), tc.first) {
				t.Fatalf("the first start read %v, want %v", got.list(), tc.first)
			}

			for _, s := range []string{"x", "y"} {
				mustPublish(t, pub, f, item{SKU: s})
			}
			rec2 := &logRecorder{}
			c, got = skuReader(t, b, b.dial(Config{StreamOffsets: offsets, Logger: slog.New(rec2)}), f)
			stop = run(t, c)
			testenv.Eventually(t, "the facts written while stopped read", func() bool { return len(got.list()) >= 2 })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if want := []string{"x", "y"}; !slices.Equal(got.list(), want) {
				t.Fatalf("the second start read %v, want %v: the facts written while the consumer was stopped, and no other", got.list(), want)
			}
			if fixed := rec2.values("reading the stream", "start"); slices.Contains(fixed, tc.start.String()+", fixed now") {
				t.Errorf("the second start fixed its start again: %q", fixed)
			}
		})
	}
}

// A fact whose handler keeps failing does not hold the stream: it walks
// the consumer's own retry ladder into its poison queue with the usual
// headers, while the facts behind it are skuLog; the offset moves past
// it once its copy is confirmed.
func TestStreamConsumerFailureGoesToRetryAndPoison(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "failing", Bindings: []string{"item.#"}, Backoff: testLadder, MaxAttempts: 3, Start: topology.Start{Kind: topology.StartFirst}})
	f := itemFact("item.added")
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	var got skuLog
	var attemptsOfBad attempts
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if v.SKU == "bad" {
			attemptsOfBad.add(d.Attempt)
			return errors.New("search backend refused it")
		}
		got.add(v.SKU)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	badID := mustPublish(t, pub, f, item{SKU: "bad"})
	mustPublish(t, pub, f, item{SKU: "good"})
	stop := run(t, c)

	poisoned := b.get(b.consumer(0).PoisonQueue)
	if poisoned.MessageId != badID {
		t.Fatalf("poisoned %q, want the failing fact %q", poisoned.MessageId, badID)
	}
	for h, want := range map[string]any{HeaderConsumer: b.consumer(0).Name, HeaderAttempts: int64(3), HeaderOriginalRoutingKey: "item.added"} {
		if got := poisoned.Headers[h]; got != want {
			t.Errorf("poison header %s = %v, want %v", h, got, want)
		}
	}
	if s, _ := poisoned.Headers[HeaderFailure].(string); s == "" {
		t.Errorf("poison copy without %s", HeaderFailure)
	}
	if want := []int{1, 2, 3}; !slices.Equal(attemptsOfBad.list(), want) {
		t.Errorf("attempts of the failing fact %v, want %v", attemptsOfBad.list(), want)
	}
	if want := []string{"good"}; !slices.Equal(got.list(), want) {
		t.Errorf("skuLog %v, want %v", got.list(), want)
	}
	if n := conn.Counts(b.consumer(0).Name).Get(Retried); n != 2 {
		t.Errorf("retried %d times, want 2", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if off := b.storedOffset(conn, b.consumer(0)); off != 1 {
		t.Fatalf("stored offset %d, want 1: past both facts, the failed one copied out", off)
	}
}

// Bad input on a stream (a body that is not JSON, a payload that fails
// its schema) goes to the consumer's poison queue at once; a fact of the
// stream that the consumer's bindings do not match is skipped, not
// poisoned; one they match that it has no route for (its code does not
// know the fact) is poisoned as not handled, as in a work queue.
func TestStreamConsumerBadInput(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "strict", Bindings: []string{"item.added"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}},
		topology.ConsumerSpec{Name: "broad", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
	f := itemFact("item.added")
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	b.publishRaw("item.added", []byte("not json"))
	// A payload that fails the schema (sku must be non-empty), which
	// another client could publish.
	b.publishRaw("item.added", []byte(`{"id":"0190c3a2-5b7e-7000-8000-000000000001","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":""}}`))
	mustPublish(t, pub, itemFact("item.removed"), item{SKU: "other"})
	mustPublish(t, pub, f, item{SKU: "ok"})
	c, got := skuReader(t, b, conn, f)
	stop := run(t, c)
	testenv.Eventually(t, "the good fact skuLog", func() bool { return len(got.list()) == 1 })
	testenv.Eventually(t, "the two bad facts poisoned", func() bool { return b.depth(b.consumer(0).PoisonQueue) == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := conn.Counts(b.consumer(0).Name).Get(Retried); n != 0 {
		t.Errorf("retried %d times: bad input is permanent", n)
	}
	if off := b.storedOffset(conn, b.consumer(0)); off != 3 {
		t.Fatalf("stored offset %d, want 3: past all four facts", off)
	}
	if d := b.depth(b.consumer(0).PoisonQueue); d != 2 {
		t.Fatalf("poison depth %d, want 2: the fact of another binding is skipped, not poisoned", d)
	}

	// "item.#" matches item.removed, which the consumer has no route for.
	broad, err := NewConsumer(conn, b.consumer(1), []Route{Handle(f, func(context.Context, Delivery, item) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	stop = run(t, broad)
	testenv.Eventually(t, "the three facts broad cannot handle poisoned", func() bool { return b.depth(b.consumer(1).PoisonQueue) == 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for range 3 {
		d := b.get(b.consumer(1).PoisonQueue)
		keys = append(keys, fmt.Sprint(d.Headers[HeaderOriginalRoutingKey]))
		if d.Headers[HeaderOriginalRoutingKey] == "item.removed" {
			if why, _ := d.Headers[HeaderFailure].(string); !strings.Contains(why, "not handled by consumer") {
				t.Errorf("item.removed poisoned for %q, want: not handled by the consumer", why)
			}
		}
	}
	if want := []string{"item.added", "item.added", "item.removed"}; !slices.Equal(slices.Sorted(slices.Values(keys)), want) {
		t.Fatalf("broad poisoned %v, want %v: the two bad facts and the fact its bindings match without a route", keys, want)
	}
}

// Declare names the stream plugin, and how to enable it, when the stream
// protocol does not answer: here a port where nothing listens.
func TestDeclareStreamConsumerNamesMissingPlugin(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "noplugin", Bindings: []string{"item.#"}, Backoff: testLadder})
	declareErr, dialErr := withoutStreamProtocol(t, b)
	var pe *PluginError
	if !errors.As(declareErr, &pe) || pe.Plugin != topology.StreamPlugin {
		t.Fatalf("Declare: %v, want a PluginError naming %s", declareErr, topology.StreamPlugin)
	}
	if want := "rabbitmq-plugins enable rabbitmq_stream"; !strings.Contains(declareErr.Error(), want) {
		t.Fatalf("Declare: %v, want it to say %q", declareErr, want)
	}
	// Declared on connect, the topology fails Dial the same way.
	if !errors.As(dialErr, &pe) || pe.Plugin != topology.StreamPlugin {
		t.Fatalf("Dial: %v, want a PluginError naming %s", dialErr, topology.StreamPlugin)
	}
}

// The offset stored is the highest below which every fact is settled:
// facts settled out of order do not move it past one still in hand.
func TestOffsetTrackerMarksOnlySettledRuns(t *testing.T) {
	tr := newOffsetTracker(nil)
	for _, off := range []int64{10, 11, 12, 13} {
		tr.arrived(off)
	}
	tr.settled(12)
	tr.settled(11)
	if tr.mark != -1 {
		t.Fatalf("mark %d with offset 10 in hand, want -1", tr.mark)
	}
	tr.settled(10)
	if tr.mark != 12 {
		t.Fatalf("mark %d after 10, 11, 12 settled, want 12", tr.mark)
	}
	tr.restart() // the channel was lost with 13 in hand: it is read again
	tr.arrived(13)
	tr.settled(13)
	if tr.mark != 13 {
		t.Fatalf("mark %d, want 13", tr.mark)
	}
}

// A new channel reads the stream from the stored offset. Facts settled on
// the channel before are skipped, not handled again: those behind a fact
// that was not settled, and, when a store failed, those below the mark.
// Either way the mark moves on past them.
func TestOffsetTrackerSkipsFactsReadAgain(t *testing.T) {
	tr := newOffsetTracker(nil)
	for _, off := range []int64{10, 11, 12, 13} {
		tr.arrived(off)
	}
	tr.settled(10)
	tr.settled(12) // behind 11, which is not settled
	tr.restart()   // the channel ends; 10 was stored
	for _, off := range []int64{11, 12, 13} {
		tr.arrived(off)
	}
	if past, handled := tr.take(11); past || handled {
		t.Fatalf("take(11) = %v, %v: 11 was never settled, want it handled", past, handled)
	}
	if _, handled := tr.take(12); !handled {
		t.Fatal("take(12): 12 was settled on the channel before, want it skipped")
	}
	tr.settled(11)
	tr.settled(13)
	if tr.mark != 13 {
		t.Fatalf("mark %d, want 13", tr.mark)
	}

	tr.restart() // the channel ends, and its store failed: read again from 11
	for _, off := range []int64{11, 12, 13, 14} {
		tr.arrived(off)
	}
	for _, off := range []int64{11, 12, 13} {
		if _, handled := tr.take(off); !handled {
			t.Fatalf("take(%d) below the mark 13: want it skipped", off)
		}
	}
	if past, handled := tr.take(14); past || handled {
		t.Fatalf("take(14) = %v, %v, want it handled", past, handled)
	}
	tr.settled(14)
	if tr.mark != 14 {
		t.Fatalf("mark %d after the facts read again below it and 14, want 14", tr.mark)
	}
}

// A stream fact past a replay's bound is held unacked, and stays so
// although the channel's acks go several at a time: no multiple ack
// covers it (the broker would take it for credit and send on past the
// bound), while the acks around it still go.
func TestStreamSourceLeavesHeldFactsUnacked(t *testing.T) {
	ch := &ackLog{}
	a := newAcker(&core{metrics: nopMetrics{}, counters: &counters{}}, 100)
	a.timer = time.AfterFunc(time.Hour, func() {}) // the test sends by stopping
	tr := newOffsetTracker(nil)
	tr.until = 1
	s := &streamSource{acks: a, t: tr}
	d := func(tag uint64) amqp.Delivery { return amqp.Delivery{Acknowledger: ch, DeliveryTag: tag} }
	for _, j := range []streamJob{
		{d: d(1), stream: true, offset: 0},
		{d: d(2), stream: true, offset: 1},
		{d: d(3), stream: true, offset: 2}, // past the bound: held
		{d: d(4)},                          // the work queue's
	} {
		a.inHand.Add(1)
		if !j.stream || !tr.pastBound(j.offset) {
			a.ack(j.d, Acked, "k")
		}
		s.done(j)
	}
	a.stop()
	if want := []string{"2 multiple=true", "4 multiple=false"}; !slices.Equal(ch.acks, want) {
		t.Fatalf("acks sent %v, want %v: tag 3 held", ch.acks, want)
	}
}

// RabbitMQ before 3.13 answers a basic.nack on a stream by closing the
// whole connection (later releases take it as an ack). Stopping a stream
// consumer with facts received and not yet started leaves them unsettled
// without one: the connection stays up (a publisher on it goes on), and
// the next start reads exactly the facts that were not handled.
func TestStreamConsumerStopsWithFactsWaiting(t *testing.T) {
	eachReadMode(t, testStreamConsumerStopsWithFactsWaiting)
}

func testStreamConsumerStopsWithFactsWaiting(t *testing.T, offsets OffsetDialer) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "stopping", Bindings: []string{"item.#"}, Backoff: testLadder,
		Start: topology.Start{Kind: topology.StartFirst}, Prefetch: 50, Concurrency: 1})
	f := itemFact("item.added")
	conn := b.dial(Config{StreamOffsets: offsets})
	pub, _ := NewPublisher(conn, b.events())
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprint(i))
		mustPublish(t, pub, f, item{SKU: want[i]})
	}
	var got skuLog
	started, release := make(chan struct{}), make(chan struct{})
	newReader := func(conn *Conn) *Consumer {
		c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			got.add(v.SKU)
			if v.SKU == "0" {
				close(started)
				<-release
			}
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	stop := run(t, newReader(conn))
	receive(t, started)
	// The other 19 were written before the consumer started, within its
	// prefetch: the broker sends them at once, and they wait behind "0".
	time.Sleep(100 * time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(50 * time.Millisecond) // the stop under way, the handler busy
	close(release)
	if err := receive(t, stopped); err != nil {
		t.Fatal(err)
	}
	if n := conn.Counts(b.consumer(0).Name).Get(Returned); n == 0 {
		t.Fatal("no fact waited behind the first at the stop: the test proves nothing")
	}
	if h := conn.Health(); !h.Connected || h.LastError != nil {
		t.Fatalf("the connection after the stop: connected %v, last error %v", h.Connected, h.LastError)
	}
	mustPublish(t, pub, f, item{SKU: "20"}) // the publisher's channel is still open
	want = append(want, "20")

	stop = run(t, newReader(conn))
	testenv.Eventually(t, "every fact handled", func() bool { return len(got.list()) >= len(want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.list(), want) {
		t.Fatalf("handled %v, want %v: each fact once, in stream order", got.list(), want)
	}
	if h := conn.Health(); h.LastError != nil {
		t.Fatalf("the connection was lost: %v", h.LastError)
	}
}

// A stream fact that cannot be settled (here: maxAttempts 1, so no retry
// ladder, and a dependency unavailable) is handled again, and the offset
// stays before it meanwhile. Read over the stream protocol, it is handed
// back after a pause. Read over AMQP, it is read again without a nack
// (see TestStreamConsumerStopsWithFactsWaiting): the consumer's channel is
// closed, not the connection, and the stream is read again from the
// stored offset after the reconnect backoff. Facts after it that were
// handled meanwhile are skipped, not handled again.
func TestStreamConsumerReadsAgainAFactItCouldNotSettle(t *testing.T) {
	eachReadMode(t, testStreamConsumerReadsAgainAFactItCouldNotSettle)
}

func testStreamConsumerReadsAgainAFactItCouldNotSettle(t *testing.T, offsets OffsetDialer) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reread", Bindings: []string{"item.#"}, MaxAttempts: 1,
		Start: topology.Start{Kind: topology.StartFirst}, Prefetch: 50, Concurrency: 4})
	f := itemFact("item.added")
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec), StreamOffsets: offsets})
	pub, _ := NewPublisher(conn, b.events())
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprint(i))
		mustPublish(t, pub, f, item{SKU: want[i]})
	}
	h := &unavailableTwice{sku: "3"}
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, h.handle)})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	testenv.Eventually(t, "every fact handled", func() bool { return len(h.got.list()) >= len(want) })
	mustPublish(t, pub, f, item{SKU: "20"}) // the connection and the publisher's channel are up
	want = append(want, "20")
	testenv.Eventually(t, "the fact written after", func() bool { return len(h.got.list()) >= len(want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h.check(t, want)
	whys := rec.values("consumer lost its channel; resuming", "err")
	switch {
	case offsets == nil && len(whys) != 0:
		// Over the stream protocol the fact is handed back after a pause;
		// the channel stays.
		t.Fatalf("the channel's ends were logged as %q, want none: the fact is handed back, not read again", whys)
	case offsets != nil && (len(whys) != 2 || !strings.Contains(whys[0], "could not be settled") || !strings.Contains(whys[1], "could not be settled")):
		t.Fatalf("the channel's ends were logged as %q, want two that say a fact could not be settled", whys)
	}
	if h := conn.Health(); h.LastError != nil {
		t.Fatalf("the connection was lost: %v", h.LastError)
	}
}

// unavailableTwice is a handler that records the SKUs it handles, and
// finds its dependency unavailable the first two times it is given the
// fact of sku.
type unavailableTwice struct {
	sku      string
	got      skuLog
	mu       sync.Mutex
	failures int
}

func (h *unavailableTwice) handle(ctx context.Context, d Delivery, v item) error {
	if v.SKU == h.sku {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.failures < 2 {
			h.failures++
			return Unavailable(errors.New("the inventory service is down"))
		}
	}
	h.got.add(v.SKU)
	return nil
}

// check fails t unless each of want (numbers) was handled once, in any
// order, and the fact of sku failed twice first.
func (h *unavailableTwice) check(t *testing.T, want []string) {
	t.Helper()
	handled := h.got.list()
	slices.SortFunc(handled, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	if !slices.Equal(handled, want) {
		t.Fatalf("handled %v, want each of %v once", h.got.list(), want)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures != 2 {
		t.Fatalf("fact %s failed %d times, want 2 (handled again after each)", h.sku, h.failures)
	}
}

// With WithOffsetStoreInterval(0) a stream consumer stores its offset as
// it advances; with an interval it stores it an interval after it moved,
// and exactly when it stops.
func TestStreamConsumerStoresOffsetsAtAnInterval(t *testing.T) {
	b := newStreamBroker(t,
		topology.ConsumerSpec{Name: "eager", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}},
		topology.ConsumerSpec{Name: "lazy", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
	f := itemFact("item.added")
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	for i := range 5 {
		mustPublish(t, pub, f, item{SKU: fmt.Sprint(i)})
	}
	store, err := conn.offsets(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	stored := func(c topology.Consumer) int64 {
		off, found, err := store.QueryOffset(context.Background(), c.Name, c.Stream)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return -1
		}
		return off
	}
	start := func(c topology.Consumer, opts ...ConsumerOption) (got *skuLog, stop func() error) {
		got = &skuLog{}
		cons, err := NewConsumer(conn, c, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			got.add(v.SKU)
			return nil
		})}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return got, run(t, cons)
	}
	eager, stopEager := start(b.consumer(0), WithOffsetStoreInterval(0))
	lazy, stopLazy := start(b.consumer(1), WithOffsetStoreInterval(time.Hour))
	testenv.Eventually(t, "both consumers handled the five facts", func() bool { return len(eager.list()) == 5 && len(lazy.list()) == 5 })
	testenv.Eventually(t, "the offset stored as it advanced", func() bool { return stored(b.consumer(0)) == 4 })
	if off := stored(b.consumer(1)); off != -1 {
		t.Fatalf("with an interval of an hour, offset %d stored while running, want none", off)
	}
	if err := stopLazy(); err != nil {
		t.Fatal(err)
	}
	if off := stored(b.consumer(1)); off != 4 {
		t.Fatalf("with an interval, offset %d stored at the stop, want 4", off)
	}
	if err := stopEager(); err != nil {
		t.Fatal(err)
	}
}

// withoutStreamProtocol declares b's topology on a Conn whose stream port
// is one where nothing listens, and dials with the topology declared on
// connect: what Declare and Dial say.
func withoutStreamProtocol(t *testing.T, b *broker) (declareErr, dialErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, StreamPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declareErr = conn.Declare(ctx, b.top)
	_, dialErr = Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, StreamPort: 1, Topology: &b.top})
	return declareErr, dialErr
}

// A stream consumer says where it starts reading, and warns when its
// declared start offset is past the stream's last fact: the broker then
// sends nothing, which otherwise looks like a consumer that reads nothing.
func TestStreamConsumerSaysWhereItReads(t *testing.T) {
	b := newStreamBroker(t,
		topology.ConsumerSpec{Name: "far", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartOffset, Offset: 1000}},
		topology.ConsumerSpec{Name: "near", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartOffset, Offset: 2}})
	f := itemFact("item.added")
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	pub, _ := NewPublisher(conn, b.events())
	for i := range 3 {
		mustPublish(t, pub, f, item{SKU: fmt.Sprint(i)})
	}
	got := &skuLog{}
	for i := range 2 {
		c, err := NewConsumer(conn, b.consumer(i), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			got.add(v.SKU)
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		defer run(t, c)()
	}
	testenv.Eventually(t, "the warning for the start past the end", func() bool {
		return strings.Contains(rec.text(), "the declared start offset 1000 is past the stream's end (its last fact is at offset 2)")
	})
	testenv.Eventually(t, "near read from offset 2", func() bool { return slices.Equal(got.list(), []string{"2"}) })
	if froms := rec.values("reading the stream", "from"); !slices.Contains(froms, "offset 1000") || !slices.Contains(froms, "offset 2") {
		t.Errorf("the consumers said they read from %q, want offset 1000 and offset 2", froms)
	}
	if strings.Contains(rec.text(), "declared start offset 2 ") {
		t.Errorf("warned about a start within the stream:\n%s", rec.text())
	}
}

// A plain stream consumer reads its stream over the stream protocol, on a
// connection of its own that carries its name. With
// WithStreamReadOverAMQP, or an offset store that does not read streams,
// it reads it over AMQP, and opens no such connection.
func TestStreamConsumerReadsOverTheStreamProtocol(t *testing.T) {
	admin := testenv.BrokerAdmin(t)
	for _, c := range []struct {
		name    string
		offsets OffsetDialer
		opts    []ConsumerOption
		want    int // stream-protocol connections of the consumer's name
	}{
		{"by default", nil, nil, 1},
		{"WithStreamReadOverAMQP", nil, []ConsumerOption{WithStreamReadOverAMQP()}, 0},
		{"an offset store without Read", dialWithoutRead, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
			f := itemFact("item.added")
			conn := b.dial(Config{StreamOffsets: c.offsets})
			pub, _ := NewPublisher(conn, b.events())
			mustPublish(t, pub, f, item{SKU: "a"})
			cons, got := skuReader(t, b, conn, f, c.opts...)
			stop := run(t, cons)
			testenv.Eventually(t, "the fact handled", func() bool { return len(got.list()) == 1 })
			// Its reading's connection carries the consumer's name.
			n := streamConnections(t, admin, b.consumer(0).Name, "true")
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if n != c.want {
				t.Fatalf("%d stream-protocol connections carry the consumer's name, want %d", n, c.want)
			}
		})
	}
}

// vhostOf is the vhost of an AMQP URL, as rabbitmqctl names it.
func vhostOf(t *testing.T, amqpURL string) string {
	t.Helper()
	u, err := url.Parse(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimPrefix(u.Path, "/"); v != "" {
		if v, err = url.PathUnescape(v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	return "/"
}

// streamConnections applies do, an Erlang expression of P, to the
// broker's end of each stream-protocol connection named name, and returns
// how many there are. The broker lists stream connections apart from
// AMQP's, without the pid that close_connection takes, and RabbitMQ 4
// moved rabbitmqctl's list of them to another command.
func streamConnections(t testing.TB, admin *testenv.Admin, name, do string) int {
	t.Helper()
	out := admin.Run(t, "eval", fmt.Sprintf(`length([%s || P <- pg_local:get_members(rabbit_stream_connections), `+
		`lists:keyfind(<<%q>>, 3, proplists:get_value(client_properties, rabbit_stream_reader:info(P, [client_properties]))) =/= false]).`, do, name))
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("stream connections named %s: %q", name, out)
	}
	return n
}

// killStreamConnections kills the broker's end of each stream-protocol
// connection named name, as a crash of its process or a dropped socket
// would end it, and returns how many it killed.
func killStreamConnections(t testing.TB, admin *testenv.Admin, name string) int {
	t.Helper()
	return streamConnections(t, admin, name, "exit(P, kill)")
}

// A stream deleted under a consumer reading it over the stream protocol
// ends its subscription: the consumer says why, tries to subscribe again,
// warns at each failed try, and shows the failure in its Health; it
// stops when asked.
func TestStreamConsumerSaysItCannotSubscribeAgain(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "orphan", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
	f := itemFact("item.added")
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})
	c, got := skuReader(t, b, conn, f)
	stop := run(t, c)
	testenv.Eventually(t, "the fact handled", func() bool { return len(got.list()) == 1 })
	ch, err := conn.OpenChannel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(b.consumer(0).Stream, false, false, false); err != nil {
		t.Fatal(err)
	}
	_ = ch.Close()
	testenv.Eventually(t, "a failed try to subscribe again warned about", func() bool {
		return len(rec.values("could not subscribe to the stream again; trying again", "err")) > 0
	})
	if whys := rec.values("lost the stream's subscription; subscribing again", "err"); len(whys) == 0 || !strings.Contains(whys[0], "the subscription to stream") {
		t.Errorf("the loss was logged with %q, want why the subscription ended", whys)
	}
	if h := c.Health(); h.LastError == nil || !strings.Contains(h.LastError.Error(), b.consumer(0).Stream) {
		t.Errorf("Health().LastError = %v, want the failure naming the stream", h.LastError)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A stream consumer started while the stream protocol does not answer
// waits for it, as a consumer waits for the broker: it warns at each
// try, and reads once the protocol answers. (A connection the proxy
// closes at once fails only after the stream client's 10 s wait for the
// broker's answer.)
func TestStreamConsumerWaitsForTheStreamProtocol(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "patient", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
	px := newProxy(t, fmt.Sprintf("tcp://127.0.0.1:%d", b.streamPort), nil)
	_, port, _ := net.SplitHostPort(px.ln.Addr().String())
	proxyPort, _ := strconv.Atoi(port)
	f := itemFact("item.added")
	rec := &logRecorder{}
	conn := b.dial(Config{StreamPort: proxyPort, Logger: slog.New(rec), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})
	px.setDown(true)
	c, got := skuReader(t, b, conn, f)
	stop := run(t, c)
	testenv.Eventually(t, "the wait for the stream protocol warned about", func() bool {
		return len(rec.values("could not start reading the stream; trying again", "err")) > 0
	})
	if h := c.Health(); h.LastError == nil {
		t.Error("Health().LastError is nil while the stream protocol does not answer")
	}
	px.setDown(false)
	testenv.Eventually(t, "the fact handled once the stream protocol answers", func() bool { return len(got.list()) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// skuReader is b's first consumer on conn, handling facts of f (with
// opts), and the SKUs it handles.
func skuReader(t *testing.T, b *broker, conn *Conn, f Fact, opts ...ConsumerOption) (*Consumer, *skuLog) {
	t.Helper()
	got := &skuLog{}
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		got.add(v.SKU)
		return nil
	})}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, got
}
