package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// Facts with an ordering key are numbered per key in the business
// transactions that write them, and relayed with that number and one
// source for the table: three transactions writing key k give it 1, 2, 3,
// while key j counts on its own.
func TestOutboxNumbersFactsPerOrderingKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		f := runtime.Fact{RoutingKey: "order.placed", Version: 1, OrderingKey: "/order_id"}
		s.write(f, map[string]string{"order_id": "k"})
		s.write(f, map[string]string{"order_id": "j"}, map[string]string{"order_id": "k"})
		s.write(f, map[string]string{"order_id": "k"})
		s.write(runtime.Fact{RoutingKey: "order.noted"}, map[string]string{"note": "no key"})
		rec := b.receive()
		r := s.relay(b.pub, outbox.RelayConfig{Facts: []runtime.Fact{f}})
		if _, err := r.RelayOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var got []string
		sources := map[string]bool{}
		for _, d := range rec.wait(5) {
			got = append(got, fmt.Sprintf("%v#%v", d.Headers[runtime.HeaderOrderingKey], d.Headers[runtime.HeaderSequence]))
			if _, ok := d.Headers[runtime.HeaderSequenceSource]; ok {
				sources[s.sourceOf(d)] = true
			}
		}
		if len(sources) != 1 {
			t.Errorf("numbered facts came from the sources %v; want one for the table", sources)
		}
		// Each key's facts in the order of their numbers; a key's next fact
		// waits for the broker's confirm of its previous one, so other
		// facts may pass it.
		if k, want := perKey(got, "k"), "k#1 k#2 k#3"; k != want {
			t.Errorf("relayed %s: k's facts %s, want %s", strings.Join(got, " "), k, want)
		}
		if sorted, want := strings.Join(slices.Sorted(slices.Values(got)), " "), "<nil>#<nil> j#1 k#1 k#2 k#3"; sorted != want {
			t.Errorf("relayed %s, want (in any order across keys) %s", strings.Join(got, " "), want)
		}
	})
}

// A payload without its fact's ordering key is refused by Write.
func TestOutboxWriteNeedsTheOrderingKey(t *testing.T) {
	s := newSQLiteStore(t)
	ctx := context.Background()
	tx := s.begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep
	_, err := s.ob.Write(ctx, execer(tx), runtime.Fact{RoutingKey: "order.placed", OrderingKey: "/order_id"}, map[string]string{"other": "x"})
	if err == nil || !strings.Contains(err.Error(), "ordering key /order_id: missing from the payload") {
		t.Errorf("Write without the key: %v", err)
	}
}

// Two relays, each with its own database pool and its own broker
// connection, drain one table of facts over 20 ordering keys, written
// interleaved: each key's facts reach the queue in the order of their
// numbers, both relays take part (on PostgreSQL: SQLite does not share
// its lock fairly), and when one stops half way the other takes over and
// finishes, still in order.
func TestRelaysKeepOrderPerKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		f := runtime.Fact{RoutingKey: "order.placed", Version: 1, OrderingKey: "/order_id"}
		const keys, txs = 20, 60
		for n := range txs {
			payloads := make([]any, keys)
			for k := range payloads {
				payloads[k] = map[string]any{"order_id": fmt.Sprintf("k%02d", (k+n)%keys), "n": n}
			}
			s.write(f, payloads...)
		}
		total := keys * txs
		cfg := outbox.RelayConfig{BatchSize: 10, Concurrency: 10, PollInterval: 10 * time.Millisecond, Facts: []runtime.Fact{f}}
		var relays []*outbox.Relay
		var stops []func() error
		for i := range 2 {
			pub := b.pub
			if i == 1 {
				pub = b.publisherOnOwnConnection()
			}
			r := s.relayOn(s.open(), pub, cfg)
			relays = append(relays, r)
			stops = append(stops, runRelay(t, r))
		}
		got.wait(total / 2)
		if err := stops[0](); err != nil {
			t.Errorf("Run returned %v after cancel; want nil", err)
		}
		stoppedAt := relays[0].Stats().Published
		all := got.wait(total)
		testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })

		last := map[string]int64{}
		stepsBack := 0
		for _, d := range all {
			key, _ := d.Headers[runtime.HeaderOrderingKey].(string)
			seq, _ := d.Headers[runtime.HeaderSequence].(int64)
			if seq <= last[key] {
				stepsBack++
				if stepsBack <= 5 {
					t.Errorf("key %s: number %d arrived after %d", key, seq, last[key])
				}
				continue
			}
			last[key] = seq
		}
		for k := range keys {
			if key := fmt.Sprintf("k%02d", k); last[key] != txs {
				t.Errorf("key %s: the last number to arrive was %d, want %d", key, last[key], txs)
			}
		}
		a, c := relays[0].Stats(), relays[1].Stats()
		t.Logf("%d facts: relay 1 published %d and stopped, relay 2 published %d; %d arrived, %d out of order", total, stoppedAt, c.Published, len(all), stepsBack)
		if a.Published+c.Published < uint64(total) {
			t.Errorf("relays published %d and %d; want %d in all", a.Published, c.Published, total)
		}
		// On PostgreSQL the relays queue for the table's advisory lock and
		// take turns. SQLite's busy handler sleeps and tries again, so a
		// relay with a backlog can take the lock again first, round after
		// round, and the other may get no turn (seen under load): the
		// package says to run one relay per SQLite file.
		if s.dialect != outbox.SQLite && (a.Published == 0 || c.Published == 0) {
			t.Errorf("relays published %d and %d; want both to take part", a.Published, c.Published)
		}
		if a.Published != stoppedAt || c.Published < uint64(total)-stoppedAt {
			t.Errorf("relay 1 stopped at %d and published %d in all, relay 2 published %d; want relay 2 to publish the %d left", stoppedAt, a.Published, c.Published, uint64(total)-stoppedAt)
		}
	})
}

