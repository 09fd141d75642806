package runtime

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// namesGuard is a Guard that records the names it claims under and lets
// every fact through.
type namesGuard struct {
	mu    sync.Mutex
	names []string
}

func (g *namesGuard) Run(ctx context.Context, consumer, _ string, fn func(context.Context) error) (bool, error) {
	g.mu.Lock()
	if !slices.Contains(g.names, consumer) {
		g.names = append(g.names, consumer)
	}
	g.mu.Unlock()
	return false, fn(ctx)
}

// waitStored waits until the broker reports offset off stored under name.
func (b *broker) waitStored(conn *Conn, name, stream string, off int64) {
	b.t.Helper()
	store, err := conn.offsets(context.Background(), "test")
	if err != nil {
		b.t.Fatal(err)
	}
	testenv.Eventually(b.t, "offset "+name+" stored", func() bool {
		got, found, err := store.QueryOffset(context.Background(), name, stream)
		return err == nil && found && got == off
	})
}

// A reader under another offset name (a replay) reads the stream apart
// from the consumer's own offset: from where the replay positioned it up to
// its bound, storing its progress under its name, its guard claiming under
// that name; a fresh name with nothing stored reads from the first fact.
func TestStreamReaderUnderOffsetName(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}})
	f := itemFact("item.added")
	logs := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(logs)})
	pub, _ := NewPublisher(conn, b.events())
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		mustPublish(t, pub, f, item{SKU: s})
	}
	c := b.consumer(0)
	newReader := func(got *skuLog, opts ...ConsumerOption) *Consumer {
		r, err := NewConsumer(conn, c, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			got.add(v.SKU)
			return nil
		})}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	lag := func() *int64 {
		f, err := conn.Figures(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return f.StreamLag
	}
	if l := lag(); l != nil {
		t.Fatalf("Figures.StreamLag before anything was stored: %d, want nil", *l)
	}
	var live skuLog
	stop := run(t, newReader(&live))
	testenv.Eventually(t, "the live reader reads all five", func() bool { return len(live.list()) == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b.waitStored(conn, c.Name, c.Stream, 4)
	if l := lag(); l == nil || *l != 0 {
		t.Fatalf("Figures.StreamLag at the tail: %v, want 0", l)
	}
	mustPublish(t, pub, f, item{SKU: "f"})

	// A replay from offset 2 to offset 3, as warren replay stores it.
	rebuild := c.Name + ".rebuild"
	store, err := conn.offsets(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.StoreOffset(context.Background(), rebuild, c.Stream, 1); err != nil {
		t.Fatal(err)
	}
	if err := store.StoreOffset(context.Background(), rebuild+ReplayUntilSuffix, c.Stream, 3); err != nil {
		t.Fatal(err)
	}
	b.waitStored(conn, rebuild, c.Stream, 1)
	b.waitStored(conn, rebuild+ReplayUntilSuffix, c.Stream, 3)

	var replayed skuLog
	guard := &namesGuard{}
	stop = run(t, newReader(&replayed, WithOffsetName(rebuild), WithGuard(guard)))
	// Logged once the facts up to the bound were settled and stored.
	testenv.Eventually(t, "the replay reaches its bound", func() bool {
		return slices.Equal(logs.values("replay done: it read the stream up to its bound", "offset_name"), []string{rebuild})
	})
	b.waitStored(conn, rebuild, c.Stream, 3)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c", "d"}; !slices.Equal(replayed.list(), want) {
		t.Fatalf("the replay handled %v, want %v: from its first offset to its bound, not past it", replayed.list(), want)
	}
	if !slices.Equal(guard.names, []string{rebuild}) {
		t.Fatalf("the replay's guard claimed under %v, want only %q", guard.names, rebuild)
	}
	if off := b.storedOffset(conn, c); off != 4 {
		t.Fatalf("the consumer's own offset is %d after the replay, want 4: untouched", off)
	}

	var fresh skuLog
	var offsetF int64 = -1
	freshReader, err := NewConsumer(conn, c, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if v.SKU == "f" {
			offsetF = StreamOffset(amqp.Delivery{Headers: d.Headers})
		}
		fresh.add(v.SKU)
		return nil
	})}, WithOffsetName(c.Name+".fresh"))
	if err != nil {
		t.Fatal(err)
	}
	stop = run(t, freshReader)
	testenv.Eventually(t, "a fresh name reads from the first fact", func() bool { return len(fresh.list()) >= 6 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "e", "f"}; !slices.Equal(fresh.list(), want) {
		t.Fatalf("a fresh offset name read %v, want %v", fresh.list(), want)
	}
	// The stores of the consumer's offset took offsets of their own
	// between 4 and f's: the lag counts them.
	if l := lag(); offsetF <= 4 || l == nil || *l != offsetF-4 {
		t.Fatalf("Figures.StreamLag with f at offset %d and 4 stored: %v, want %d", offsetF, l, offsetF-4)
	}
}

