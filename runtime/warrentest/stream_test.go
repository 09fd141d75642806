package warrentest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// Stream consumers on the kit: the stream keeps every fact, each consumer
// reads it from its own start (first, last, next, an offset) and then
// whatever is appended; a failing fact walks the consumer's own retry
// ladder into its poison queue while the stream reads on, and neither the
// other readers of the stream nor a plain consumer of the same facts see
// anything of it.
func TestStreamConsumersReadFromTheirStartInVirtualTime(t *testing.T) {
	ladder := []time.Duration{time.Minute, time.Hour}
	top := buildTopology(t, topology.Spec{
		Streams: []topology.StreamSpec{{Name: "steps-log", Bindings: []string{"orders.#"}, MaxAge: 24 * time.Hour}},
		Consumers: []topology.ConsumerSpec{
			{Name: "from-first", Bindings: []string{"orders.#"}, Stream: "steps-log", Start: topology.Start{Kind: topology.StartFirst}, MaxAttempts: 3, Backoff: ladder},
			{Name: "from-last", Bindings: []string{"orders.#"}, Stream: "steps-log", Start: topology.Start{Kind: topology.StartLast}},
			{Name: "from-next", Bindings: []string{"orders.#"}, Stream: "steps-log"},
			{Name: "from-offset", Bindings: []string{"orders.#"}, Stream: "steps-log", Start: topology.Start{Kind: topology.StartOffset, Offset: 1}},
			{Name: "plain", Bindings: []string{"orders.#"}, MaxAttempts: 3, Backoff: ladder},
		},
	})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		seen := map[string][]int{} // consumer -> the steps it handled, in order
		start := func(i int, failOn int) {
			spec := top.Consumers[i]
			c, err := runtime.NewConsumer(b.Conn(), spec, []runtime.Route{
				runtime.HandleEach(factStep, func() any { return new(step) }, func(_ context.Context, _ runtime.Delivery, f any) error {
					s := f.(*step)
					if s.N == failOn {
						return errors.New("no such order")
					}
					mu.Lock()
					defer mu.Unlock()
					seen[spec.Name] = append(seen[spec.Name], s.N)
					return nil
				}),
			})
			b.Start(spec.Name, c, err)
		}
		for n := 1; n <= 3; n++ {
			warrentest.Publish(b, factStep, step{OrderID: "a", N: n})
		}
		start(0, 2) // from-first fails on step 2, every time
		for i := 1; i < len(top.Consumers); i++ {
			start(i, 0)
		}
		b.Idle()
		warrentest.Publish(b, factStep, step{OrderID: "a", N: 4})
		b.Idle()

		want := map[string][]int{
			"from-first":  {1, 3, 4}, // 2 poisoned
			"from-last":   {3, 4},
			"from-next":   {4},
			"from-offset": {2, 3, 4},
			"plain":       {1, 2, 3, 4}, // its queue, declared with the bus, held them
		}
		mu.Lock()
		for name, w := range want {
			if got := seen[name]; !slices.Equal(got, w) {
				t.Errorf("%s handled steps %v, want %v", name, got, w)
			}
		}
		mu.Unlock()

		b.WantPoisoned("from-first", 1)
		p := b.Poisoned("from-first")[0]
		if p.Failure != "no such order" || p.Attempts != 3 {
			t.Errorf("poisoned with failure %q after %d attempts, want %q after 3", p.Failure, p.Attempts, "no such order")
		}
		if got := len(b.Retried("from-first")); got != 2 {
			t.Errorf("from-first retried %d times, want 2", got)
		}
		for _, name := range []string{"from-last", "from-next", "from-offset", "plain"} {
			b.WantPoisoned(name, 0)
			if f := b.Failed(name); len(f) > 0 {
				t.Errorf("%s failed %d calls: %v", name, len(f), f)
			}
		}
		// Every fact of the stream settled (step 2 once its copy went to
		// the ladder): each reader stored the stream's last offset.
		for _, name := range []string{"from-first", "from-last", "from-next", "from-offset"} {
			if off, ok := b.StoredOffset(name); !ok || off != 3 {
				t.Errorf("%s stored offset %d (found %t), want 3", name, off, ok)
			}
		}
		// The stream keeps what its readers settled.
		var offsets []string
		for _, m := range b.Waiting("steps-log") {
			offsets = append(offsets, fmt.Sprint(m.Headers["x-stream-offset"]))
		}
		if want := []string{"0", "1", "2", "3"}; !slices.Equal(offsets, want) {
			t.Errorf("the stream keeps the offsets %v, want %v", offsets, want)
		}
	})
}

