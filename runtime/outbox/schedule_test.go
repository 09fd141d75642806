package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// writeVia writes payload of fact f through the outbox view ob in a
// transaction of its own, and commits it.
func (s *store) writeVia(ob *outbox.Outbox, f runtime.Fact, payload any) string {
	s.t.Helper()
	ctx := context.Background()
	tx := s.begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	id, err := ob.Write(ctx, execer(tx), f, payload)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		s.t.Fatal(err)
	}
	return id
}

// cancel cancels ids in a transaction of its own and returns the count.
func (s *store) cancel(ids ...string) int64 {
	s.t.Helper()
	ctx := context.Background()
	tx := s.begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	n, err := s.ob.Cancel(ctx, execer(tx), ids...)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// TestScheduledFactWaitsUntilDue: a fact written through At is published
// by the first round after its due time, not before, with its due time
// in x-due-at; a fact written now beside it goes at once; status counts
// the scheduled fact and its due time until then.
func TestScheduledFactWaitsUntilDue(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		b := newBroker(t, true)
		got := b.receive()
		now := time.Now().UTC().Truncate(time.Millisecond)
		clk := &clock{t: now}
		due := now.Add(time.Hour)
		later := s.writeVia(s.ob.At(due), factPlaced, order{ID: "o-later"})
		soon := s.write(factPlaced, order{ID: "o-now"})[0]
		st, err := s.ob.Status(ctx, s.txDB)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != 1 || st.Scheduled != 1 || !st.NextDue.Equal(due) {
			t.Errorf("status = %+v; want 1 pending, 1 scheduled, next due %s", st, due)
		}
		list, err := s.ob.Scheduled(ctx, s.txDB, "", 10)
		if err != nil || len(list) != 1 || list[0].ID != later || !list[0].DueAt.Equal(due) || list[0].RoutingKey != "order.placed" {
			t.Errorf("Scheduled = %+v, %v; want the one fact due at %s", list, err, due)
		}

		r := s.relay(b.pub, outbox.RelayConfig{Now: clk.Now})
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce before the due time = %d, %v; want the unscheduled fact only", n, err)
		}
		clk.advance(time.Hour - time.Millisecond)
		if n, err := r.RelayOnce(ctx); n != 0 || err != nil {
			t.Fatalf("RelayOnce a millisecond before the due time = %d, %v; want nothing", n, err)
		}
		clk.advance(time.Millisecond)
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce at the due time = %d, %v; want the scheduled fact", n, err)
		}
		ds := got.wait(2)
		if ds[0].MessageId != soon || ds[1].MessageId != later {
			t.Fatalf("published %s then %s; want %s then %s", ds[0].MessageId, ds[1].MessageId, soon, later)
		}
		if _, ok := ds[0].Headers[runtime.HeaderDueAt]; ok {
			t.Errorf("the unscheduled fact carries %s: %v", runtime.HeaderDueAt, ds[0].Headers)
		}
		if h, _ := ds[1].Headers[runtime.HeaderDueAt].(string); h != due.Format("2006-01-02T15:04:05.000Z07:00") {
			t.Errorf("%s = %q; want %s", runtime.HeaderDueAt, h, due)
		}
		if st, err := s.ob.Status(ctx, s.txDB); err != nil || st != (outbox.Status{}) {
			t.Errorf("status after both = %+v, %v; want an empty table", st, err)
		}
	})
}

