package prometheus_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
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
	m := warrenprom.New(warrenprom.Options{ConstLabels: prometheus.Labels{"service": "test"}})
	var mu sync.Mutex
	seen := map[int]int{}
	r := runMailer(t, "prom", topology.ConsumerSpec{
		Bindings: []string{"order.*"}, MaxAttempts: 2, Backoff: []time.Duration{20 * time.Millisecond},
	}, m, func(ctx context.Context, d runtime.Delivery, o order) error {
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
	})
	r.publish(t, 1, 3)
	// Settled: 1 and 2 (after its retry) acked, 3 poisoned.
	testenv.Eventually(t, "two facts acked and one poisoned", func() bool {
		c := r.conn.Counts("mailer")
		return c.Get(runtime.Acked) >= 2 && c.Get(runtime.Poisoned) >= 1
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"delivered": 4, "acked": 2, "retried": 1, "poisoned": 1, "duplicate_skipped": 0, "redelivered": 0,
	}
	for event, n := range want {
		name := "warren_consumer_" + event + "_total"
		if got := counterValue(t, r.reg, name); got != n {
			t.Errorf("%s = %v, want %v", name, got, n)
		}
	}
	if n := testutil.CollectAndCount(m, "warren_consumer_handler_duration_seconds"); n != 2 {
		t.Errorf("handler_duration_seconds has %d series, want 2 (ok and error)", n)
	}
	if err := testutil.GatherAndCompare(r.reg, strings.NewReader(`
# HELP warren_consumer_poisoned_total Messages given up on (attempts exhausted or a permanent error), copied to the poison queue.
# TYPE warren_consumer_poisoned_total counter
warren_consumer_poisoned_total{consumer="mailer",routing_key="order.placed",service="test"} 1
`), "warren_consumer_poisoned_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(r.reg); err != nil || len(problems) > 0 {
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

var placed = runtime.Fact{RoutingKey: "order.placed", Version: 1}

// mailer is a consumer on its own vhost of the real broker, counting into
// m, which reg gathers, and a publisher to its events exchange.
type mailer struct {
	reg  *prometheus.Registry
	conn *runtime.Conn
	spec topology.Consumer
	pub  *runtime.Publisher
	stop func() error // ends the consumer, returning what Run returned
}

// runMailer builds consumer spec (named "mailer") on vhost prefix of the
// real broker and runs it, handling order.placed with handle, until the
// test ends or stop is called.
func runMailer(t *testing.T, prefix string, c topology.ConsumerSpec, m *warrenprom.Metrics,
	handle func(context.Context, runtime.Delivery, order) error, opts ...runtime.ConsumerOption) *mailer {
	t.Helper()
	url := testenv.VHost(t, prefix)
	c.Name = "mailer"
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{c}})
	if err != nil {
		t.Fatal(err)
	}
	r := &mailer{reg: prometheus.NewPedanticRegistry()}
	r.reg.MustRegister(m)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if r.conn, err = runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Metrics: m}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.conn.Close() })
	r.spec, _ = top.Consumer("mailer")
	consumer, err := runtime.NewConsumer(r.conn, r.spec, []runtime.Route{runtime.Handle(placed, handle)}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- consumer.Run(ctx) }()
	r.stop = func() error { cancel(); return <-done }
	if r.pub, err = runtime.NewPublisher(r.conn, topology.DefaultExchanges.Events); err != nil {
		t.Fatal(err)
	}
	return r
}

// publish publishes order.placed facts numbered first to last.
func (r *mailer) publish(t *testing.T, first, last int) {
	t.Helper()
	for n := first; n <= last; n++ {
		if _, err := r.pub.Publish(context.Background(), placed, order{N: n}); err != nil {
			t.Fatal(err)
		}
	}
}

// A handler whose database is down pauses its consumer on the real broker;
// once the database answers, a probe resumes it. Both count, the pause's
// length is observed, and the message waited as held rather than retried.
func TestPauseAndResumeOnTheBroker(t *testing.T) {
	m := warrenprom.New(warrenprom.Options{})
	var mu sync.Mutex
	calls := 0
	r := runMailer(t, "prom-pause", topology.ConsumerSpec{
		Bindings: []string{"order.*"}, Backoff: []time.Duration{20 * time.Millisecond},
	}, m, func(ctx context.Context, d runtime.Delivery, o order) error {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls <= 3 {
			return runtime.Unavailable(errors.New("database is restarting"))
		}
		return nil
	}, runtime.WithOutagePolicy(runtime.OutagePolicy{PauseAfter: 2, ProbeMin: 20 * time.Millisecond, ProbeMax: 40 * time.Millisecond}))
	r.publish(t, 1, 1)
	testenv.Eventually(t, "the consumer resumed", func() bool { return counterValue(t, r.reg, "warren_consumer_resumes_total") == 1 })
	testenv.Eventually(t, "the message acked", func() bool { return r.conn.Counts("mailer").Get(runtime.Acked) == 1 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, r.reg, "warren_consumer_pauses_total"); got != 1 {
		t.Errorf("pauses_total = %v, want 1", got)
	}
	if got := counterValue(t, r.reg, "warren_consumer_held_total"); got < 2 {
		t.Errorf("held_total = %v, want the unavailable attempts", got)
	}
	if got := counterValue(t, r.reg, "warren_consumer_retried_total") + counterValue(t, r.reg, "warren_consumer_poisoned_total"); got != 0 {
		t.Errorf("retried+poisoned = %v, want 0: an outage spends no attempt", got)
	}
	if n := testutil.CollectAndCount(m, "warren_consumer_pause_duration_seconds"); n != 1 {
		t.Errorf("pause_duration_seconds has %d series, want 1", n)
	}
}

// The Grafana dashboard reads only warren metrics this package exports
// (besides the rabbitmq_ ones of RabbitMQ's own plugin), so a rename here
// cannot leave it drawing nothing.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("grafana/warren-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	m := warrenprom.New(warrenprom.Options{})
	descs := make(chan *prometheus.Desc, 100)
	m.Describe(descs)
	close(descs)
	exported := map[string]bool{}
	for d := range descs {
		name := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]
		exported[name] = true
	}
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`warren_[a-z_]+`).FindAllString(tg.Expr, -1) {
				if !exported[name] {
					t.Errorf("panel %q reads %s, which the package does not export", p.Title, name)
				}
			}
		}
	}
	if want := []string{"Work-queue depth", "Poison depth", "Consumers per work queue", "Redelivery rate", "Poisoned by cause"}; !slices.Equal(titles, want) {
		t.Errorf("panels %q, want the four figures and the poison causes %q", titles, want)
	}
}

// A batch consumer's batches land in the size and wait histograms.
func TestObserveBatch(t *testing.T) {
	m := warrenprom.New(warrenprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	m.ObserveBatch("loader", 100, 20*time.Millisecond)
	m.ObserveBatch("loader", 7, 200*time.Millisecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{} // name -> count, sum
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			if h := metric.GetHistogram(); h != nil && strings.Contains(f.GetName(), "batch") {
				got[f.GetName()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
			}
		}
	}
	if c := got[warrenprom.Namespace+"_"+warrenprom.Subsystem+"_batch_size"]; c != [2]float64{2, 107} {
		t.Errorf("batch size histogram: count and sum %v, want [2 107] (got %v)", c, got)
	}
	if c := got[warrenprom.Namespace+"_"+warrenprom.Subsystem+"_batch_wait_seconds"]; c[0] != 2 || c[1] < 0.219 || c[1] > 0.221 {
		t.Errorf("batch wait histogram: count and sum %v, want 2 and 0.22", c)
	}
}
