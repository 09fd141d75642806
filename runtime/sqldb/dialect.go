// Package sqldb is what warren's SQL tables (the idempotency guard's
// claims, the outbox) share: the [Dialect] of the database they live in,
// and the small interfaces through which they use a transaction, so that
// the same code runs over database/sql and over pgx (runtime/sqldb/pgxdb).
package sqldb

import "fmt"

// Dialect names the SQL flavour of a database: [Postgres] or [SQLite].
type Dialect string

// The dialects warren's tables speak.
const (
	// Postgres is PostgreSQL, through pgx: its database/sql driver
	// (github.com/jackc/pgx/v5/stdlib) or natively (runtime/sqldb/pgxdb).
	Postgres Dialect = "postgres"
	// SQLite is SQLite, through the pure-Go driver modernc.org/sqlite.
	// Times are stored in Unix milliseconds (INTEGER), which compare
	// correctly whatever time format the driver is configured with.
	SQLite Dialect = "sqlite"
)

// String returns the dialect's name, "postgres" or "sqlite".
func (d Dialect) String() string { return string(d) }

// Check reports a dialect that is empty or unknown; pkg names the package
// whose constants the error suggests ("outbox" suggests outbox.Postgres).
func (d Dialect) Check(pkg string) error {
	switch d {
	case Postgres, SQLite:
		return nil
	case "":
		return fmt.Errorf("no dialect: expected %[1]s.Postgres or %[1]s.SQLite", pkg)
	}
	return fmt.Errorf("dialect %q: expected %[2]s.Postgres or %[2]s.SQLite", string(d), pkg)
}
