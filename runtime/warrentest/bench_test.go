package warrentest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// The benchmarks run the catalogue example's generated fact and codecs
// through the same consumer on the in-process bus and on RabbitMQ: one
// fact handled, and one fact failing through a five-tier retry ladder into
// poison. On the bus the ladder is the example's scale (seconds to hours)
// in virtual time; on the broker it is five tiers of milliseconds, since
// real time passes there.

var benchItem = cat.ItemUpdated{
	Item:      cat.Item{Sku: "BOOK-123", Name: "The Warren Handbook", Price: cat.Money{Amount: 1999, Currency: cat.CurrencyEUR}},
	Changed:   []cat.ItemUpdatedChangedItem{cat.ItemUpdatedChangedItemPrice},
	UpdatedAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
}

func benchTopology(b *testing.B, ladder []time.Duration) topology.Topology {
	b.Helper()
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: len(ladder) + 1, Backoff: ladder},
	}})
	if err != nil {
		b.Fatal(err)
	}
	return top
}

var (
	hoursLadder = []time.Duration{time.Second, time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}
	msLadder    = []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond}
)

// scenario is what one benchmark op does on a connection with the
// topology declared: publish, and wait until the handler has seen the
// fact as often as it will.
type scenario struct {
	ladder []time.Duration
	fail   bool // fail every attempt, so that the fact ends in poison
}

// rig starts the consumer on conn and returns a function that publishes
// one fact and returns once its last handler call returned.
func (s scenario) rig(ctx context.Context, b *testing.B, conn *runtime.Conn, top topology.Topology) func() {
	last := make(chan struct{}, 1)
	calls := len(s.ladder) + 1
	if !s.fail {
		calls = 1
	}
	c, err := runtime.NewConsumer(conn, top.Consumers[0], []runtime.Route{
		runtime.Handle(cat.FactItemUpdated, func(ctx context.Context, d runtime.Delivery, v cat.ItemUpdated) error {
			var err error
			if s.fail {
				err = errors.New("index down")
			}
			if d.Attempt == calls {
				defer func() { last <- struct{}{} }()
			}
			return err
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	pub, err := runtime.NewPublisher(conn, topology.DefaultExchanges.Events)
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		if _, err := pub.Publish(ctx, cat.FactItemUpdated, benchItem); err != nil {
			b.Fatal(err)
		}
		<-last
	}
}

// inBubble runs f in virtual time, which needs a *testing.T: a benchmark
// has none, so it runs f as a test of its own.
func inBubble(b *testing.B, top topology.Topology, f func(t *testing.T, bus *warrentest.Bus)) {
	ok := testing.RunTests(func(string, string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: b.Name(),
		F: func(t *testing.T) {
			warrentest.Run(t, top, f)
		},
	}})
	if !ok {
		b.Fatal("the scenario failed")
	}
}

func benchScenario(b *testing.B, s scenario) {
	b.Run("bus-virtual-time", func(b *testing.B) {
		top := benchTopology(b, s.ladder)
		// The benchmark's clock must be the wall's, so it is read outside
		// the bubble: the bus's setup, once per run, is counted in.
		b.ResetTimer()
		inBubble(b, top, func(t *testing.T, bus *warrentest.Bus) {
			op := s.rig(bus.Context(), b, bus.Conn(), top)
			for range b.N {
				op()
			}
			bus.Idle()
		})
		b.StopTimer()
	})
	b.Run("bus-real-time", func(b *testing.B) {
		top := benchTopology(b, msLadder[:len(s.ladder)])
		bus := warrentest.New(b, top)
		op := scenario{ladder: msLadder[:len(s.ladder)], fail: s.fail}.rig(bus.Context(), b, bus.Conn(), top)
		b.ResetTimer()
		for range b.N {
			op()
		}
		b.StopTimer()
		bus.Idle()
	})
	b.Run("rabbitmq", func(b *testing.B) {
		top := benchTopology(b, msLadder[:len(s.ladder)])
		url := testenv.VHost(b, "warren-kit-bench")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		op := scenario{ladder: msLadder[:len(s.ladder)], fail: s.fail}.rig(ctx, b, conn, top)
		b.ResetTimer()
		for range b.N {
			op()
		}
	})
}

// BenchmarkHandledFact is one fact published, delivered, decoded,
// validated, handled and acknowledged.
func BenchmarkHandledFact(b *testing.B) {
	benchScenario(b, scenario{ladder: hoursLadder})
}

// BenchmarkLadderToPoison is one fact failing on each of its six
// attempts, through five delay tiers, into the poison queue.
func BenchmarkLadderToPoison(b *testing.B) {
	benchScenario(b, scenario{ladder: hoursLadder, fail: true})
}

// BenchmarkLadderScenarioTest is what a user's test of a poisoning handler
// costs whole: a new bus in virtual time with the topology declared, the
// consumer started, one fact published and walked through a five-tier
// ladder of hours into poison, the poison checked, and the bus torn down.
func BenchmarkLadderScenarioTest(b *testing.B) {
	top := benchTopology(b, hoursLadder)
	for range b.N {
		inBubble(b, top, func(t *testing.T, bus *warrentest.Bus) {
			c, err := runtime.NewConsumer(bus.Conn(), top.Consumers[0], []runtime.Route{
				runtime.Handle(cat.FactItemUpdated, func(ctx context.Context, d runtime.Delivery, v cat.ItemUpdated) error {
					return errors.New("index down")
				}),
			})
			bus.Start("search-indexer", c, err)
			warrentest.Register[cat.ItemUpdated](bus, cat.FactItemUpdated)
			warrentest.Publish(bus, cat.FactItemUpdated, benchItem)
			bus.Idle()
			bus.WantPoisoned("search-indexer", 1)
		})
	}
}
