package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// factParcel is routed only to the size-limited queue of limitQueue.
var factParcel = runtime.Fact{RoutingKey: "parcel.sent"}

// limitQueue declares a classic queue of the test's own, bound to the
// events exchange for parcel.*, that refuses (nacks) any message longer
// than maxBytes: x-max-length-bytes with x-overflow reject-publish. It
// stands in for the broker's global max message size, which belongs to
// everyone on the machine. Declaring it again with another limit replaces
// it. It returns a function that reads the next message off it.
func (b *broker) limitQueue(maxBytes int) (next func() amqp.Delivery) {
	b.t.Helper()
	name := b.queue + ".limited"
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := ch.QueueDelete(name, false, false, false); err != nil {
		b.t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{
		"x-queue-type": "classic", "x-max-length-bytes": int64(maxBytes), "x-overflow": "reject-publish",
	}); err != nil {
		b.t.Fatal(err)
	}
	if err := ch.QueueBind(name, "parcel.*", b.events(), false, nil); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() {
		if ch, err := b.raw.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
			_ = ch.Close()
		}
	})
	return func() amqp.Delivery {
		b.t.Helper()
		var d amqp.Delivery
		testenv.Eventually(b.t, "a message on "+name, func() bool {
			var ok bool
			d, ok, err = ch.Get(name, true)
			if err != nil {
				b.t.Fatal(err)
			}
			return ok
		})
		return d
	}
}

// TestOversizedFactFailsThenIsRetried: a fact larger than its queue
// takes is refused at every attempt, up to MaxAttempts, then marked
// failed with the broker's refusal and left alone; Status counts it;
// after the limit is raised, Retry makes it pending and the next round
// publishes it with its id.
func TestOversizedFactFailsThenIsRetried(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		b := newBroker(t, true)
		b.limitQueue(1000)
		ids := s.write(factParcel, map[string]string{"label": strings.Repeat("x", 4000)})
		clock := newClock()
		r := s.relay(b.pub, outbox.RelayConfig{Now: clock.Now, MaxAttempts: 3, RetryMin: time.Second, RetryMax: time.Second})
		for attempt := 1; attempt <= 3; attempt++ {
			n, err := r.RelayOnce(ctx)
			if n != 0 || !errors.Is(err, runtime.ErrNacked) {
				t.Fatalf("attempt %d: RelayOnce = %d, %v; want the broker's refusal (ErrNacked)", attempt, n, err)
			}
			clock.advance(time.Hour)
		}
		if n, err := r.RelayOnce(ctx); n != 0 || err != nil {
			t.Fatalf("after MaxAttempts, RelayOnce = %d, %v; want the failed row left alone", n, err)
		}
		failed, err := s.ob.Failed(ctx, s.txDB, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(failed) != 1 || failed[0].ID != ids[0] || failed[0].Attempts != 3 || !strings.Contains(failed[0].LastError, "broker refused the message") || failed[0].FailedAt.IsZero() {
			t.Fatalf("failed rows = %+v; want %s, 3 attempts, the broker's refusal", failed, ids[0])
		}
		st, err := s.ob.Status(ctx, s.txDB)
		if err != nil {
			t.Fatal(err)
		}
		if st.Failed != 1 || st.Pending != 0 || !st.OldestPending.IsZero() {
			t.Errorf("status = %+v; want 1 failed, nothing pending", st)
		}
		if got := r.Stats(); got.MarkedFailed != 1 || got.Failed != 3 {
			t.Errorf("stats = %+v; want 3 failures and 1 row marked failed", got)
		}

		next := b.limitQueue(1 << 20)
		if n, err := s.ob.Retry(ctx, s.txDB, ""); n != 0 || err == nil {
			t.Errorf("Retry without a reason = %d, %v; want an error", n, err)
		}
		if n, err := s.ob.Retry(ctx, s.txDB, "queue limit raised", ids...); n != 1 || err != nil {
			t.Fatalf("Retry = %d, %v; want the one failed row", n, err)
		}
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("after Retry, RelayOnce = %d, %v; want the fact published", n, err)
		}
		if d := next(); d.MessageId != ids[0] {
			t.Errorf("published %s; want %s", d.MessageId, ids[0])
		}
		if st, err := s.ob.Status(ctx, s.txDB); err != nil || st != (outbox.Status{}) {
			t.Errorf("status after publishing = %+v, %v; want an empty table", st, err)
		}
	})
}