// WithOffsetName, WithOffsetStoreInterval and WithStreamReadOverAMQP
// apply to stream consumers only, and take a name and an interval of 0 or more; the interval is
// DefaultOffsetStoreInterval unless given.
func TestWithOffsetNameRefusals(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "log-reader", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	queueReader, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: "e", Retry: "r", Dead: "d"},
		Consumers: []topology.ConsumerSpec{{Name: "queue-reader", Bindings: []string{"item.#"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	routes := []Route{Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })}
	if _, err := NewConsumer(conn, queueReader.Consumers[0], routes, WithOffsetName("x")); err == nil || !strings.Contains(err.Error(), "WithOffsetName does not apply: the consumer reads a queue") {
		t.Errorf("WithOffsetName on a queue consumer: %v", err)
	}
	if _, err := NewConsumer(conn, b.consumer(0), routes, WithOffsetName("Not A Name")); err == nil || !strings.Contains(err.Error(), `offset name "Not A Name": expected lower-case words`) {
		t.Errorf("WithOffsetName with a bad name: %v", err)
	}
	if _, err := NewConsumer(conn, b.consumer(0), routes, WithOffsetName("log-reader.rebuild")); err != nil {
		t.Errorf("WithOffsetName on a stream consumer: %v", err)
	}
	if _, err := NewConsumer(conn, queueReader.Consumers[0], routes, WithOffsetStoreInterval(time.Second)); err == nil || !strings.Contains(err.Error(), "WithOffsetStoreInterval does not apply: the consumer reads a queue") {
		t.Errorf("WithOffsetStoreInterval on a queue consumer: %v", err)
	}
	if _, err := NewConsumer(conn, queueReader.Consumers[0], routes, WithStreamReadOverAMQP()); err == nil || !strings.Contains(err.Error(), "WithStreamReadOverAMQP does not apply: the consumer reads a queue") {
		t.Errorf("WithStreamReadOverAMQP on a queue consumer: %v", err)
	}
	if _, err := NewConsumer(conn, b.consumer(0), routes, WithOffsetStoreInterval(-time.Second)); err == nil || !strings.Contains(err.Error(), "WithOffsetStoreInterval(-1s): expected 0 (store as it advances) or a positive duration") {
		t.Errorf("WithOffsetStoreInterval(-1s): %v", err)
	}
	for _, c := range []struct {
		opts []ConsumerOption
		want time.Duration
	}{{nil, DefaultOffsetStoreInterval}, {[]ConsumerOption{WithOffsetStoreInterval(0)}, 0}} {
		cons, err := NewConsumer(conn, b.consumer(0), routes, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if cons.opts.offsetEvery != c.want {
			t.Errorf("with %d options the offset store interval is %s, want %s", len(c.opts), cons.opts.offsetEvery, c.want)
		}
	}
}

// replayAt stores a replay under name on c's stream as warren replay
// does: the offset before its start, and its bound.
func (b *broker) replayAt(conn *Conn, c topology.Consumer, name string, before, until int64) {
	b.t.Helper()
	store, err := conn.offsets(context.Background(), "test")
	if err != nil {
		b.t.Fatal(err)
	}
	if err := store.StoreOffset(context.Background(), name, c.Stream, before); err != nil {
		b.t.Fatal(err)
	}
	if err := store.StoreOffset(context.Background(), name+ReplayUntilSuffix, c.Stream, until); err != nil {
		b.t.Fatal(err)
	}
	b.waitStored(conn, name, c.Stream, before)
	b.waitStored(conn, name+ReplayUntilSuffix, c.Stream, until)
}

const replayDone = "replay done: it read the stream up to its bound"

// A replay whose bound is the stream's tail (no fact past it, the usual
// end of warren replay --limit with fewer facts than asked) logs that it
// is done once the facts up to the bound are handled and stored: no fact
// past the bound comes to tell it. A reader started again at its bound
// says so again, once.
func TestStreamReplayDoneAtTheTail(t *testing.T) {
	eachReadMode(t, testStreamReplayDoneAtTheTail)
}

func testStreamReplayDoneAtTheTail(t *testing.T, offsets OffsetDialer) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder})
	f := itemFact("item.added")
	logs := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(logs), StreamOffsets: offsets})
	pub, _ := NewPublisher(conn, b.events())
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		mustPublish(t, pub, f, item{SKU: s})
	}
	c := b.consumer(0)
	name := c.Name + ".rb3"
	b.replayAt(conn, c, name, 1, 4) // c, d, e: up to the tail

	r, got := skuReader(t, b, conn, f, WithOffsetName(name))
	stop := run(t, r)
	testenv.Eventually(t, "the replay says it is done at the tail", func() bool {
		return len(logs.values(replayDone, "offset_name")) > 0
	})
	if want := []string{"c", "d", "e"}; !slices.Equal(got.list(), want) {
		t.Fatalf("done with %v handled, want %v", got.list(), want)
	}
	b.waitStored(conn, name, c.Stream, 4)
	time.Sleep(300 * time.Millisecond) // a second line would come now
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := logs.values(replayDone, "offset_name"); !slices.Equal(n, []string{name}) {
		t.Fatalf("replay done logged for %v, want once for %q:\n%s", n, name, logs.text())
	}

	// Started again, the reader has nothing left to read: done at once.
	r, got = skuReader(t, b, conn, f, WithOffsetName(name))
	stop = run(t, r)
	testenv.Eventually(t, "a reader started at its bound says it is done", func() bool {
		return len(logs.values(replayDone, "offset_name")) == 2
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got.list()) != 0 {
		t.Fatalf("a reader at its bound handled %v, want nothing", got.list())
	}
}

