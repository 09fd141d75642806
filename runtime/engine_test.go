package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Every kind of consumer reconnects with the engine's backoff: the wait
// grows while channels keep failing fast, and starts again from the
// shortest once a channel ran healthy for a while.
func TestReconnectBackoffStartsAgainAfterAHealthyChannel(t *testing.T) {
	for _, tc := range []struct {
		round int
		ran   time.Duration
		want  int
	}{
		{0, time.Millisecond, 0},
		{5, time.Second, 5},
		{5, healthyAfter, 5},
		{5, healthyAfter + time.Millisecond, 0},
		{40, time.Hour, 0},
	} {
		if got := reconnectRound(tc.round, tc.ran); got != tc.want {
			t.Errorf("reconnectRound(%d, %s) = %d, want %d", tc.round, tc.ran, got, tc.want)
		}
	}
}

// kindsTopology is a topology with one consumer of each kind, built
// without a broker.
func kindsTopology(t *testing.T) (plain, ordered topology.Consumer, responder topology.Responder) {
	t.Helper()
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: "k.events", Retry: "k.retry", Dead: "k.dead", Requests: "k.requests"},
		Consumers: []topology.ConsumerSpec{
			{Name: "plain", Bindings: []string{"item.#"}, Backoff: testLadder},
			{Name: "ordered", Bindings: []string{"item.#"}, Backoff: testLadder, Ordered: true, Shards: 2},
		},
		Responders: []topology.ResponderSpec{{Name: "pricing", Requests: []string{"pricing.quote"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return top.Consumers[0], top.Consumers[1], top.Responders[0]
}

// Every kind checks its options the same way, and refuses with an error
// the options that do not apply to it rather than ignore them.
func TestEveryKindChecksItsOptions(t *testing.T) {
	plain, ordered, responder := kindsTopology(t)
	conn, err := Dial(context.Background(), Config{URLs: []string{testenv.AMQPURL(t)}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	newKind := map[string]func(...ConsumerOption) error{
		"plain consumer": func(o ...ConsumerOption) error {
			_, err := NewConsumer(conn, plain, []Route{Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })}, o...)
			return err
		},
		"ordered consumer": func(o ...ConsumerOption) error {
			_, err := NewConsumer(conn, ordered, []Route{Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })}, o...)
			return err
		},
		"responder": func(o ...ConsumerOption) error {
			_, err := NewResponder(conn, responder, []Answer{Respond(quoteRequest("pricing.quote"), func(context.Context, Delivery, quote) (quoteReply, error) { return quoteReply{}, nil })}, o...)
			return err
		},
	}
	for name, build := range newKind {
		for _, tc := range []struct {
			opt  ConsumerOption
			want string
		}{
			{WithMaxBodySize(0), "WithMaxBodySize(0): expected 1 to"},
			{WithMaxBodySize(MaxBodySizeCeiling + 1), "WithMaxBodySize(134217729): expected 1 to"},
			{WithPrefetch(-1), "WithPrefetch(-1): expected 1 or more"},
			{WithConcurrency(0), "WithConcurrency(0): expected 1 or more"},
			{WithShutdownTimeout(0), "WithShutdownTimeout(0s): expected a positive duration"},
		} {
			if err := build(tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
			}
		}
		err := build(WithOutagePolicy(OutagePolicy{PauseAfter: 3}), WithMaxBodySize(1<<10), WithPrefetch(4), WithConcurrency(2), WithShutdownTimeout(time.Second))
		refused := err != nil && strings.Contains(err.Error(), "WithOutagePolicy does not apply")
		if want := name == "responder"; refused != want || (!want && err != nil) {
			t.Errorf("%s with WithOutagePolicy and options in range: %v (refused %v, want %v)", name, err, refused, want)
		}
	}
}

// kindRunner is one kind of consumer under test, started on the broker,
// whose handler blocks until release closes.
type kindRunner struct {
	name    string     // its name in Conn.Counts
	depth   func() int // deliveries ready in its queue
	run     func(ctx context.Context) error
	send    func(n int)     // puts n deliveries in its queue
	started <-chan struct{} // receives when a handler starts
	release chan struct{}
}

func plainRunner(t *testing.T) (*Conn, kindRunner) {
	b := newBroker(t, topology.ConsumerSpec{Name: "giveback", Bindings: []string{"item.#"}, Backoff: testLadder, Prefetch: 10, Concurrency: 1})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	started, release := make(chan struct{}, 10), make(chan struct{})
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		started <- struct{}{}
		<-release
		return nil
	})}, WithShutdownTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := NewPublisher(conn, b.events())
	return conn, kindRunner{name: spec.Name, depth: func() int { return b.depth(spec.Queue) }, run: c.Run, started: started, release: release,
		send: func(n int) {
			for i := range n {
				mustPublish(t, pub, f, item{SKU: "s", N: i})
			}
		}}
}