// TestDiscardKeepsTheRowWithItsReason: a discarded row is never published,
// counts as discarded, and the reason is kept on it.
func TestDiscardKeepsTheRowWithItsReason(t *testing.T) {
	s := newSQLiteStore(t)
	ctx := context.Background()
	b := newBroker(t, true)
	b.limitQueue(100)
	ids := s.write(factParcel, map[string]string{"label": strings.Repeat("x", 400)})
	r := s.relay(b.pub, outbox.RelayConfig{MaxAttempts: 1})
	if _, err := r.RelayOnce(ctx); !errors.Is(err, runtime.ErrNacked) {
		t.Fatalf("RelayOnce: %v; want the broker's refusal", err)
	}
	if n, err := s.ob.Discard(ctx, s.txDB, "label too long; reprinted by hand", ids...); n != 1 || err != nil {
		t.Fatalf("Discard = %d, %v", n, err)
	}
	if st, err := s.ob.Status(ctx, s.txDB); err != nil || st.Discarded != 1 || st.Failed != 0 || st.Pending != 0 {
		t.Errorf("status = %+v, %v; want 1 discarded", st, err)
	}
	var note string
	if err := s.db.QueryRow(fmt.Sprintf(`SELECT note FROM %q`, s.ob.Table())).Scan(&note); err != nil || note != "discarded: label too long; reprinted by hand" {
		t.Errorf("note = %q, %v", note, err)
	}
	if n, err := s.ob.Retry(ctx, s.txDB, "changed my mind", ids...); n != 0 || err != nil {
		t.Errorf("Retry of a discarded row = %d, %v; want it left discarded", n, err)
	}
	if n, err := r.RelayOnce(ctx); n != 0 || err != nil {
		t.Errorf("RelayOnce = %d, %v; want the discarded row left alone", n, err)
	}
}

// TestMigrateUpgradesAnOldTable: a table made by the first migration
// only, with a row in it, gets the new columns from Migrate, keeps the
// row, and the relay publishes it.
func TestMigrateUpgradesAnOldTable(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		table := testenv.TableName("warren_outbox_old")
		script, err := outbox.MigrationSQL(s.dialect, table)
		if err != nil {
			t.Fatal(err)
		}
		first := script[:strings.Index(script, ");")+2] // 001: the table as it was
		if _, err := s.db.Exec(first); err != nil {
			t.Fatal(err)
		}
		testenv.DropTable(t, s.db, table)
		old, err := outbox.New(outbox.Config{Dialect: s.dialect, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		testenv.DropTable(t, s.db, old.SequenceTable())
		testenv.DropTable(t, s.db, old.SequenceSourceTable())
		s.ob = old
		ids := s.write(factPlaced, order{ID: "o-old"}) // Write uses no new column
		if err := old.MigrateDB(ctx, s.txDB); err != nil {
			t.Fatalf("Migrate over the old table: %v", err)
		}
		if err := old.MigrateDB(ctx, s.txDB); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
		b := newBroker(t, true)
		got := b.receive()
		if n, err := s.relay(b.pub, outbox.RelayConfig{}).RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce = %d, %v", n, err)
		}
		if d := got.wait(1)[0]; d.MessageId != ids[0] {
			t.Errorf("published %s; want %s", d.MessageId, ids[0])
		}
	})
}

// TestKeptRowsArePruned: with KeepPublished, a published row stays,
// counted as published, until Run prunes it once it is older.
func TestKeptRowsArePruned(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		b := newBroker(t, true)
		got := b.receive()
		clock := newClock()
		s.write(factPlaced, order{ID: "o-1"})
		r := s.relay(b.pub, outbox.RelayConfig{Now: clock.Now, KeepPublished: time.Hour})
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce = %d, %v", n, err)
		}
		got.wait(1)
		if st, err := s.ob.Status(ctx, s.txDB); err != nil || st.Published != 1 || st.Pending != 0 {
			t.Fatalf("status = %+v, %v; want the published row kept", st, err)
		}
		if n, err := r.RelayOnce(ctx); n != 0 || err != nil {
			t.Fatalf("RelayOnce = %d, %v; a kept row is not published again", n, err)
		}
		clock.advance(2 * time.Hour)
		stop := runRelay(t, s.relay(b.pub, outbox.RelayConfig{Now: clock.Now, KeepPublished: time.Hour, PollInterval: 10 * time.Millisecond, PruneInterval: 10 * time.Millisecond}))
		testenv.Eventually(t, "the kept row pruned", func() bool { return len(s.rows()) == 0 })
		_ = stop()
		if got.count() != 1 {
			t.Errorf("%d messages; want the fact once", got.count())
		}
	})
}
