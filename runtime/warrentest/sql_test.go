package warrentest_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// A fact written to a SQLite outbox in a committed transaction reaches the
// consumer through the relay, on the bus and in virtual time; a rolled back
// one does not.
func TestOutboxRelayPublishesCommittedFactsOnTheBus(t *testing.T) {
	db := sqliteFile(t, "shop.db")
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		ctx := b.Context()
		warrentest.Register[itemUpdated](b, factItemUpdated)
		ob := migratedOutbox(t, ctx, db)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error { return nil }),
		})
		b.Start("search-indexer", c, err)
		defer startRelay(t, b, db, outbox.RelayConfig{Dialect: outbox.SQLite}).Close()

		write := func(sku string, commit bool) string {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck // a no-op after Commit
			id, err := ob.Write(ctx, tx, factItemUpdated, itemUpdated{SKU: sku})
			if err != nil {
				t.Fatal(err)
			}
			if commit {
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			return id
		}
		committed := write("BOOK-10", true)
		write("BOOK-11", false)
		// The relay polls the table: let its interval pass.
		b.Advance(outbox.DefaultPollInterval)
		b.Idle()
		h := b.Handled("search-indexer")
		if len(h) != 1 || h[0].MessageID != committed {
			t.Fatalf("handled %+v, want message %s alone", h, committed)
		}
		if got := warrentest.Published[itemUpdated](b); len(got) != 1 || got[0].SKU != "BOOK-10" {
			t.Errorf("published %+v", got)
		}
	})
}

// A fact scheduled in the outbox on the bus waits in virtual time: the
// relay, polling once an hour, wakes for its due time; the consumer sees
// it exactly then, and a cancelled one never.
func TestOutboxScheduledFactsOnTheBus(t *testing.T) {
	db := sqliteFile(t, "shop.db")
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		ctx := b.Context()
		warrentest.Register[itemUpdated](b, factItemUpdated)
		ob := migratedOutbox(t, ctx, db)
		var due []time.Time
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error {
				if !d.DueAt.Equal(time.Now()) {
					t.Errorf("%s arrived at %s, due %s", v.SKU, time.Now(), d.DueAt)
				}
				due = append(due, d.DueAt)
				return nil
			}),
		})
		b.Start("search-indexer", c, err)
		defer startRelay(t, b, db, outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: time.Hour}).Close()

		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := ob.In(90*time.Minute).Write(ctx, tx, factItemUpdated, itemUpdated{SKU: "BOOK-20"}); err != nil {
			t.Fatal(err)
		}
		dropped, err := ob.In(2*time.Hour).Write(ctx, tx, factItemUpdated, itemUpdated{SKU: "BOOK-21"})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Advance(90*time.Minute - time.Millisecond)
		b.WantHandled("search-indexer", 0)
		b.Advance(time.Millisecond)
		b.WantHandled("search-indexer", 1)

		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := ob.Cancel(ctx, tx, dropped); n != 1 || err != nil {
			t.Fatalf("Cancel = %d, %v", n, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Advance(24 * time.Hour)
		b.WantHandled("search-indexer", 1)
		if len(due) != 1 || !due[0].Equal(start.Add(90*time.Minute)) {
			t.Errorf("due times %v, want %s", due, start.Add(90*time.Minute))
		}
	})
}

// The SQLite idempotency guard claims in the handler's transaction on the
// bus as on the broker: a fact published twice is handled once.
func TestSQLiteGuardSkipsAFactPublishedTwice(t *testing.T) {
	db := sqliteFile(t, "claims.db")
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		g, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.SQLite})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Migrate(b.Context()); err != nil {
			t.Fatal(err)
		}
		warrentest.Register[itemUpdated](b, factItemUpdated)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error { return nil }),
		}, runtime.WithGuard(g))
		b.Start("search-indexer", c, err)
		id := warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-12"})
		b.Idle()
		b.PublishAgain(id)
		b.Idle()
		b.WantHandled("search-indexer", 1)
		b.WantDuplicates("search-indexer", 1)
	})
}

// With a PostgreSQL database, which a virtual-time bubble cannot wait on,
// the test runs in real time (New): the guard's claims share the handler's
// transaction there as in production.
func TestPostgresGuardSkipsAFactPublishedTwiceInRealTime(t *testing.T) {
	db := testenv.OpenDB(t, "pgx", testenv.PGDSN(t))
	table := testenv.TableName("warren_claims")
	g, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.Postgres, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	b := warrentest.New(t, shop(t, 10*time.Millisecond))
	if err := g.Migrate(b.Context()); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, db, table)
	warrentest.Register[itemUpdated](b, factItemUpdated)
	c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
		runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error { return nil }),
	}, runtime.WithGuard(g))
	b.Start("search-indexer", c, err)
	id := warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-13"})
	b.Idle()
	b.PublishAgain(id)
	b.Idle()
	b.WantHandled("search-indexer", 1)
	b.WantDuplicates("search-indexer", 1)
}

// sqliteFile opens a SQLite database of the test's own, closed when the
// test ends.
func sqliteFile(t *testing.T, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), name)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// migratedOutbox returns the SQLite outbox of db, its table made.
func migratedOutbox(t *testing.T, ctx context.Context, db *sql.DB) *outbox.Outbox {
	t.Helper()
	ob, err := outbox.New(outbox.Config{Dialect: outbox.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	return ob
}

// startRelay starts an outbox relay of db on the bus and returns its
// publisher, for the test to close.
func startRelay(t *testing.T, b *warrentest.Bus, db *sql.DB, cfg outbox.RelayConfig) *runtime.Publisher {
	t.Helper()
	pub, err := runtime.NewPublisher(b.Conn(), topology.DefaultExchanges.Events)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := outbox.NewRelay(db, pub, cfg)
	b.Start("outbox relay", relay, err)
	return pub
}