// With facts past the bound, a replay is said done only once every fact
// up to the bound is settled and stored, not when the first fact past it
// arrives while one before it is still in a handler.
func TestStreamReplayDoneAfterTheFactsBeforeTheBound(t *testing.T) {
	eachReadMode(t, testStreamReplayDoneAfterTheFactsBeforeTheBound)
}

func testStreamReplayDoneAfterTheFactsBeforeTheBound(t *testing.T, offsets OffsetDialer) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4, Prefetch: 8})
	f := itemFact("item.added")
	logs := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(logs), StreamOffsets: offsets})
	pub, _ := NewPublisher(conn, b.events())
	for _, s := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		mustPublish(t, pub, f, item{SKU: s})
	}
	c := b.consumer(0)
	name := c.Name + ".rebuild"
	b.replayAt(conn, c, name, 1, 3) // c and d; e, f and g past the bound

	entered, release := make(chan struct{}), make(chan struct{})
	var got skuLog
	var settledC sync.WaitGroup
	settledC.Add(1)
	r, err := NewConsumer(conn, c, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if v.SKU == "c" {
			close(entered)
			<-release
			defer settledC.Done()
		}
		got.add(v.SKU)
		return nil
	})}, WithOffsetName(name))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, r)
	receive(t, entered)
	testenv.Eventually(t, "d handled while c is in its handler", func() bool { return slices.Contains(got.list(), "d") })
	time.Sleep(500 * time.Millisecond) // the facts past the bound arrive meanwhile
	if n := logs.values(replayDone, "offset_name"); len(n) != 0 {
		t.Fatalf("replay done logged with c still in its handler:\n%s", logs.text())
	}
	close(release)
	settledC.Wait()
	testenv.Eventually(t, "the replay says it is done once c is settled", func() bool {
		return len(logs.values(replayDone, "offset_name")) > 0
	})
	b.waitStored(conn, name, c.Stream, 3)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := logs.values(replayDone, "offset_name"); !slices.Equal(n, []string{name}) {
		t.Fatalf("replay done logged for %v, want once for %q", n, name)
	}
	if want := []string{"d", "c"}; !slices.Equal(got.list(), want) {
		t.Fatalf("handled %v, want %v: nothing past the bound", got.list(), want)
	}
}
