package warrentest_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// onBothClocks runs f on a bus of top in virtual time (Run) and in real
// time (New), as two subtests.
func onBothClocks(t *testing.T, top topology.Topology, f func(t *testing.T, b *warrentest.Bus)) {
	t.Run("Run", func(t *testing.T) { warrentest.Run(t, top, f) })
	t.Run("New", func(t *testing.T) { f(t, warrentest.New(t, top)) })
}

// steps records the steps a handler was given, in order.
type steps struct {
	mu   sync.Mutex
	seen []string
}

func (s *steps) route() runtime.Route {
	return runtime.HandleEach(factStep, func() any { return new(step) }, func(_ context.Context, _ runtime.Delivery, f any) error {
		st := f.(*step)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.seen = append(s.seen, st.OrderID+string(rune('0'+st.N)))
		return nil
	})
}

func (s *steps) handled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// A fact published right after Start reaches a stream consumer whose
// start is "next" (the default): Start returns once the consumer has fixed
// that start at the stream's end and reads from there, not at some moment
// after the fact was written. So for each way a stream is read on the bus:
// over the stream protocol, over AMQP, and as a member of a super stream's
// consumer group.
func TestAFactPublishedRightAfterStartReachesAStreamConsumerReadingFromNext(t *testing.T) {
	top := buildTopology(t, topology.Spec{
		Streams: []topology.StreamSpec{
			{Name: "ledger-log", Bindings: []string{"orders.#"}},
			{Name: "ledger-by-order", Bindings: []string{"orders.#"}, Partitions: 2},
		},
		Consumers: []topology.ConsumerSpec{
			{Name: "ledger-next", Bindings: []string{"orders.#"}, Stream: "ledger-log"},
			{Name: "ledger-group", Bindings: []string{"orders.#"}, Stream: "ledger-by-order"},
		},
	})
	for _, tc := range []struct {
		name     string
		consumer string
		opts     []runtime.ConsumerOption
	}{
		{"StreamProtocol", "ledger-next", nil},
		{"OverAMQP", "ledger-next", []runtime.ConsumerOption{runtime.WithStreamReadOverAMQP()}},
		{"ConsumerGroup", "ledger-group", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onBothClocks(t, top, func(t *testing.T, b *warrentest.Bus) {
				warrentest.Register[step](b, factStep)
				// Written before the start: not the consumer's to read.
				for n := 1; n <= 3; n++ {
					warrentest.Publish(b, factStep, step{OrderID: "a", N: n})
				}
				spec, _ := b.Topology().Consumer(tc.consumer)
				s := &steps{}
				c, err := runtime.NewConsumer(b.Conn(), spec, []runtime.Route{s.route()}, tc.opts...)
				b.Start(tc.consumer, c, err)
				warrentest.Publish(b, factStep, step{OrderID: "a", N: 4})
				b.Idle()
				if got, want := s.handled(), []string{"a4"}; !slices.Equal(got, want) {
					t.Errorf("%s handled %v, want %v: the fact published right after Start", tc.consumer, got, want)
				}
			})
		})
	}
}