// TestCancelledFactIsNeverPublished: Cancel deletes a scheduled fact that
// is not published yet and counts it; cancelling it again, cancelling a
// fact written to go at once, or one already published counts nothing and
// changes nothing; a cancel in a transaction that rolls back keeps the
// fact.
func TestCancelledFactIsNeverPublished(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		b := newBroker(t, true)
		got := b.receive()
		in := s.ob.In(time.Hour)
		kept := s.writeVia(in, factPlaced, order{ID: "o-kept"})
		dropped := s.writeVia(in, factPlaced, order{ID: "o-dropped"})
		unscheduled := s.write(factPlaced, order{ID: "o-now"})[0]

		tx := s.begin(ctx)
		if n, err := s.ob.Cancel(ctx, execer(tx), kept); n != 1 || err != nil {
			t.Fatalf("Cancel in a transaction = %d, %v; want 1", n, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if n := s.cancel(dropped, unscheduled, "0190a5c4-0000-7000-8000-000000000000"); n != 1 {
			t.Errorf("Cancel of a scheduled, an unscheduled and an unknown fact = %d; want 1", n)
		}
		if n := s.cancel(dropped); n != 0 {
			t.Errorf("Cancel again = %d; want 0", n)
		}
		clk := &clock{t: time.Now().Add(2 * time.Hour)}
		if n, err := s.relay(b.pub, outbox.RelayConfig{Now: clk.Now}).RelayOnce(ctx); n != 2 || err != nil {
			t.Fatalf("RelayOnce = %d, %v; want the kept and the unscheduled fact", n, err)
		}
		ds := got.wait(2)
		ids := map[string]bool{}
		for _, d := range ds {
			ids[d.MessageId] = true
		}
		if !ids[kept] || !ids[unscheduled] || ids[dropped] || len(ds) != 2 {
			t.Errorf("published %v; want %s and %s, not the cancelled %s", ids, kept, unscheduled, dropped)
		}
		if n := s.cancel(kept); n != 0 {
			t.Errorf("Cancel of a published fact = %d; want 0", n)
		}
		if b.depth() != 0 || got.count() != 2 {
			t.Errorf("%d received, %d queued; want exactly 2", got.count(), b.depth())
		}
	})
}

// TestScheduleIsValidatedWhenWritten: a scheduled payload that does not
// match its schema, and a negative delay, are errors at once, and nothing
// is written; a due time that has passed is due at once.
func TestScheduleIsValidatedWhenWritten(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		tx := s.begin(ctx)
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		strict := factPlaced
		strict.Validate = func([]byte) error { return errors.New("/total: must be >= 0") }
		_, err := s.ob.In(time.Hour).Write(ctx, execer(tx), strict, order{ID: "o-1", Total: -1})
		if err == nil || !strings.Contains(err.Error(), "does not match its schema: /total") {
			t.Errorf("scheduled invalid payload: %v; want a schema error", err)
		}
		_, err = s.ob.In(-time.Second).Write(ctx, execer(tx), factPlaced, order{ID: "o-1"})
		if !errors.Is(err, outbox.ErrSchedule) || !strings.Contains(err.Error(), "-1s") {
			t.Errorf("negative delay: %v; want ErrSchedule naming the delay", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Fatalf("%d rows written by refused writes", len(rows))
		}
		b := newBroker(t, true)
		got := b.receive()
		past := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
		id := s.writeVia(s.ob.At(past), factPlaced, order{ID: "o-late"})
		if n, err := s.relay(b.pub, outbox.RelayConfig{}).RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce of a fact due a minute ago = %d, %v", n, err)
		}
		d := got.wait(1)[0]
		if h, _ := d.Headers[runtime.HeaderDueAt].(string); d.MessageId != id || h != past.Format("2006-01-02T15:04:05.000Z07:00") {
			t.Errorf("published %s with %s %q; want %s due %s", d.MessageId, runtime.HeaderDueAt, h, id, past)
		}
	})
}

// TestScheduledFactsSurviveARelayRestart: facts scheduled a moment ahead,
// with a relay that stops before they are due and another that starts
// after, are each published exactly once. The relays poll once an hour:
// only waking for the next due time publishes anything.
func TestScheduledFactsSurviveARelayRestart(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		cfg := outbox.RelayConfig{PollInterval: time.Hour}
		stop := runRelay(t, s.relay(b.pub, cfg))
		const n = 20
		want := map[string]bool{}
		for i := range n {
			delay := time.Duration(100+10*i) * time.Millisecond
			want[s.writeVia(s.ob.In(delay), factPlaced, order{ID: fmt.Sprintf("o-%d", i)})] = true
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		stop = runRelay(t, s.relay(b.pub, cfg))
		defer stop() //nolint:errcheck // stopped below
		ds := got.wait(n)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, d := range ds {
			seen[d.MessageId]++
			if !want[d.MessageId] || seen[d.MessageId] > 1 {
				t.Errorf("message %s: published %d times, scheduled here: %v", d.MessageId, seen[d.MessageId], want[d.MessageId])
			}
			if h, _ := d.Headers[runtime.HeaderDueAt].(string); h == "" {
				t.Errorf("message %s has no %s", d.MessageId, runtime.HeaderDueAt)
			}
		}
		if len(seen) != n || b.depth() != 0 {
			t.Errorf("%d distinct facts received, %d left queued; want %d, 0", len(seen), b.depth(), n)
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("%d rows left in the outbox", len(rows))
		}
	})
}
