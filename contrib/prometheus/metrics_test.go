package prometheus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"

	warrenprom "github.com/warrenbus/warren/contrib/prometheus"
)

type order struct {
	N int `json:"n"`
}

// A consumer on the real broker acks one fact, retries another once and
// poisons a third; the registry then holds exactly those counts under
// the consumer's and the routing key's labels.
func TestCountsOnTheBroker(t *testing.T) {
	url := testenv.VHost(t, "prom")
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{
		Name: "mailer", Bindings: []string{"order.*"}, MaxAttempts: 2,
		Backoff: []time.Duration{20 * time.Millisecond},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	m := warrenprom.New(warrenprom.Options{ConstLabels: prometheus.Labels{"service": "test"}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	placed := runtime.Fact{RoutingKey: "order.placed", Version: 1}
	var mu sync.Mutex
	seen := map[int]int{}
	spec, _ := top.Consumer("mailer")
	consumer, err := runtime.NewConsumer(conn, spec, []runtime.Route{
		runtime.Handle(placed, func(ctx context.Context, d runtime.Delivery, o order) error {
			mu.Lock()
			seen[o.N]++
			attempt := seen[o.N]
			mu.Unlock()
			switch {
			case o.N == 2 && attempt == 1:
				return errors.New("mail server busy")
			case o.N == 3:
				return runtime.Permanent(errors.New("no such address"))
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- consumer.Run(ctx) }()

	pub, err := runtime.NewPublisher(conn, topology.DefaultExchanges.Events)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		if _, err := pub.Publish(ctx, placed, order{N: n}); err != nil {
			t.Fatal(err)
		}
	}
	// Settled: 1 and 2 (after its retry) acked, 3 poisoned.
	for c := conn.Counts("mailer"); c.Get(runtime.Acked) < 2 || c.Get(runtime.Poisoned) < 1; c = conn.Counts("mailer") {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	want := map[string]float64{
		"delivered": 4, "acked": 2, "retried": 1, "poisoned": 1, "duplicate_skipped": 0, "redelivered": 0,
	}
	for event, n := range want {
		name := "warren_consumer_" + event + "_total"
		if got := counterValue(t, reg, name); got != n {
			t.Errorf("%s = %v, want %v", name, got, n)
		}
	}
	if n := testutil.CollectAndCount(m, "warren_consumer_handler_duration_seconds"); n != 2 {
		t.Errorf("handler_duration_seconds has %d series, want 2 (ok and error)", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP warren_consumer_poisoned_total Messages given up on (attempts exhausted or a permanent error), copied to the poison queue.
# TYPE warren_consumer_poisoned_total counter
warren_consumer_poisoned_total{consumer="mailer",routing_key="order.placed",service="test"} 1
`), "warren_consumer_poisoned_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric names break Prometheus conventions: %v %v", problems, err)
	}
}

// counterValue sums a counter's series in reg; a counter that has no
// series yet is 0.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			sum += s.GetCounter().GetValue()
		}
	}
	return sum
}
