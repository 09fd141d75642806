package testenv

import (
	"database/sql"
	"strings"
	"testing"
)

// TableName returns a table name of one test alone: Name made a safe SQL
// identifier.
func TableName(prefix string) string {
	return strings.ReplaceAll(Name(prefix), "-", "_")
}

// OpenDB opens a database/sql pool of driver over dsn that is closed when
// the test ends.
func OpenDB(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// DropTable drops table from db when the test ends.
func DropTable(t testing.TB, db *sql.DB, table string) {
	t.Cleanup(func() {
		if _, err := db.Exec(`DROP TABLE IF EXISTS "` + table + `"`); err != nil {
			t.Errorf("drop table %s: %v", table, err)
		}
	})
}
