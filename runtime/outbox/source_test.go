package outbox_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

// orderedFact is a fact numbered per order_id.
var orderedFact = runtime.Fact{RoutingKey: "order.placed", Version: 1, OrderingKey: "/order_id"}

// Two services, each with its own database and an outbox table of the
// same name, number the facts of one ordering key from 1 each: their
// relays publish them under two sources, so an ordered consumer of both
// starts a sequence per service instead of reading one's numbers as the
// other's steps back. Migrating again and a relay made again over the
// same table, on a pool of its own (a restart), keep the table's source:
// the key's next fact goes on at 2 under it.
func TestOutboxTablesOfOneNameInTwoDatabasesNumberUnderTwoSources(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		table := testenv.TableName("warren_outbox")
		sourcesOfTwoDatabases(t, newSQLiteStoreNamed(t, table), newSQLiteStoreNamed(t, table))
	})
	t.Run("postgres", func(t *testing.T) {
		// Two schemas stand for two databases: the table is named alike,
		// unqualified, and each connection finds its own by search_path.
		table := testenv.TableName("warren_outbox")
		sourcesOfTwoDatabases(t, newPostgresStoreIn(t, table, false), newPostgresStoreIn(t, table, true))
	})
}

func sourcesOfTwoDatabases(t *testing.T, a, b *store) {
	ctx := context.Background()
	if a.ob.Table() != b.ob.Table() {
		t.Fatalf("tables %s and %s; want one name", a.ob.Table(), b.ob.Table())
	}
	br := newBroker(t, true)
	rec := br.receive()
	for _, s := range []*store{a, b} {
		s.write(orderedFact, map[string]string{"order_id": "k"})
		if n, err := s.relay(br.pub, outbox.RelayConfig{Facts: []runtime.Fact{orderedFact}}).RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce = %d, %v; want the fact published", n, err)
		}
	}
	got := rec.wait(2)
	srcA, srcB := a.sourceOf(got[0]), b.sourceOf(got[1])
	for i, d := range got {
		if seq := d.Headers[runtime.HeaderSequence]; seq != int64(1) {
			t.Errorf("fact %d of k: number %v, want 1: each database numbers its own", i+1, seq)
		}
	}
	if srcA == srcB {
		t.Errorf("both databases published k under %q; want a source each", srcA)
	}

	if err := a.ob.MigrateDB(ctx, a.txDB); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	a.write(orderedFact, map[string]string{"order_id": "k"})
	if n, err := a.relayOn(a.open(), br.pub, outbox.RelayConfig{Facts: []runtime.Fact{orderedFact}}).RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("restarted relay: RelayOnce = %d, %v; want the fact published", n, err)
	}
	d := rec.wait(3)[2]
	if src, seq := a.sourceOf(d), d.Headers[runtime.HeaderSequence]; src != srcA || seq != int64(2) {
		t.Errorf("after a restart k's next fact came as %v under %q; want 2 under %q", seq, src, srcA)
	}
}

// A table migrated by a version that drew no source id (its source table
// missing) still relays facts without an ordering key; a numbered fact
// waits, with an error that names the table and says to migrate, rather
// than go out under a source another database may share. Once Migrate
// has drawn the id it goes.
func TestNumberedFactsWaitForTheSourceThatMigrateDraws(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		if _, err := s.db.Exec(`DROP TABLE "` + s.ob.SequenceSourceTable() + `"`); err != nil {
			t.Fatal(err)
		}
		b := newBroker(t, true)
		rec := b.receive()
		r := s.relay(b.pub, outbox.RelayConfig{Facts: []runtime.Fact{orderedFact}})
		s.write(runtime.Fact{RoutingKey: "order.noted"}, map[string]string{"note": "no key"})
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("unnumbered fact: RelayOnce = %d, %v; want it published", n, err)
		}
		s.write(orderedFact, map[string]string{"order_id": "k"})
		n, err := r.RelayOnce(ctx)
		if n != 0 || err == nil || !strings.Contains(err.Error(), s.ob.SequenceSourceTable()) || !strings.Contains(err.Error(), "Outbox.Migrate") {
			t.Fatalf("numbered fact without a source: RelayOnce = %d, %v; want nothing published and an error naming %s and Outbox.Migrate", n, err, s.ob.SequenceSourceTable())
		}
		if rows := s.rows(); len(rows) != 1 {
			t.Fatalf("%d rows in the outbox; want the numbered fact kept", len(rows))
		}
		if err := s.ob.MigrateDB(ctx, s.txDB); err != nil {
			t.Fatal(err)
		}
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("after Migrate: RelayOnce = %d, %v; want the numbered fact published", n, err)
		}
		if d := rec.wait(2)[1]; d.Headers[runtime.HeaderSequence] != int64(1) {
			t.Errorf("numbered fact came as %v; want 1", d.Headers[runtime.HeaderSequence])
		} else {
			s.sourceOf(d)
		}
	})
}

// sourceOf returns the source a numbered fact came under, which must be
// the store's table's: "outbox:<table>:<id>".
func (s *store) sourceOf(d amqp.Delivery) string {
	s.t.Helper()
	src, _ := d.Headers[runtime.HeaderSequenceSource].(string)
	prefix := "outbox:" + s.ob.Table() + ":"
	if !strings.HasPrefix(src, prefix) || len(src) == len(prefix) {
		s.t.Errorf("fact %s: source %q, want %s<id>", d.MessageId, src, prefix)
	}
	return src
}

// newPostgresStoreIn is a store whose outbox table, named table, is in a
// schema of its own, made for the test and dropped after it, which its
// connections find by their search_path: through database/sql, or through
// a pgx pool when pool is set.
func newPostgresStoreIn(t *testing.T, table string, pool bool) *store {
	t.Helper()
	dsn := testenv.PGDSN(t)
	admin := testenv.OpenDB(t, "pgx", dsn)
	schema := testenv.TableName("warren_db")
	if _, err := admin.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	dsn = withSearchPath(t, dsn, schema)
	db := testenv.OpenDB(t, "pgx", dsn)
	if pool {
		return newStoreNamed(t, outbox.Postgres, db, pgxdb.FromPool(openPool(t, dsn)), func() sqldb.DB { return pgxdb.FromPool(openPool(t, dsn)) }, table)
	}
	return newStoreNamed(t, outbox.Postgres, db, pgxdb.FromSQL(db), func() sqldb.DB { return pgxdb.FromSQL(testenv.OpenDB(t, "pgx", dsn)) }, table)
}

// withSearchPath returns dsn, a URL or key=value connection string, with
// schema as its search_path.
func withSearchPath(t *testing.T, dsn, schema string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("WARREN_PG_DSN: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
