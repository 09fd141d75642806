package idempotency

import (
	"fmt"
	"strconv"
	"time"

	"github.com/warrenbus/warren/internal/sqltable"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Dialect names the SQL flavour of a claims store: [Postgres] or [SQLite].
// It is [sqldb.Dialect], shared with runtime/outbox so that one value
// configures both tables of a service; the alias keeps
// idempotency.Postgres working. What differs between the dialects
// (placeholders, how a claim's time is stored, which migration applies, how
// a writer waits for another) lives behind it, so that [SQLGuard] itself is
// written once.
type Dialect = sqldb.Dialect

// The dialects an [SQLGuard] speaks.
const (
	// Postgres is PostgreSQL, used through pgx's database/sql driver
	// (github.com/jackc/pgx/v5/stdlib) or natively (runtime/sqldb/pgxdb).
	// Claims are stamped as timestamptz.
	Postgres = sqldb.Postgres
	// SQLite is SQLite, used through the pure-Go driver modernc.org/sqlite.
	// Claims are stamped in Unix milliseconds (INTEGER), which compare
	// correctly whatever time format the driver is configured with.
	//
	// SQLite has one writer at a time: a claim's transaction holds the
	// database's write lock while the handler runs, so guarded handlers on
	// one SQLite file run one after another whatever the consumer's
	// concurrency. A claim waits up to [SQLConfig.BusyTimeout] for the
	// writer ahead of it; set in every transaction the guard opens, that
	// wait makes concurrent duplicate claims safe: the second claim runs
	// once the first transaction has ended and then sees its outcome. A
	// wait that runs out is a store error, so the consumer retries the
	// message later. See the package documentation for the other caveats.
	SQLite = sqldb.SQLite
)

// dialect is what a [Dialect] does differently.
type dialect struct {
	// placeholder renders the n-th (1-based) statement parameter.
	placeholder func(n int) string
	// stamp converts a claim time into the value stored in claimed_at.
	stamp func(t time.Time) any
	// qualified reports whether a table name may carry a schema ("schema.table").
	qualified bool
	// migrations is the directory of the dialect's scripts inside [migrations].
	migrations string
	// txSetup returns statements run first in every transaction the guard
	// opens, given the configuration; nil when there are none.
	txSetup func(cfg SQLConfig) []string
	// migrateLock, taking the table name as its parameter, serialises
	// concurrent migrations; "" when the database does so by itself.
	migrateLock string
}

var dialects = map[Dialect]dialect{
	Postgres: {
		placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		stamp:       func(t time.Time) any { return t.UTC() },
		qualified:   true,
		migrations:  "migrations/postgres",
		migrateLock: "SELECT pg_advisory_xact_lock(hashtext($1))",
	},
	SQLite: {
		placeholder: func(int) string { return "?" },
		stamp:       func(t time.Time) any { return t.UnixMilli() },
		migrations:  "migrations/sqlite",
		txSetup: func(cfg SQLConfig) []string {
			return []string{fmt.Sprintf("PRAGMA busy_timeout = %d", cfg.BusyTimeout.Milliseconds())}
		},
	},
}

// lookup returns what d does, or an error naming the accepted dialects.
func lookup(d Dialect) (dialect, error) {
	if err := d.Check("idempotency"); err != nil {
		return dialect{}, err
	}
	return dialects[d], nil
}

// maxTableName keeps the derived index name ("<table>_claimed_at_idx")
// within PostgreSQL's 63-byte identifier limit.
const maxTableName = 48

// parseTable checks that table is a safe table name for d.
func parseTable(d Dialect, table string) (sqltable.Name, error) {
	impl, err := lookup(d)
	if err != nil {
		return sqltable.Name{}, err
	}
	return sqltable.Parse(table, d.String(), impl.qualified, maxTableName)
}

// indexName is the quoted name of the index on claimed_at. An index lives
// in its table's schema, so its name is never qualified.
func indexName(t sqltable.Name) string { return sqltable.Quote(t.Table + "_claimed_at_idx") }
