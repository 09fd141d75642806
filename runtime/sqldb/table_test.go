package sqldb_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// widgets is the kind of table these tests migrate: a table and an index
// named after it, then a column added by a script of its own, which on
// SQLite cannot say IF NOT EXISTS (as the outbox's columns are added).
var widgets = sqldb.Kind{
	Name: "widgets",
	Migrations: fstest.MapFS{
		"migrations/postgres/001_table.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS {{table}} (id integer PRIMARY KEY, at timestamptz NOT NULL);\n" +
			"CREATE INDEX IF NOT EXISTS {{at_index}} ON {{table}} (at);")},
		"migrations/postgres/002_note.sql": {Data: []byte("ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS note text;")},
		"migrations/sqlite/001_table.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS {{table}} (id INTEGER PRIMARY KEY, at INTEGER NOT NULL);\n" +
			"CREATE INDEX IF NOT EXISTS {{at_index}} ON {{table}} (at);")},
		"migrations/sqlite/002_note.sql": {Data: []byte("ALTER TABLE {{table}} ADD COLUMN note TEXT;")},
		"migrations/sqlite/README":       {Data: []byte("not a script")},
	},
	MaxName: 40,
	Vars: func(t sqldb.Table) map[string]string {
		return map[string]string{"at_index": sqldb.Quote(t.Derived("_at_idx"))}
	},
}

func TestKindTable(t *testing.T) {
	for _, c := range []struct {
		dialect sqldb.Dialect
		name    string
		want    string // Quoted(), or a substring of the error
		wantErr bool
	}{
		{sqldb.Postgres, "widgets", `"widgets"`, false},
		{sqldb.SQLite, "_w1", `"_w1"`, false},
		{sqldb.Postgres, "app.widgets", `"app"."widgets"`, false},
		{sqldb.SQLite, "main.widgets", `table "main.widgets": sqlite does not take a schema-qualified name`, true},
		{sqldb.Postgres, "Widgets", `table "Widgets": expected lower-case letters`, true},
		{sqldb.Postgres, `w"; DROP TABLE users; --`, "expected lower-case letters", true},
		{sqldb.Postgres, "widgets-1", "expected lower-case letters", true},
		{sqldb.Postgres, "1widgets", "expected lower-case letters", true},
		{sqldb.Postgres, "a.b.c", "expected lower-case letters", true},
		{sqldb.Postgres, ".widgets", "expected lower-case letters", true},
		{sqldb.Postgres, "", "expected lower-case letters", true},
		{sqldb.Postgres, strings.Repeat("x", 40), `"` + strings.Repeat("x", 40) + `"`, false},
		{sqldb.Postgres, strings.Repeat("x", 41), "a name is longer than 40 characters", true},
		{sqldb.Postgres, strings.Repeat("x", 41) + ".w", "a name is longer than 40 characters", true},
		{"", "widgets", "no dialect: expected widgets.Postgres or widgets.SQLite", true},
		{"mysql", "widgets", `dialect "mysql": expected widgets.Postgres or widgets.SQLite`, true},
	} {
		tbl, err := widgets.Table(c.dialect, c.name)
		switch {
		case c.wantErr && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Table(%s, %q) error = %v, want one saying %q", c.dialect, c.name, err, c.want)
		case !c.wantErr && err != nil:
			t.Errorf("Table(%s, %q): %v", c.dialect, c.name, err)
		case !c.wantErr && (tbl.Quoted() != c.want || tbl.String() != c.name):
			t.Errorf("Table(%s, %q) = %s, %s; want %s, %s", c.dialect, c.name, tbl.Quoted(), tbl.String(), c.want, c.name)
		}
	}
}

// TestMaxNameDefault: a kind that sets no MaxName takes PostgreSQL's 63.
func TestMaxNameDefault(t *testing.T) {
	k := sqldb.Kind{Name: "k"}
	if _, err := k.Table(sqldb.Postgres, strings.Repeat("x", 63)); err != nil {
		t.Errorf("a 63-byte name: %v", err)
	}
	if _, err := k.Table(sqldb.Postgres, strings.Repeat("x", 64)); err == nil || !strings.Contains(err.Error(), "longer than 63") {
		t.Errorf("a 64-byte name: error = %v, want one saying it is longer than 63", err)
	}
}

