package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// TestCommittedFactIsPublished: after commit the relay publishes the fact
// with the id Write returned, the stored envelope byte for byte and the
// wire properties of a direct publish, and deletes the row.
func TestCommittedFactIsPublished(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		ids := s.write(factPlaced, order{ID: "o-1", Total: 1250})
		stored := s.rows()[0].Envelope
		r := s.relay(b.pub, outbox.RelayConfig{})
		n, err := r.RelayOnce(context.Background())
		if n != 1 || err != nil {
			t.Fatalf("RelayOnce = %d, %v; want 1 published", n, err)
		}
		d := got.wait(1)[0]
		if d.MessageId != ids[0] || string(d.Body) != string(stored) {
			t.Errorf("published message %s with body %s; want id %s and the stored envelope %s", d.MessageId, d.Body, ids[0], stored)
		}
		var env runtime.Envelope
		if err := json.Unmarshal(d.Body, &env); err != nil || env.ID != ids[0] || string(env.Payload) != `{"id":"o-1","total":1250}` {
			t.Errorf("envelope %s (%v); want id %s and exactly the payload written", d.Body, err, ids[0])
		}
		if d.RoutingKey != "order.placed" || d.Type != "order.placed" || d.Headers[runtime.HeaderFactVersion] != int64(2) || d.DeliveryMode != 2 {
			t.Errorf("properties: key %q, type %q, headers %v, delivery mode %d; want order.placed, version 2, persistent",
				d.RoutingKey, d.Type, d.Headers, d.DeliveryMode)
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("outbox still has %d rows after the publish was confirmed", len(rows))
		}
		if st := r.Stats(); st != (outbox.Stats{Published: 1}) {
			t.Errorf("Stats = %+v, want 1 published", st)
		}
		if n, err := r.RelayOnce(context.Background()); n != 0 || err != nil {
			t.Errorf("second RelayOnce = %d, %v; want nothing left", n, err)
		}
		if depth := b.depth(); depth != 0 || got.count() != 1 {
			t.Errorf("the fact was published more than once: %d received, %d waiting", got.count(), depth)
		}
	})
}

// TestRolledBackFactIsNeverPublished: a fact written in a transaction that
// rolls back leaves no row and is never published; the one committed next
// to it is.
func TestRolledBackFactIsNeverPublished(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		ctx := context.Background()
		tx := s.begin(ctx)
		if _, err := s.ob.Write(ctx, execer(tx), factPlaced, order{ID: "rolled-back"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		kept := s.write(factPlaced, order{ID: "committed"})
		r := s.relay(b.pub, outbox.RelayConfig{})
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce = %d, %v; want only the committed fact published", n, err)
		}
		if d := got.wait(1)[0]; d.MessageId != kept[0] {
			t.Errorf("published %s (%s); want only the committed fact %s", d.MessageId, d.Body, kept[0])
		}
		if depth := b.depth(); depth != 0 || got.count() != 1 {
			t.Errorf("%d received and %d waiting; want the committed fact alone", got.count(), depth)
		}
	})
}

// TestUnroutableFactStaysUntilTopologyAppears: a fact the broker cannot
// route, or whose exchange does not exist yet, is kept with its error and
// counted, waits for its retry time, and is published with its id once the
// topology is declared.
func TestUnroutableFactStaysUntilTopologyAppears(t *testing.T) {
	for _, c := range []struct {
		name           string
		exchange       bool   // declare the events exchange (with no queue bound) before relaying
		wantUnroutable uint64 // counted as unroutable
		wantErr        string // in RelayOnce's error and the row's last_error
	}{
		{"no queue bound", true, 1, "fact reached no queue"},
		{"no exchange", false, 0, "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachDB(t, func(t *testing.T, s *store) {
				b := newBroker(t, false)
				if c.exchange {
					b.declareExchange()
				}
				clock := newClock()
				r := s.relay(b.pub, outbox.RelayConfig{Now: clock.Now, RetryMin: time.Second, RetryMax: time.Minute})
				ids := s.write(factPlaced, order{ID: "o-1"})
				ctx := context.Background()

				n, err := r.RelayOnce(ctx)
				if n != 0 || err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), ids[0]) {
					t.Fatalf("RelayOnce without topology = %d, %v; want 0 and an error naming the message and saying %q", n, err, c.wantErr)
				}
				if c.wantUnroutable > 0 && !errors.Is(err, runtime.ErrUnroutable) {
					t.Errorf("error %v does not match runtime.ErrUnroutable", err)
				}
				rows := s.rows()
				if len(rows) != 1 || rows[0].ID != ids[0] || rows[0].Attempts != 1 || !strings.Contains(rows[0].LastError.String, c.wantErr) {
					t.Fatalf("rows after the failed publish = %+v; want the row kept with 1 attempt and the error", rows)
				}
				if st := r.Stats(); st != (outbox.Stats{Failed: 1, Unroutable: c.wantUnroutable}) {
					t.Errorf("Stats = %+v; want 1 failed, %d unroutable", st, c.wantUnroutable)
				}

				b.declare()
				if n, err := r.RelayOnce(ctx); n != 0 || err != nil {
					t.Errorf("RelayOnce before the retry time = %d, %v; want the row left waiting", n, err)
				}
				clock.advance(time.Second)
				got := b.receive()
				if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
					t.Fatalf("RelayOnce with the topology declared = %d, %v; want 1", n, err)
				}
				if d := got.wait(1)[0]; d.MessageId != ids[0] {
					t.Errorf("published %s; want %s", d.MessageId, ids[0])
				}
				if rows := s.rows(); len(rows) != 0 {
					t.Errorf("outbox still has %+v after the publish", rows)
				}
			})
		})
	}
}

