package outbox_test

import (
	"context"
	"fmt"
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
		for _, d := range rec.wait(5) {
			got = append(got, fmt.Sprintf("%v#%v", d.Headers[runtime.HeaderOrderingKey], d.Headers[runtime.HeaderSequence]))
			if src, ok := d.Headers[runtime.HeaderSequenceSource]; ok && src != "outbox:"+s.ob.Table() {
				t.Errorf("source %v, want outbox:%s", src, s.ob.Table())
			}
		}
		if want := "k#1 j#1 k#2 k#3 <nil>#<nil>"; strings.Join(got, " ") != want {
			t.Errorf("relayed %s, want %s", strings.Join(got, " "), want)
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
// numbers, both relays take part, and when one stops half way the other
// takes over and finishes, still in order.
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
		if a.Published == 0 || c.Published == 0 || a.Published+c.Published < uint64(total) {
			t.Errorf("relays published %d and %d; want both to take part, %d in all", a.Published, c.Published, total)
		}
	})
}