// A consumer group of a super stream on the kit: its first member reads
// every partition from the start; when it leaves, having stored each
// partition's offset, the next member reads on from there, handling
// neither a fact twice nor skipping one.
func TestAConsumerGroupHandsItsPartitionsOverInVirtualTime(t *testing.T) {
	top := buildTopology(t, topology.Spec{
		Streams: []topology.StreamSpec{{Name: "steps-by-order", Bindings: []string{"orders.#"}, Partitions: 2}},
		Consumers: []topology.ConsumerSpec{
			{Name: "projection", Bindings: []string{"orders.#"}, Stream: "steps-by-order", Start: topology.Start{Kind: topology.StartFirst}},
		},
	})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		seen := map[int][]string{} // member -> the facts it handled
		member := func(i int) *runtime.Consumer {
			c, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
				runtime.HandleEach(factStep, func() any { return new(step) }, func(_ context.Context, _ runtime.Delivery, f any) error {
					s := f.(*step)
					mu.Lock()
					defer mu.Unlock()
					seen[i] = append(seen[i], fmt.Sprintf("%s%d", s.OrderID, s.N))
					return nil
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		for n := 1; n <= 2; n++ {
			for _, key := range []string{"a", "b", "c"} {
				warrentest.Publish(b, factStep, step{OrderID: key, N: n})
			}
		}
		ctx, leave := context.WithCancel(b.Context())
		first := make(chan error, 1)
		go func() { first <- member(1).Run(ctx) }()
		b.Idle()
		b.Start("projection", member(2), nil)
		b.Idle()
		leave()
		if err := <-first; err != nil {
			t.Fatalf("the first member stopped with %v", err)
		}
		for _, key := range []string{"a", "b", "c"} {
			warrentest.Publish(b, factStep, step{OrderID: key, N: 3})
		}
		b.Idle()

		mu.Lock()
		defer mu.Unlock()
		got1, got2 := slices.Sorted(slices.Values(seen[1])), slices.Sorted(slices.Values(seen[2]))
		if want := []string{"a1", "a2", "b1", "b2", "c1", "c2"}; !slices.Equal(got1, want) {
			t.Errorf("the first member handled %v, want %v", got1, want)
		}
		if want := []string{"a3", "b3", "c3"}; !slices.Equal(got2, want) {
			t.Errorf("the second member handled %v, want %v", got2, want)
		}
		var settled int64
		for _, off := range b.PartitionOffsets("projection") {
			settled += off + 1
		}
		if settled != 9 {
			t.Errorf("the stored offsets cover %d facts, want 9", settled)
		}
	})
}

// A stream consumer whose connection drops reads on, after it reconnects,
// from the offset it stored: no fact skipped, and none handled twice (what
// was in hand is read again and the guard, or its settled offset, skips
// it).
func TestAStreamConsumerReadsOnAfterItsConnectionDrops(t *testing.T) {
	top := buildTopology(t, topology.Spec{
		Streams:   []topology.StreamSpec{{Name: "steps-log", Bindings: []string{"orders.#"}}},
		Consumers: []topology.ConsumerSpec{{Name: "reader", Bindings: []string{"orders.#"}, Stream: "steps-log", Start: topology.Start{Kind: topology.StartFirst}}},
	})
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		var seen []int
		c, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.HandleEach(factStep, func() any { return new(step) }, func(_ context.Context, _ runtime.Delivery, f any) error {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, f.(*step).N)
				return nil
			}),
		})
		b.Start("reader", c, err)
		for n := 1; n <= 3; n++ {
			warrentest.Publish(b, factStep, step{OrderID: "a", N: n})
		}
		b.Idle()
		b.DropConnections()
		b.Idle()
		for n := 4; n <= 5; n++ {
			warrentest.Publish(b, factStep, step{OrderID: "a", N: n})
		}
		b.Idle()
		mu.Lock()
		defer mu.Unlock()
		if want := []int{1, 2, 3, 4, 5}; !slices.Equal(seen, want) {
			t.Errorf("handled %v, want %v", seen, want)
		}
		if off, ok := b.StoredOffset("reader"); !ok || off != 4 {
			t.Errorf("stored offset %d (found %t), want 4", off, ok)
		}
	})
}