// TestFailedFactDoesNotHoldUpOthers: a fact that keeps failing waits for
// its retry while the facts behind it are published.
func TestFailedFactDoesNotHoldUpOthers(t *testing.T) {
	s := newSQLiteStore(t)
	b := newBroker(t, true)
	got := b.receive()
	stuck := s.write(runtime.Fact{RoutingKey: "nobody.listens"}, order{ID: "o-1"})
	ok := s.write(factPlaced, order{ID: "o-2"})
	r := s.relay(b.pub, outbox.RelayConfig{BatchSize: 1, Now: newClock().Now})
	ctx := context.Background()
	if n, err := r.RelayOnce(ctx); n != 0 || !errors.Is(err, runtime.ErrUnroutable) {
		t.Fatalf("first round = %d, %v; want the oldest fact, which is unroutable, to fail", n, err)
	}
	if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("second round = %d, %v; want the next fact published", n, err)
	}
	if d := got.wait(1)[0]; d.MessageId != ok[0] {
		t.Errorf("published %s; want %s", d.MessageId, ok[0])
	}
	if rows := s.rows(); len(rows) != 1 || rows[0].ID != stuck[0] {
		t.Errorf("rows = %+v; want the unroutable fact kept", rows)
	}
}

// TestRetryDelayDoubles: each failed publish pushes a row's next try
// further out, doubling from RetryMin up to RetryMax.
func TestRetryDelayDoubles(t *testing.T) {
	s := newSQLiteStore(t)
	b := newBroker(t, false)
	b.declareExchange() // every publish is unroutable
	clock := newClock()
	r := s.relay(b.pub, outbox.RelayConfig{Now: clock.Now, RetryMin: time.Second, RetryMax: 4 * time.Second})
	s.write(factPlaced, order{ID: "o-1"})
	ctx := context.Background()
	// Waits after failures 1..4: 1s, 2s, 4s, 4s (capped).
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if _, err := r.RelayOnce(ctx); err == nil {
			t.Fatalf("attempt %d: the publish did not fail", i+1)
		}
		clock.advance(wait - time.Millisecond)
		if st := r.Stats(); st.Failed != uint64(i+1) {
			t.Fatalf("after attempt %d Stats = %+v", i+1, st)
		}
		if _, err := r.RelayOnce(ctx); err != nil {
			t.Fatalf("attempt %d: tried again %s after the failure, before its retry time: %v", i+1, wait-time.Millisecond, err)
		}
		clock.advance(time.Millisecond)
	}
	if rows := s.rows(); len(rows) != 1 || rows[0].Attempts != 4 {
		t.Errorf("rows = %+v; want one row with 4 attempts", rows)
	}
}

// TestConcurrencyOnePublishesInIDOrder: with one publish in flight, a relay
// publishes a batch oldest id first, whatever order the rows are stored in.
func TestConcurrencyOnePublishesInIDOrder(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		var payloads []any
		for i := range 30 {
			payloads = append(payloads, order{ID: "o", Total: i})
		}
		ids := s.write(factPlaced, payloads...)
		s.moveToEnd(ids[0]) // stored last now, still the oldest id
		r := s.relay(b.pub, outbox.RelayConfig{Concurrency: 1, BatchSize: 100})
		if n, err := r.RelayOnce(context.Background()); n != len(ids) || err != nil {
			t.Fatalf("RelayOnce = %d, %v; want %d", n, err, len(ids))
		}
		for i, d := range got.wait(len(ids)) {
			if d.MessageId != ids[i] {
				t.Fatalf("message %d is %s, want %s: not published oldest id first", i, d.MessageId, ids[i])
			}
		}
	})
}

// TestSQLiteWriterDuringRelay: a business transaction that writes to the
// outbox while the relay publishes a batch waits for the relay's commit,
// and neither fails: the relay took the write lock before it read.
func TestSQLiteWriterDuringRelay(t *testing.T) {
	s := newSQLiteStore(t)
	b := newBroker(t, true)
	got := b.receive()
	payloads := make([]any, 50)
	for i := range payloads {
		payloads[i] = order{ID: "o", Total: i}
	}
	ids := s.write(factPlaced, payloads...)
	r := s.relay(b.pub, outbox.RelayConfig{Concurrency: 1})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := r.RelayOnce(context.Background())
		done <- result{n, err}
	}()
	// The relay is publishing its batch; write on another connection of
	// the pool.
	got.wait(1)
	late := s.write(factPlaced, order{ID: "late"})
	res := <-done
	if res.n != len(ids) || res.err != nil {
		t.Fatalf("RelayOnce with a writer waiting = %d, %v; want all %d published and deleted", res.n, res.err, len(ids))
	}
	if rows := s.rows(); len(rows) != 1 || rows[0].ID != late[0] {
		t.Errorf("rows = %+v; want only the fact written during the relay", rows)
	}
}
