package runtime

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// flow publishes facts numbered 0..total-1 from one goroutine, keeping a
// window of them in flight with PublishAsync, and records which were
// confirmed and handled, and when each side first made progress after a
// mark (the broker being back).
type flow struct {
	mu           sync.Mutex
	handled      map[int]int
	confirmed    map[int]bool
	mark         time.Time
	firstConfirm time.Time // the first confirm after mark
	firstHandled time.Time // the first fact handled after mark
	published    atomic.Int32
}

func newFlow() *flow { return &flow{handled: map[int]int{}, confirmed: map[int]bool{}} }

func (fl *flow) handle(_ context.Context, _ Delivery, v item) error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.handled[v.N]++
	if !fl.mark.IsZero() && fl.firstHandled.IsZero() {
		fl.firstHandled = time.Now()
	}
	return nil
}

func (fl *flow) confirm(n int) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.confirmed[n] = true
	if !fl.mark.IsZero() && fl.firstConfirm.IsZero() {
		fl.firstConfirm = time.Now()
	}
	fl.published.Add(1)
}

// setMark records the moment the broker is back.
func (fl *flow) setMark(at time.Time) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.mark = at
}

// publish runs the producer: window facts in flight at a time, a pause
// between windows so that a fault lands inside the flow.
func (fl *flow) publish(t testing.TB, pub *Publisher, f Fact, total, window int, pace time.Duration) {
	ctx := context.Background()
	for start := 0; start < total; start += window {
		var pending []*Pending
		for i := start; i < min(start+window, total); i++ {
			h, err := pub.PublishAsync(ctx, f, item{SKU: "s", N: i})
			if err != nil {
				t.Errorf("publish %d: %v", i, err)
				return
			}
			pending = append(pending, h)
		}
		for k, h := range pending {
			if err := h.Wait(ctx); err != nil {
				t.Errorf("publish %d: %v", start+k, err)
				return
			}
			fl.confirm(start + k)
		}
		time.Sleep(pace)
	}
}

// result checks that every confirmed fact was handled at least once and
// returns the figures of the run.
func (fl *flow) result(t testing.TB) (confirmed, handled, duplicates int, pubResume, subResume time.Duration) {
	testenv.Eventually(t, "both sides to make progress after the fault", func() bool {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		return !fl.firstConfirm.IsZero() && !fl.firstHandled.IsZero()
	})
	testenv.Eventually(t, "every confirmed fact handled", func() bool {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		for n := range fl.confirmed {
			if fl.handled[n] == 0 {
				return false
			}
		}
		return true
	})
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for _, k := range fl.handled {
		duplicates += k - 1
	}
	return len(fl.confirmed), len(fl.handled), duplicates, fl.firstConfirm.Sub(fl.mark), fl.firstHandled.Sub(fl.mark)
}