// A refused fact holds back the later facts of its ordering key, and only
// those: row 1 of key k is refused (its routing key reaches no queue), so
// k's rows 2..4, claimed in the same batch and in the rounds after it, are
// neither sent nor charged an attempt, while the facts of other keys and
// of no key flow. Once a queue is bound to it and its retry is due, k
// arrives whole and in order.
func TestRefusedFactHoldsBackItsOrderingKeyOnly(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		placed := runtime.Fact{RoutingKey: "order.placed", Version: 1, OrderingKey: "/order_id"}
		refunded := runtime.Fact{RoutingKey: "refund.issued", Version: 1, OrderingKey: "/order_id"} // bound to no queue yet
		s.write(refunded, map[string]any{"order_id": "k", "n": 1})
		s.write(placed, map[string]any{"order_id": "k", "n": 2}, map[string]any{"order_id": "j", "n": 1})
		s.write(placed, map[string]any{"order_id": "k", "n": 3}, map[string]any{"order_id": "j", "n": 2})
		s.write(runtime.Fact{RoutingKey: "order.noted"}, map[string]any{"note": "no key"})
		clock := newClock()
		r := s.relay(b.pub, outbox.RelayConfig{Now: clock.Now, RetryMin: time.Minute, RetryMax: time.Minute, Concurrency: 16,
			Facts: []runtime.Fact{placed, refunded}})
		ctx := context.Background()
		if n, err := r.RelayOnce(ctx); n != 3 || !errors.Is(err, runtime.ErrUnroutable) {
			t.Fatalf("first round: RelayOnce = %d, %v; want j's two facts and the unkeyed one published, k's first refused as unroutable", n, err)
		}
		// A later round, before k's first fact is retried: j and a new k
		// fact are written; j's goes, k's waits.
		s.write(placed, map[string]any{"order_id": "k", "n": 4}, map[string]any{"order_id": "j", "n": 3})
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("second round: RelayOnce = %d, %v; want j's third fact only", n, err)
		}
		arrived := func() []string {
			var seen []string
			for _, d := range got.wait(got.count()) {
				seen = append(seen, fmt.Sprintf("%v#%v", d.Headers[runtime.HeaderOrderingKey], d.Headers[runtime.HeaderSequence]))
			}
			return seen
		}
		got.wait(4)
		if a := arrived(); perKey(a, "j") != "j#1 j#2 j#3" || perKey(a, "k") != "" || len(a) != 4 {
			t.Fatalf("arrived %s, want j#1 j#2 j#3 in order and the unkeyed fact: nothing of k while its first fact is refused", strings.Join(a, " "))
		}
		for _, row := range s.rows() {
			if row.RoutingKey == "order.placed" && row.Attempts != 0 {
				t.Errorf("held row %s has %d attempts; a held row is not charged", row.ID, row.Attempts)
			}
		}

		bindQueue(t, b, "refund.*")
		clock.advance(time.Minute)
		if n, err := r.RelayOnce(ctx); n != 4 || err != nil {
			t.Fatalf("round after the binding: RelayOnce = %d, %v; want k's four facts", n, err)
		}
		got.wait(8)
		if a := arrived(); perKey(a, "k") != "k#1 k#2 k#3 k#4" || len(a) != 8 {
			t.Errorf("arrived %s, want k#1 k#2 k#3 k#4 last, in order", strings.Join(a, " "))
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("%d rows left in the outbox, want none", len(rows))
		}
	})
}

// bindQueue binds the test consumer's queue to pattern on the events
// exchange.
func bindQueue(t *testing.T, b *broker, pattern string) {
	t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.QueueBind(b.queue, pattern, b.events(), false, nil); err != nil {
		t.Fatal(err)
	}
}

// perKey returns the arrivals ("key#number") of key, in their order.
func perKey(arrivals []string, key string) string {
	var of []string
	for _, a := range arrivals {
		if strings.HasPrefix(a, key+"#") {
			of = append(of, a)
		}
	}
	return strings.Join(of, " ")
}