func responderRunner(t *testing.T) (*Conn, kindRunner) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	req := quoteRequest(b.key)
	started, release := make(chan struct{}, 10), make(chan struct{})
	r, err := NewResponder(conn, b.responder, []Answer{Respond(req, func(context.Context, Delivery, quote) (quoteReply, error) {
		started <- struct{}{}
		<-release
		return quoteReply{N: 1}, nil
	})}, WithConcurrency(1), WithPrefetch(10), WithShutdownTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	requester := b.requester(t, conn)
	callers, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return conn, kindRunner{name: b.responder.Name, depth: func() int { return b.depth(b.responder.Queue) }, run: r.Run, started: started, release: release,
		send: func(n int) {
			for i := range n {
				go func() { _, _ = Call[quoteReply](callers, requester, req, quote{SKU: "s", N: i}) }()
			}
		}}
}

// At shutdown, every kind that gives back (plain consumers and
// responders) hands the deliveries no handler started back to the queue at
// once, while a busy handler finishes; none is lost, and Run returns nil.
func TestEveryKindGivesBackUnstartedDeliveriesAtShutdown(t *testing.T) {
	for name, start := range map[string]func(*testing.T) (*Conn, kindRunner){"consumer": plainRunner, "responder": responderRunner} {
		t.Run(name, func(t *testing.T) {
			conn, k := start(t)
			k.send(4)
			testenv.Eventually(t, "the four deliveries in the queue", func() bool { return k.depth() == 4 })
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan error, 1)
			go func() { stopped <- k.run(ctx) }()
			receive(t, k.started)
			testenv.Eventually(t, "the other three in the prefetch buffer", func() bool { return k.depth() == 0 })
			cancel()
			// The busy handler still holds the only worker: the three
			// prefetched deliveries go back without waiting for it.
			testenv.Eventually(t, "the three unstarted deliveries given back", func() bool { return conn.Counts(k.name).Get(Returned) == 3 })
			select {
			case err := <-stopped:
				t.Fatalf("Run returned (%v) before its busy handler finished", err)
			default:
			}
			close(k.release)
			if err := receive(t, stopped); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := conn.Counts(k.name).Get(Acked); got != 1 {
				t.Errorf("%d acked, want the one that was started", got)
			}
		})
	}
}

// A responder reports to Metrics and Conn.Counts as consumers do: each
// request delivered, how it ended, and each handler call.
func TestResponderReportsMetrics(t *testing.T) {
	b := newRequestBroker(t)
	m := &countingMetrics{counts: map[Event]int{}}
	conn := b.dial(Config{Metrics: m})
	req := quoteRequest(b.key)
	var calls atomic.Int64
	b.respond(t, conn, req, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
		calls.Add(1)
		if q.N < 0 {
			return quoteReply{}, Permanent(errors.New("no quote for a negative amount"))
		}
		return quoteReply{N: q.N}, nil
	})
	r := b.requester(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []int{1, 2, -1} {
		_, err := Call[quoteReply](ctx, r, req, quote{SKU: "s", N: n})
		if (err != nil) != (n < 0) {
			t.Fatalf("call %d: %v", n, err)
		}
	}
	testenv.Eventually(t, "the error reply acked and counted", func() bool { return conn.Counts(b.responder.Name).Get(ErrorReplied) == 1 })
	counts := conn.Counts(b.responder.Name)
	if counts.Get(Delivered) != 3 || counts.Get(Acked) != 2 {
		t.Errorf("Conn.Counts: delivered %d, acked %d; want 3 and 2", counts.Get(Delivered), counts.Get(Acked))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts[Delivered] != 3 || m.counts[Acked] != 2 || m.counts[ErrorReplied] != 1 || m.observed != 3 || m.failed != 1 {
		t.Errorf("Metrics: %v, %d handler calls observed (%d failed); want 3 delivered, 2 acked, 1 error_replied, 3 observed, 1 failed",
			m.counts, m.observed, m.failed)
	}
}

// RunAll runs consumers of every kind together, and HealthHandler reports
// each by its name: a responder is ready once it runs, as a consumer is.
func TestRunAllAndHealthTakeEveryKind(t *testing.T) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	req := quoteRequest(b.key)
	r, err := NewResponder(conn, b.responder, []Answer{Respond(req, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
		return quoteReply{N: q.N + 1}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	health := HealthHandler(conn, r)
	ready := func() (int, healthReport) {
		rec := httptest.NewRecorder()
		health.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var rep healthReport
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatalf("/readyz: %v: %s", err, rec.Body)
		}
		return rec.Code, rep
	}
	if code, rep := ready(); code != http.StatusServiceUnavailable || rep.Consumers[b.responder.Name].Running == nil || *rep.Consumers[b.responder.Name].Running {
		t.Errorf("/readyz before Run: %d %+v, want 503 with the responder not running", code, rep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunAll(ctx, r) }()
	testenv.Eventually(t, "ready", func() bool { code, _ := ready(); return code == http.StatusOK })
	callCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	got, err := Call[quoteReply](callCtx, b.requester(t, conn), req, quote{SKU: "s", N: 41})
	if err != nil || got.N != 42 {
		t.Fatalf("call under RunAll: %+v, %v", got, err)
	}
	cancel()
	if err := receive(t, done); err != nil {
		t.Errorf("RunAll after cancel: %v", err)
	}
	var none *Responder
	if err := RunAll(context.Background(), r, none); err == nil || !strings.Contains(err.Error(), "consumer 1 is nil") {
		t.Errorf("RunAll with a nil responder: %v", err)
	}
}