// faultConn dials the fault node with the runtime's default reconnect
// policy: what the test measures is what services get.
func faultConn(t testing.TB, b *broker, name string, rec *logRecorder) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, Config{URLs: []string{b.url}, Topology: &b.top, ConnectionName: name, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The broker is restarted (rabbitmqctl stop_app, start_app on the test's
// own node) while 10,000 facts are published and consumed. Every
// confirmed fact is handled at least once, both sides resume unattended,
// and while the broker is down they knock at a bounded, jittered rate.
// The figures (duplicates, time to resume) are logged for
// docs/RELIABILITY.md.
func TestDisruptiveBrokerRestartMidStream(t *testing.T) {
	testenv.Disruptive(t)
	node := startRabbitNode(t)
	const total = 10000
	b := newBrokerAt(t, node.url(), topology.ConsumerSpec{Name: "restart", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4, Prefetch: 50})
	rec := &logRecorder{}
	pubConn := faultConn(t, b, "warren-restart-pub", rec)
	subConn := faultConn(t, b, "warren-restart-sub", rec)
	fl := newFlow()
	f := itemFact("item.added")
	c, err := NewConsumer(subConn, b.consumer(0), []Route{Handle(f, fl.handle)})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(pubConn, b.events())
	done := make(chan struct{})
	go func() { defer close(done); fl.publish(t, pub, f, total, 100, 20*time.Millisecond) }()

	testenv.Eventually(t, "the flow to reach the restart", func() bool { return fl.published.Load() >= 3000 })
	node.ctl("stop_app")
	stoppedAt := time.Now()
	failedBefore := len(rec.values("broker connect failed", "url"))
	time.Sleep(5 * time.Second) // down for a while: long enough for the old backoff to grow to seconds
	backAt := make(chan time.Time, 1)
	go func() {
		// The moment the listener accepts again, which start_app reports
		// only once the whole boot is done.
		for !node.accepting() {
			time.Sleep(5 * time.Millisecond)
		}
		backAt <- time.Now()
	}()
	node.ctl("start_app")
	back := <-backAt
	fl.setMark(back)
	attempts := len(rec.values("broker connect failed", "url")) - failedBefore
	<-done
	if p := fl.published.Load(); p != total {
		t.Fatalf("%d of %d facts confirmed", p, total)
	}
	confirmed, handled, dups, pubResume, subResume := fl.result(t)
	down := back.Sub(stoppedAt)
	t.Logf("restart: sent %d, confirmed %d, handled %d distinct (%d duplicates), lost 0; broker down %.1fs; resumed after the broker was back: publisher %dms, consumer %dms; %d connect attempts by 2 connections while down (%.1f/s each)",
		total, confirmed, handled, dups, down.Seconds(), pubResume.Milliseconds(), subResume.Milliseconds(), attempts, float64(attempts)/2/down.Seconds())
	// Jittered backoff capped at ReconnectMax (1s): at most about two
	// attempts a second per connection, however long the broker is down.
	if rate := float64(attempts) / 2 / down.Seconds(); rate > 4 {
		t.Errorf("%.1f connect attempts a second per connection while the broker was down: hammering", rate)
	}
	if confirmed != total || handled != total {
		t.Errorf("confirmed %d, handled %d distinct; want %d each", confirmed, handled, total)
	}
}

// A resource alarm on the test's own node (vm_memory_high_watermark set
// tiny): publishes wait instead of failing or hanging without bound, a
// publish whose ctx ends first says so, health reports the connection
// blocked, and once the alarm clears every waiting publish completes.
func TestDisruptiveResourceAlarmBlocksPublishes(t *testing.T) {
	testenv.Disruptive(t)
	node := startRabbitNode(t)
	b := newBrokerAt(t, node.url(), topology.ConsumerSpec{Name: "alarm", Bindings: []string{"item.#"}})
	rec := &logRecorder{}
	conn := faultConn(t, b, "warren-alarm", rec)
	pub, _ := NewPublisher(conn, b.events())
	f := itemFact("item.added")
	mustPublish(t, pub, f, item{SKU: "before"})

	node.ctl("set_vm_memory_high_watermark", "0.0000001")
	t.Cleanup(func() { _, _ = node.run("set_vm_memory_high_watermark", "0.4") })
	// The broker blocks a connection when it next publishes.
	var completed atomic.Int32
	var wg sync.WaitGroup
	const waiting = 5
	for i := range waiting {
		wg.Go(func() {
			if _, err := pub.Publish(context.Background(), f, item{SKU: "during", N: i}); err != nil {
				t.Errorf("publish during the alarm: %v", err)
				return
			}
			completed.Add(1)
		})
	}
	testenv.Eventually(t, "health to report the connection blocked", func() bool { return conn.Health().Blocked })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := pub.Publish(ctx, f, item{SKU: "bounded"})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "resource alarm") {
		t.Errorf("publish with a short ctx during the alarm: %v, want an error saying it waited for the alarm", err)
	}
	if n := completed.Load(); n != 0 {
		t.Errorf("%d publishes completed during the alarm", n)
	}
	if h := conn.Health(); !h.Connected || h.BlockedReason == "" {
		t.Errorf("health during the alarm: %+v", h)
	}

	node.ctl("set_vm_memory_high_watermark", "0.4")
	cleared := time.Now()
	wg.Wait()
	t.Logf("resource alarm: %d publishes waited through the alarm and were confirmed %dms after it cleared; 1 publish with a 300ms ctx ended with: %v",
		completed.Load(), time.Since(cleared).Milliseconds(), err)
	if n := completed.Load(); n != waiting {
		t.Errorf("%d of %d waiting publishes completed after the alarm", n, waiting)
	}
	testenv.Eventually(t, "health to report the connection unblocked", func() bool { return !conn.Health().Blocked })
	if d := b.depth(b.consumer(0).Queue); d != waiting+1 {
		t.Errorf("%d facts in the queue, want %d", d, waiting+1)
	}
}
