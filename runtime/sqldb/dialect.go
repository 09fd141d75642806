// Package sqldb is what warren's SQL tables (the idempotency guard's
// claims, the outbox) share: the [Dialect] of the database they live in,
// the [Kind] of each table with the scripts that create it and [Migrate]
// that runs them, and the small interfaces through which the tables use a
// transaction, so that the same code runs over database/sql and over pgx
// (runtime/sqldb/pgxdb).
package sqldb

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Dialect names the SQL flavour of a database: [Postgres] or [SQLite].
// What differs between them (placeholders, how a time is stored, how a
// writer waits for another, how a migration is serialised) lives behind
// its methods, so that each table's code is written once.
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

// flavour is what a [Dialect] does differently.
type flavour struct {
	placeholder func(n int) string
	time        func(t time.Time) any
	timeType    string
	// qualified reports whether a table name may carry a schema ("schema.table").
	qualified bool
	// busyTimeout returns the statements that make a transaction wait for
	// another writer; nil when the database waits by itself.
	busyTimeout func(timeout time.Duration) []string
	// migrateLock, taking a key as its parameter, serialises concurrent
	// migrations; "" when the database does so by itself.
	migrateLock string
	// applied reports that a migration script failed because it was
	// applied before; nil when every script can say IF NOT EXISTS.
	applied func(err error) bool
}

var flavours = map[Dialect]flavour{
	Postgres: {
		placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		time:        func(t time.Time) any { return t.UTC() },
		timeType:    "timestamptz",
		qualified:   true,
		migrateLock: "SELECT pg_advisory_xact_lock(hashtext($1))",
	},
	SQLite: {
		placeholder: func(int) string { return "?" },
		time:        func(t time.Time) any { return t.UnixMilli() },
		timeType:    "INTEGER",
		busyTimeout: func(timeout time.Duration) []string {
			return []string{fmt.Sprintf("PRAGMA busy_timeout = %d", timeout.Milliseconds())}
		},
		// SQLite has no ADD COLUMN IF NOT EXISTS: a script adding a column
		// that is there already fails, and was applied before.
		applied: func(err error) bool {
			return strings.Contains(err.Error(), "duplicate column name")
		},
	},
}

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

// flavour returns what d does. A dialect is checked where it is
// configured, so an unknown one here is a bug of warren's, not of the
// configuration.
func (d Dialect) flavour() flavour {
	f, ok := flavours[d]
	if !ok {
		panic(fmt.Sprintf("sqldb: dialect %q used unchecked: call Dialect.Check first", string(d)))
	}
	return f
}

// Placeholder returns the n-th (1-based) parameter of a statement: $n on
// PostgreSQL, ? on SQLite. Like the other methods that tell how d writes
// SQL, it panics on a dialect that [Dialect.Check] refuses.
func (d Dialect) Placeholder(n int) string { return d.flavour().placeholder(n) }

// Time returns the value that stores t in a time column ([Dialect.TimeType]):
// t in UTC on PostgreSQL, its Unix milliseconds on SQLite.
func (d Dialect) Time(t time.Time) any { return d.flavour().time(t) }

// TimeType returns the SQL type of a time column: timestamptz on
// PostgreSQL, INTEGER (Unix milliseconds) on SQLite.
func (d Dialect) TimeType() string { return d.flavour().timeType }

// BusyTimeout returns the statements that make a transaction wait up to
// timeout for another writer's lock instead of failing at once: a PRAGMA
// on SQLite, which has one writer at a time; none on PostgreSQL, whose
// writers wait for each other's rows by themselves. Run them first in each
// transaction (see [WithSetup]): the setting belongs to a connection, and
// a pool may hand out any of its connections.
func (d Dialect) BusyTimeout(timeout time.Duration) []string {
	if f := d.flavour(); f.busyTimeout != nil {
		return f.busyTimeout(timeout)
	}
	return nil
}
