package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// One goroutine keeps hundreds of publishes in flight: every PublishAsync
// returns before any confirm is waited for, and each Wait then reports
// its own confirm.
func TestPublishAsyncPipelinesFromOneGoroutine(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "async", Bindings: []string{"item.#"}})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	f := itemFact("item.added")
	ctx := context.Background()
	const n = 500
	pending := make([]*Pending, 0, n)
	ids := map[string]bool{}
	for i := range n {
		h, err := pub.PublishAsync(ctx, f, item{SKU: "a", N: i})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, h)
		ids[h.ID()] = true
	}
	for _, h := range pending {
		if err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids) != n || b.depth(b.consumer(0).Queue) != n {
		t.Errorf("%d distinct ids, %d in the queue; want %d of each", len(ids), b.depth(b.consumer(0).Queue), n)
	}
	// Errors keep their meaning: an invalid payload is refused before
	// anything is sent, an unroutable fact fails in Wait.
	if _, err := pub.PublishAsync(ctx, f, item{}); err == nil || !strings.Contains(err.Error(), "does not match its schema") {
		t.Errorf("PublishAsync of an invalid payload: %v", err)
	}
	h, err := pub.PublishAsync(ctx, itemFact("nobody.listens"), item{SKU: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx); !errors.Is(err, ErrUnroutable) {
		t.Errorf("Wait of an unroutable fact: %v, want ErrUnroutable", err)
	}
}

// Publishes in flight when the connection drops are published again by
// Wait on the next connection: every one is confirmed, none is lost.
func TestPublishAsyncSurvivesAConnectionCut(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "async-cut", Bindings: []string{"item.#"}, QueueType: topology.Classic})
	p := newProxy(t, b.url, nil)
	conn := b.dial(Config{URLs: []string{p.url(b.url, "amqp")}})
	pub, _ := NewPublisher(conn, b.events())
	f := itemFact("item.added")
	ctx := context.Background()
	var pending []*Pending
	for i := range 300 {
		if i == 150 {
			p.cut()
		}
		h, err := pub.PublishAsync(ctx, f, item{SKU: "a", N: i})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, h)
	}
	ids := map[string]bool{}
	for _, h := range pending {
		if err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		ids[h.ID()] = true
	}
	seen := map[string]bool{}
	for _, id := range b.drainIDs(b.consumer(0).Queue) {
		seen[id] = true
	}
	for id := range ids {
		if !seen[id] {
			t.Errorf("confirmed fact %s is not in the queue", id)
		}
	}
}

// RunAll runs consumers until ctx ends and shuts them all down; when one
// stops for good, it stops the others and returns that error.
func TestRunAll(t *testing.T) {
	b := newBroker(t,
		topology.ConsumerSpec{Name: "all-a", Bindings: []string{"item.#"}},
		topology.ConsumerSpec{Name: "all-b", Bindings: []string{"item.#"}})
	conn := b.dial(Config{})
	f := itemFact("item.added")
	var handled atomic.Int32
	route := Handle(f, func(context.Context, Delivery, item) error { handled.Add(1); return nil })
	a, _ := NewConsumer(conn, b.consumer(0), []Route{route})
	c, _ := NewConsumer(conn, b.consumer(1), []Route{route})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunAll(ctx, a, c) }()
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "x"})
	testenv.Eventually(t, "both consumers handled the fact", func() bool { return handled.Load() == 2 })
	if !a.Health().Running || !c.Health().Running {
		t.Error("Health does not report the consumers running")
	}
	cancel()
	if err := receive(t, done); err != nil {
		t.Errorf("RunAll after cancel: %v", err)
	}
	if a.Health().Running || c.Health().Running {
		t.Error("a consumer still runs after RunAll returned")
	}

	// A consumer of a queue that does not exist stops for good; the other
	// is shut down with it.
	missing := b.consumer(1)
	missing.Queue = testenv.Name("missing")
	bad, _ := NewConsumer(conn, missing, []Route{route})
	go func() { done <- RunAll(context.Background(), a, bad) }()
	if err := receive(t, done); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("RunAll with a missing queue: %v", err)
	}
	if a.Health().Running {
		t.Error("RunAll returned while the other consumer still runs")
	}
}

// The health handler: alive while the Conn is open, ready only while it
// is connected and the consumers run.
func TestHealthHandler(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "health", Bindings: []string{"item.#"}})
	p := newProxy(t, b.url, nil)
	conn := b.dial(Config{URLs: []string{p.url(b.url, "amqp")}})
	c, _ := NewConsumer(conn, b.consumer(0), []Route{Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })})
	h := HealthHandler(conn, c)
	probe := func(path string) (int, healthReport) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var r healthReport
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.Body)
		}
		return rec.Code, r
	}
	if code, r := probe("/readyz"); code != http.StatusServiceUnavailable || r.Status != "unavailable" {
		t.Errorf("/readyz before Run: %d %+v, want 503", code, r)
	}
	run(t, c)
	testenv.Eventually(t, "ready", func() bool { code, _ := probe("/readyz"); return code == http.StatusOK })
	p.setDown(true)
	testenv.Eventually(t, "not ready while the broker is unreachable", func() bool {
		code, r := probe("/readyz")
		return code == http.StatusServiceUnavailable && !r.Connection.Connected && r.Connection.LastError != ""
	})
	if code, _ := probe("/livez"); code != http.StatusOK {
		t.Errorf("/livez while reconnecting: %d, want 200", code)
	}
	p.setDown(false)
	testenv.Eventually(t, "ready again", func() bool { code, _ := probe("/readyz"); return code == http.StatusOK })
	_ = conn.Close()
	if code, _ := probe("/livez"); code != http.StatusServiceUnavailable {
		t.Errorf("/livez after Close: %d, want 503", code)
	}
}

// drainIDs takes every ready message of a queue and returns their ids.
func (b *broker) drainIDs(queue string) []string {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	var ids []string
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			b.t.Fatal(err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, d.MessageId)
	}
}

// A Conn closed under a running consumer ends its Run with ErrClosed, and
// says nothing of a lost channel to resume or a deleted queue: nothing
// was lost but the Conn, which its owner closed.
func TestRunEndsWhenItsConnCloses(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "closing", Bindings: []string{"item.#"}, Backoff: testLadder})
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	testenv.Eventually(t, "the consumer attached", func() bool { return b.consumers(b.consumer(0).Queue) == 1 })
	_ = conn.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
	if text := rec.text(); strings.Contains(text, "resuming") || strings.Contains(text, "deleted") {
		t.Errorf("the consumer told of a lost channel or a deleted queue on Close:\n%s", text)
	}
}
