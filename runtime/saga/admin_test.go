package saga_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Instances selects by saga and state, orders oldest or newest first,
// counts beyond its limit, and reads the due time of each pending timeout
// the outbox still holds, on both dialects.
func TestAdminInstances(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testAdminInstances(t, testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "sagas.db")), sqldb.SQLite)
	})
	t.Run("postgres", func(t *testing.T) {
		testAdminInstances(t, testenv.OpenDB(t, "pgx", testenv.PGDSN(t)), sqldb.Postgres)
	})
}

func testAdminInstances(t *testing.T, db *sql.DB, d sqldb.Dialect) {
	ctx := context.Background()
	name := testenv.TableName("saga_admin")
	obTable, sagaTable := name+"_ob", name+"_inst"
	for _, tbl := range []string{obTable, obTable + "_seq", obTable + "_seq_source", sagaTable} {
		testenv.DropTable(t, db, tbl)
	}
	ob, err := outbox.New(outbox.Config{Dialect: d, Table: obTable})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: d, Table: name + "_claims"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := saga.NewStore(sqldb.FromSQL(db), saga.Config{Dialect: d, Table: sagaTable, Guard: guard, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	dueID, err := ob.At(due).Write(ctx, db, saga.TimeoutFact("checkout"), map[string]string{"instance": "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(h int) int64 { return time.Date(2026, 5, 1, 12-h, 0, 0, 0, time.UTC).UnixMilli() }
	ins := fmt.Sprintf(`INSERT INTO %s (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES (%s, %s, %s, '{}', %s, %s, %s, %s)`,
		sagaTable, d.Placeholder(1), d.Placeholder(2), d.Placeholder(3), d.Placeholder(4), d.Placeholder(5), d.Placeholder(6), d.Placeholder(7))
	for _, r := range [][]any{
		// payment-due is held by the outbox; reminder's fact left it.
		{"checkout", "o-1", 3, `{"payment-due":"` + dueID + `","reminder":"0190a000-0000-7000-8000-000000000000"}`, nil, ms(3), ms(0)},
		{"checkout", "o-2", 1, `{}`, nil, ms(2), ms(0)},
		{"checkout", "o-3", 2, `{}`, nil, ms(1), ms(0)},
		{"checkout", "o-4", 5, `{}`, ms(0), ms(5), ms(0)},
		{"refund", "r-1", 1, `{}`, nil, ms(4), ms(0)},
	} {
		if _, err := db.ExecContext(ctx, ins, r...); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := saga.NewAdmin(sqldb.FromSQL(db), d, sagaTable, ob)
	if err != nil {
		t.Fatal(err)
	}
	show := func(p saga.InstancePage) string {
		var out []string
		for _, r := range p.Rows {
			s := r.Instance
			for _, n := range r.TimeoutNames() {
				s += " " + n
				if at, ok := r.Due[n]; ok {
					s += "@" + at.UTC().Format(time.RFC3339Nano)
				}
			}
			out = append(out, s)
		}
		return fmt.Sprintf("%s (%d)", strings.Join(out, "; "), p.Total)
	}
	at := due.Format(time.RFC3339Nano)
	for _, tc := range []struct {
		q    saga.ListQuery
		want string
	}{
		{saga.ListQuery{Saga: "checkout", State: saga.RunningInstances, Limit: 2}, "o-1 payment-due@" + at + " reminder; o-2 (3)"},
		{saga.ListQuery{Saga: "checkout", State: saga.RunningInstances, NewestFirst: true, Limit: 2}, "o-3; o-2 (3)"},
		{saga.ListQuery{Saga: "checkout", State: saga.CompletedInstances, Limit: 10}, "o-4 (1)"},
		{saga.ListQuery{Saga: "checkout", Limit: 10, NewestFirst: true}, "o-3; o-2; o-1 payment-due@" + at + " reminder; o-4 (4)"},
		{saga.ListQuery{State: saga.RunningInstances, Limit: 1}, "r-1 (4)"},
	} {
		p, err := admin.Instances(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(p); got != tc.want {
			t.Errorf("Instances(%+v) = %s; want %s", tc.q, got, tc.want)
		}
	}
	// List, as warren saga list reads it: running first, oldest first.
	rows, err := admin.List(ctx, "checkout", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := show(saga.InstancePage{Rows: rows}); got != "o-1 payment-due reminder; o-2; o-3; o-4 (0)" {
		t.Errorf("List = %s; want o-1 to o-4, without due times", got)
	}
	if _, err := admin.Instances(ctx, saga.ListQuery{State: "paused", Limit: 1}); err == nil {
		t.Error("Instances with state paused: no error")
	}
}

// Delete removes the instance even when another connection writes to the
// table while its transaction runs: on SQLite, a transaction that read
// before it wrote would fail at once (SQLITE_BUSY_SNAPSHOT) when it came
// to write after that.
func TestAdminDeleteWhileAnotherConnectionWrites(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "sagas.db")
	db := testenv.OpenDB(t, "sqlite", "file:"+file+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	// The other writer waits for no lock: it writes at once or not at all.
	other := testenv.OpenDB(t, "sqlite", "file:"+file)
	newSQLiteStore(t, db, saga.Config{Table: "sagas"})
	for _, id := range []string{"o-1", "o-2"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO sagas (saga, instance, version, state, timeouts, created_at, updated_at) VALUES ('checkout', ?, 1, '{}', '{}', 0, 0)`, id); err != nil {
			t.Fatal(err)
		}
	}
	interfered := 0
	admin, err := saga.NewAdmin(interferingDB{sqldb.FromSQL(db), func() {
		interfered++
		_, _ = other.ExecContext(ctx, `UPDATE sagas SET updated_at = updated_at + 1 WHERE instance = 'o-2'`)
	}}, sqldb.SQLite, "sagas", nil)
	if err != nil {
		t.Fatal(err)
	}
	if deleted, err := admin.Delete(ctx, "checkout", "o-1"); !deleted || err != nil {
		t.Fatalf("Delete = %v, %v; want the instance deleted", deleted, err)
	}
	if interfered == 0 {
		t.Fatal("the other connection never tried to write")
	}
	if _, ok, err := admin.Show(ctx, "checkout", "o-1"); ok || err != nil {
		t.Errorf("Show after Delete = %v, %v; want no instance", ok, err)
	}
}

// interferingDB begins transactions that call interfere after their first
// statement: before the next one, or before Commit.
type interferingDB struct {
	sqldb.DB
	interfere func()
}

func (d interferingDB) BeginTx(ctx context.Context, opts sqldb.TxOptions) (sqldb.Tx, error) {
	tx, err := d.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &interferingTx{Tx: tx, interfere: d.interfere}, nil
}

type interferingTx struct {
	sqldb.Tx
	interfere  func()
	statements int
}

func (t *interferingTx) next() {
	if t.statements == 1 {
		t.interfere()
	}
	t.statements++
}

func (t *interferingTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t.next()
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *interferingTx) QueryContext(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	t.next()
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *interferingTx) Commit(ctx context.Context) error {
	t.next()
	return t.Tx.Commit(ctx)
}
