package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// TestMigrateTwice: Migrate creates the tables with every script, and
// migrating them again, in any order, changes nothing and keeps their
// rows.
func TestMigrateTwice(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d sqldb.Dialect) {
		ctx := context.Background()
		a, b := newTable(t, db, d, &widgets), newTable(t, db, d, &widgets)
		if err := sqldb.Migrate(ctx, sqldb.FromSQL(db), d, a, b); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		insert := fmt.Sprintf("INSERT INTO %s (id, at, note) VALUES (%s, %s, %s)", a.Quoted(), d.Placeholder(1), d.Placeholder(2), d.Placeholder(3))
		if _, err := db.Exec(insert, 1, d.Time(time.Now()), "kept"); err != nil {
			t.Fatalf("insert into the migrated table: %v", err)
		}
		if err := sqldb.Migrate(ctx, sqldb.FromSQL(db), d, b, a); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		var note string
		if err := db.QueryRow("SELECT note FROM " + a.Quoted()).Scan(&note); err != nil || note != "kept" {
			t.Errorf("after a second Migrate the row's note is %q, %v; want it kept", note, err)
		}
		for _, tbl := range []sqldb.Table{a, b} {
			if !indexExists(t, db, d, tbl.Derived("_at_idx")) {
				t.Errorf("no index %s: the {{at_index}} placeholder was not filled in", tbl.Derived("_at_idx"))
			}
		}
	})
}

// TestMigrateFailureKeepsNothing: a script that fails undoes the whole
// migration, the tables made before it included, and the error names the
// table whose script failed.
func TestMigrateFailureKeepsNothing(t *testing.T) {
	broken := sqldb.Kind{Name: "broken", Migrations: fstest.MapFS{
		"migrations/postgres/001_table.sql": {Data: []byte("CREATE TABLE {{table}} (id integer);")},
		"migrations/postgres/002_typo.sql":  {Data: []byte("CREATE TABEL oops (id integer);")},
		"migrations/sqlite/001_table.sql":   {Data: []byte("CREATE TABLE {{table}} (id INTEGER);")},
		"migrations/sqlite/002_typo.sql":    {Data: []byte("CREATE TABEL oops (id INTEGER);")},
	}}
	forEachDB(t, func(t *testing.T, db *sql.DB, d sqldb.Dialect) {
		good, bad := newTable(t, db, d, &widgets), newTable(t, db, d, &broken)
		err := sqldb.Migrate(context.Background(), sqldb.FromSQL(db), d, good, bad)
		if err == nil || !strings.Contains(err.Error(), "migrate "+bad.String()+": ") {
			t.Fatalf("Migrate with a broken script: error = %v, want one naming %s", err, bad)
		}
		for _, tbl := range []sqldb.Table{good, bad} {
			if _, err := db.Exec("SELECT count(*) FROM " + tbl.Quoted()); err == nil {
				t.Errorf("table %s exists after the failed migration", tbl)
			}
		}
	})
}

// TestMigrateRefusesBadTables: a table Kind.Table did not name, or one
// named for another dialect, is refused before any transaction begins.
func TestMigrateRefusesBadTables(t *testing.T) {
	qualified, err := widgets.Table(sqldb.Postgres, "app.widgets")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		dialect sqldb.Dialect
		table   sqldb.Table
		wantErr string
	}{
		{"zero table", sqldb.SQLite, sqldb.Table{}, `migrate: table "" is of no kind: expected a table named by Kind.Table`},
		{"sibling", sqldb.Postgres, qualified.Sibling("_seq"), `table "app.widgets_seq" is of no kind`},
		{"qualified on SQLite", sqldb.SQLite, qualified, "migrate app.widgets: sqlite does not take a schema-qualified name"},
		{"unknown dialect", "mysql", qualified, `migrate: dialect "mysql": expected sqldb.Postgres or sqldb.SQLite`},
	} {
		err := sqldb.Migrate(context.Background(), refusingDB{t}, c.dialect, c.table)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: Migrate error = %v, want one saying %q", c.name, err, c.wantErr)
		}
	}
}

// TestMigrateConcurrently: services starting at the same moment migrate
// one table side by side, and none fails: the advisory lock serialises
// their CREATE TABLEs.
func TestMigrateConcurrently(t *testing.T) {
	db := testenv.OpenDB(t, "pgx", testenv.PGDSN(t))
	tbl := newTable(t, db, sqldb.Postgres, &widgets)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = sqldb.Migrate(context.Background(), sqldb.FromSQL(db), sqldb.Postgres, tbl) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("concurrent migrations: %v", err)
	}
}

// TestWithSetup: every transaction of the DB runs the setup first; a
// setup statement that fails is reported by BeginTx, by its text.
func TestWithSetup(t *testing.T) {
	ctx := context.Background()
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "setup.db"))
	plain := sqldb.FromSQL(db)
	if sqldb.WithSetup(plain) != plain {
		t.Error("WithSetup without statements did not return the DB itself")
	}
	tx, err := sqldb.WithSetup(plain, sqldb.SQLite.BusyTimeout(1234*time.Millisecond)...).BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	var ms int
	if err := tx.Native().(*sql.Tx).QueryRow("PRAGMA busy_timeout").Scan(&ms); err != nil || ms != 1234 {
		t.Errorf("busy_timeout in the transaction = %d, %v; want 1234", ms, err)
	}
	_, err = sqldb.WithSetup(plain, "PRAGMA busy_timeout = 1", "SELEC 1").BeginTx(ctx, sqldb.TxOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "SELEC 1: ") {
		t.Errorf("BeginTx with a broken setup: error = %v, want one starting with the statement", err)
	}
}

// refusingDB fails the test if a transaction is begun on it.
type refusingDB struct{ t *testing.T }

func (r refusingDB) BeginTx(context.Context, sqldb.TxOptions) (sqldb.Tx, error) {
	r.t.Error("BeginTx called")
	return nil, errors.New("refused")
}

func forEachDB(t *testing.T, test func(t *testing.T, db *sql.DB, d sqldb.Dialect)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "tables.db")), sqldb.SQLite)
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, testenv.OpenDB(t, "pgx", testenv.PGDSN(t)), sqldb.Postgres)
	})
}

// newTable names a table of kind k for this test alone and drops it when
// the test ends.
func newTable(t testing.TB, db *sql.DB, d sqldb.Dialect, k *sqldb.Kind) sqldb.Table {
	t.Helper()
	tbl, err := k.Table(d, testenv.TableName(k.Name))
	if err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, db, tbl.String())
	return tbl
}

func indexExists(t testing.TB, db *sql.DB, d sqldb.Dialect, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
	if d == sqldb.Postgres {
		q = "SELECT count(*) FROM pg_indexes WHERE indexname = $1"
	}
	var n int
	if err := db.QueryRow(q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}