func TestKindSQL(t *testing.T) {
	got, err := widgets.SQL(sqldb.SQLite, "gadgets")
	if err != nil {
		t.Fatal(err)
	}
	want := `CREATE TABLE IF NOT EXISTS "gadgets" (id INTEGER PRIMARY KEY, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS "gadgets_at_idx" ON "gadgets" (at);
ALTER TABLE "gadgets" ADD COLUMN note TEXT;`
	if got != want {
		t.Errorf("SQL =\n%s\nwant\n%s", got, want)
	}
	if _, err := widgets.SQL(sqldb.SQLite, "a.b"); err == nil || !strings.Contains(err.Error(), "schema-qualified") {
		t.Errorf("SQL of a qualified name on SQLite: error = %v, want the name refused", err)
	}
	empty := sqldb.Kind{Name: "empty", Migrations: fstest.MapFS{}}
	if _, err := empty.SQL(sqldb.Postgres, "t"); err == nil || !strings.Contains(err.Error(), "migrations in migrations/postgres") {
		t.Errorf("SQL of a kind without scripts: error = %v, want one naming the directory", err)
	}
}

// TestDerived: names made of a table's stay within the identifier limit
// and apart from each other; a sibling lives in the table's schema.
func TestDerived(t *testing.T) {
	k := sqldb.Kind{Name: "k"}
	short, _ := k.Table(sqldb.Postgres, "app.orders")
	if got := short.Derived("_pending_idx"); got != "orders_pending_idx" {
		t.Errorf("Derived = %s, want orders_pending_idx", got)
	}
	if got := short.Sibling("_seq"); got.Quoted() != `"app"."orders_seq"` || got.String() != "app.orders_seq" {
		t.Errorf("Sibling = %s (%s), want app.orders_seq quoted", got.Quoted(), got)
	}
	a, _ := k.Table(sqldb.Postgres, strings.Repeat("a", 60)+"x")
	b, _ := k.Table(sqldb.Postgres, strings.Repeat("a", 60)+"y")
	da, db := a.Derived("_pending_idx"), b.Derived("_pending_idx")
	if len(da) != 63 || len(db) != 63 || da == db || !strings.HasSuffix(da, "_pending_idx") {
		t.Errorf("Derived of long names = %s (%d), %s (%d); want two 63-byte names ending _pending_idx", da, len(da), db, len(db))
	}
}

func TestDialect(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
	if got := sqldb.Postgres.Placeholder(3); got != "$3" {
		t.Errorf("Postgres.Placeholder(3) = %s", got)
	}
	if got := sqldb.SQLite.Placeholder(3); got != "?" {
		t.Errorf("SQLite.Placeholder(3) = %s", got)
	}
	if got := sqldb.Postgres.Time(at); got != at.UTC() {
		t.Errorf("Postgres.Time = %v, want %v", got, at.UTC())
	}
	if got := sqldb.SQLite.Time(at); got != at.UnixMilli() {
		t.Errorf("SQLite.Time = %v, want %d", got, at.UnixMilli())
	}
	if sqldb.Postgres.TimeType() != "timestamptz" || sqldb.SQLite.TimeType() != "INTEGER" {
		t.Errorf("TimeType = %s, %s", sqldb.Postgres.TimeType(), sqldb.SQLite.TimeType())
	}
	if got := sqldb.Postgres.BusyTimeout(time.Second); got != nil {
		t.Errorf("Postgres.BusyTimeout = %q, want none", got)
	}
	if got := sqldb.SQLite.BusyTimeout(1500 * time.Millisecond); len(got) != 1 || got[0] != "PRAGMA busy_timeout = 1500" {
		t.Errorf("SQLite.BusyTimeout = %q", got)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Dialect.Check") {
			t.Errorf("Placeholder of an unknown dialect: recovered %v, want a panic pointing at Dialect.Check", r)
		}
	}()
	sqldb.Dialect("mysql").Placeholder(1)
}
