package outbox

import (
	"fmt"
	"strconv"
	"time"

	"github.com/warrenbus/warren/internal/sqltable"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Dialect names the SQL flavour of an outbox table: [Postgres] or [SQLite].
// It is [sqldb.Dialect], shared with runtime/idempotency so that one value
// configures both tables of a service; the alias keeps outbox.Postgres
// working. What differs between the dialects (placeholders, how times are
// stored, which migration applies, how the relay locks the rows it claims)
// lives behind it, so that [Outbox] and [Relay] are written once.
type Dialect = sqldb.Dialect

// The dialects an outbox speaks.
const (
	// Postgres is PostgreSQL, used through pgx's database/sql driver
	// (github.com/jackc/pgx/v5/stdlib) or natively (runtime/sqldb/pgxdb).
	// The relay claims rows with FOR UPDATE SKIP LOCKED, so any number of
	// relays, in any number of processes, share one table without
	// publishing a row twice at once.
	Postgres = sqldb.Postgres
	// SQLite is SQLite, used through the pure-Go driver modernc.org/sqlite.
	// Times are stored in Unix milliseconds (INTEGER). SQLite has one writer
	// at a time: the relay holds the write lock while it publishes a batch,
	// so writers wait for it (up to their busy timeout), and a second relay
	// on the same file only takes turns with the first. Run one relay per
	// database file.
	SQLite = sqldb.SQLite
)

// dialect is what a [Dialect] does differently.
type dialect struct {
	// placeholder renders the n-th (1-based) statement parameter.
	placeholder func(n int) string
	// stamp converts a time into the value stored in a time column.
	stamp func(t time.Time) any
	// qualified reports whether a table name may carry a schema ("schema.table").
	qualified bool
	// migrations is the directory of the dialect's scripts inside [migrations].
	migrations string
	// migrateLock, taking the table name as its parameter, serialises
	// concurrent migrations; "" when the database does so by itself.
	migrateLock string
	// txSetup returns the statements that open every relay transaction,
	// given the relay's configuration; nil when there are none.
	txSetup func(cfg RelayConfig) []string
	// lockTable, given the quoted table, takes the lock that makes a claim
	// exclusive before the claim reads; "" when the claim's own SELECT does.
	lockTable func(table string) string
	// claimSuffix ends the claim's SELECT: the row locking clause.
	claimSuffix string
}

var dialects = map[Dialect]dialect{
	Postgres: {
		placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		stamp:       func(t time.Time) any { return t.UTC() },
		qualified:   true,
		migrations:  "migrations/postgres",
		migrateLock: "SELECT pg_advisory_xact_lock(hashtext($1))",
		// Rows another relay has claimed are skipped, not waited for: each
		// relay takes the oldest rows nobody holds.
		claimSuffix: " FOR UPDATE SKIP LOCKED",
	},
	SQLite: {
		placeholder: func(int) string { return "?" },
		stamp:       func(t time.Time) any { return t.UnixMilli() },
		migrations:  "migrations/sqlite",
		txSetup: func(cfg RelayConfig) []string {
			return []string{fmt.Sprintf("PRAGMA busy_timeout = %d", cfg.BusyTimeout.Milliseconds())}
		},
		// A transaction begun by database/sql is DEFERRED: it would read
		// under a shared lock and try to upgrade when it deletes, which
		// fails at once (SQLITE_BUSY_SNAPSHOT in WAL mode) if anyone wrote
		// in between, after the batch was published. A write statement,
		// even one that touches no row, takes the write lock first.
		lockTable: func(table string) string { return "UPDATE " + table + " SET attempts = attempts WHERE 0" },
	},
}

// lookup returns what d does, or an error naming the accepted dialects.
func lookup(d Dialect) (dialect, error) {
	if err := d.Check("outbox"); err != nil {
		return dialect{}, err
	}
	return dialects[d], nil
}

// maxTableName is PostgreSQL's identifier limit.
const maxTableName = 63

// parseTable checks that table is a safe table name for d.
func parseTable(d Dialect, table string) (sqltable.Name, error) {
	impl, err := lookup(d)
	if err != nil {
		return sqltable.Name{}, err
	}
	return sqltable.Parse(table, d.String(), impl.qualified, maxTableName)
}
