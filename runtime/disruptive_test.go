package runtime

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// The broker force-closes the publishing and the consuming
// connection, five times, while 5,000 facts are published and consumed.
// Afterwards every fact was handled at least once and both sides run again
// without a restart.
func TestDisruptiveForceCloseWhileFactsFlow(t *testing.T) {
	testenv.Disruptive(t)
	admin := testenv.BrokerAdmin(t)
	const total, publishers = 5000, 10
	b := newBroker(t, topology.ConsumerSpec{Name: "torrent", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4, Prefetch: 50})
	name := testenv.Name("warren-forceclose")
	rec := &logRecorder{}
	pubConn := b.dial(Config{ConnectionName: name + "-pub", Logger: slog.New(rec)})
	subConn := b.dial(Config{ConnectionName: name + "-sub", Logger: slog.New(rec)})
	f := itemFact("item.added")

	var handledMu sync.Mutex
	handled := make(map[int]int, total)
	c, err := NewConsumer(subConn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		handledMu.Lock()
		handled[v.N]++
		handledMu.Unlock()
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(pubConn, b.events())

	cuts := []int32{400, 1200, 2000, 2800, 3600}
	// The producers hold back a little past each cut until it is made, so
	// that every cut lands inside the flow however slow rabbitmqctl is.
	var published, allowed atomic.Int32
	allowed.Store(cuts[0] + 300)
	var wg sync.WaitGroup
	for w := range publishers {
		wg.Go(func() {
			for i := w; i < total; i += publishers {
				for published.Load() >= allowed.Load() {
					time.Sleep(5 * time.Millisecond)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				_, err := pub.Publish(ctx, f, item{SKU: "s", N: i})
				cancel()
				if err != nil {
					t.Errorf("publish %d: %v", i, err)
					return
				}
				published.Add(1)
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	for k, at := range cuts {
		pids := connectionPIDs(t, admin, name) // listed ahead: rabbitmqctl is slow
		if len(pids) != 2 {
			t.Fatalf("found %d connections named %s*, want 2", len(pids), name)
		}
		testenv.Eventually(t, "the flow to reach the cut", func() bool { return published.Load() >= at })
		closeConnections(t, admin, pids)
		if p := published.Load(); p >= total {
			t.Fatalf("the cut came after all %d facts were published; it proved nothing", p)
		}
		testenv.Eventually(t, "both sides reconnected", func() bool { return pubConn.connected() && subConn.connected() })
		if k+1 < len(cuts) {
			allowed.Store(cuts[k+1] + 300)
		} else {
			allowed.Store(total)
		}
	}
	wg.Wait()

	testenv.Eventually(t, "every fact handled", func() bool {
		handledMu.Lock()
		defer handledMu.Unlock()
		return len(handled) == total
	})
	if lost := len(rec.values("broker connection lost; reconnecting", "url")); lost < 10 {
		t.Errorf("%d connection losses logged, want at least 10 (5 cuts x 2 connections)", lost)
	}
	handledMu.Lock()
	dups := 0
	for _, n := range handled {
		dups += n - 1
	}
	handledMu.Unlock()
	t.Logf("%s, forced closes: sent %d, confirmed %d, handled %d distinct (%d duplicates), lost 0; each connection back %v after its close", brokerOf(transport.Network{Connection: b.raw}), total, published.Load(), len(handled), dups, rec.reconnectTimes())

	// Both sides are running again: one more fact goes all the way through.
	mustPublish(t, pub, f, item{SKU: "after", N: total})
	testenv.Eventually(t, "a fact published after the cuts handled", func() bool {
		handledMu.Lock()
		defer handledMu.Unlock()
		return handled[total] > 0
	})
}

// connectionPIDs returns the broker's ids of the connections whose
// connection_name starts with prefix.
func connectionPIDs(t testing.TB, admin *testenv.Admin, prefix string) []string {
	t.Helper()
	out := admin.Run(t, "list_connections", "pid", "client_properties", "--quiet", "--no-table-headers")
	var pids []string
	for _, line := range strings.Split(out, "\n") {
		pid, props, ok := strings.Cut(line, "\t")
		if ok && strings.Contains(props, `{"connection_name","`+prefix) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// closeConnections makes the broker close the given connections (with
// connection.close, CONNECTION_FORCED), all at once.
func closeConnections(t testing.TB, admin *testenv.Admin, pids []string) {
	t.Helper()
	var wg sync.WaitGroup
	for _, pid := range pids {
		wg.Go(func() {
			if _, err := admin.Try(nil, "close_connection", pid, "warren test: forced close"); err != nil {
				t.Errorf("close connection %s: %v", pid, err)
			}
		})
	}
	wg.Wait()
}

// reconnectTimes pairs each logged connection loss with the next logged
// connect that no earlier loss claimed, and returns the time between them.
func (r *logRecorder) reconnectTimes() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	used := map[int]bool{}
	for i, rec := range r.records {
		if rec.Message != "broker connection lost; reconnecting" {
			continue
		}
		for j := i + 1; j < len(r.records); j++ {
			if r.records[j].Message == "connected to broker" && !used[j] {
				used[j] = true
				out = append(out, r.records[j].Time.Sub(rec.Time).Round(time.Millisecond))
				break
			}
		}
	}
	return out
}

// The broker force-closes a stream consumer's connection three times, each
// time while a handler is in the middle of a fact, which it finishes only
// after the close. The consumer lets it finish, counts it settled (its ack
// cannot land, but a stream's position is the stored offset), stores the
// offset and only then reads on from it: every fact is handled once, in
// stream order, with no idempotency guard.
func TestDisruptiveStreamConsumerConnectionCut(t *testing.T) {
	eachReadMode(t, testDisruptiveStreamConsumerConnectionCut)
}

func testDisruptiveStreamConsumerConnectionCut(t *testing.T, offsets OffsetDialer) {
	testenv.Disruptive(t)
	admin := testenv.BrokerAdmin(t)
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "cut-reader", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 20, Start: topology.Start{Kind: topology.StartFirst}})
	const total = 300
	cuts := map[int]bool{50: true, 150: true, 250: true}
	f := itemFact("item.added")
	pub, _ := NewPublisher(b.dial(Config{}), b.events())
	for n := range total {
		mustPublish(t, pub, f, item{SKU: "s", N: n})
	}

	name := testenv.Name("warren-streamcut")
	rec := &logRecorder{}
	conn := b.dial(Config{ConnectionName: name, Logger: slog.New(rec), StreamOffsets: offsets})
	var mu sync.Mutex
	var handled []int
	hit, release := make(chan int), make(chan struct{})
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if cuts[v.N] && !d.Redelivered {
			mu.Lock()
			again := slices.Contains(handled, v.N)
			mu.Unlock()
			if !again {
				hit <- v.N
				<-release // the connection is closed meanwhile
			}
		}
		mu.Lock()
		handled = append(handled, v.N)
		mu.Unlock()
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	for range cuts {
		n := <-hit
		pids := connectionPIDs(t, admin, name)
		if len(pids) != 1 {
			t.Fatalf("found %d connections named %s*, want 1", len(pids), name)
		}
		lost := len(rec.values("broker connection lost; reconnecting", "url"))
		lostReading := len(rec.values("lost the stream's subscription; subscribing again", "stream"))
		closeConnections(t, admin, pids)
		if offsets == nil {
			// Read over the stream protocol, on a connection of its own:
			// that one is cut as well, abruptly.
			if n := killStreamConnections(t, admin, b.consumer(0).Name); n != 1 {
				t.Fatalf("killed %d stream connections named %s, want 1", n, b.consumer(0).Name)
			}
			testenv.Eventually(t, "the stream reading's loss noticed", func() bool {
				return len(rec.values("lost the stream's subscription; subscribing again", "stream")) > lostReading
			})
			if whys := rec.values("lost the stream's subscription; subscribing again", "err"); !strings.Contains(whys[len(whys)-1], "the subscription to stream") {
				t.Fatalf("the stream reading's loss was logged with err %q, want why it ended", whys[len(whys)-1])
			}
		}
		testenv.Eventually(t, "the connection's loss noticed", func() bool {
			return len(rec.values("broker connection lost; reconnecting", "url")) > lost
		})
		t.Logf("connection closed while fact %d was in hand", n)
		release <- struct{}{}
	}
	testenv.Eventually(t, "every fact handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) >= total
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, n := range handled {
		if n != i {
			t.Fatalf("handled %v (%d in all); want 0..%d, each once, in stream order: fact %d at position %d", handled[max(0, i-3):min(len(handled), i+4)], len(handled), total-1, n, i)
		}
	}
	if len(handled) != total {
		t.Fatalf("handled %d facts, want %d: each once", len(handled), total)
	}
}
