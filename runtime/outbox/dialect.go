package outbox

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
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
	// stampType is the SQL type of a time column.
	stampType string
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
	// applied reports that a migration script failed because it was
	// applied before; nil when every script says IF NOT EXISTS itself.
	applied func(error) bool
	// notify: Write sends a NOTIFY on the table's channel, delivered when
	// the transaction commits, and the relay LISTENs for it.
	notify bool
	// wakeOnWrite: Write wakes the relays of its table in this process. On
	// SQLite the woken claim waits for the writer's lock, so it runs once
	// the writer has committed (or rolled back).
	wakeOnWrite bool
}

var dialects = map[Dialect]dialect{
	Postgres: {
		placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		stamp:       func(t time.Time) any { return t.UTC() },
		stampType:   "timestamptz",
		qualified:   true,
		migrations:  "migrations/postgres",
		migrateLock: "SELECT pg_advisory_xact_lock(hashtext($1))",
		// Rows another relay has claimed are skipped, not waited for: each
		// relay takes the oldest rows nobody holds.
		claimSuffix: " FOR UPDATE SKIP LOCKED",
		notify:      true,
	},
	SQLite: {
		placeholder: func(int) string { return "?" },
		stamp:       func(t time.Time) any { return t.UnixMilli() },
		stampType:   "INTEGER",
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
		applied: func(err error) bool {
			return strings.Contains(err.Error(), "duplicate column name")
		},
		wakeOnWrite: true,
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

// seqTable is the quoted name of the table of per-key counters, beside
// the outbox table (in its schema).
func seqTable(t sqltable.Name) string {
	name := sqltable.Derived(t, "_seq")
	if t.Schema != "" {
		return sqltable.Quote(t.Schema) + "." + name
	}
	return name
}

// pendingIndex is the quoted name of the index of pending rows.
func pendingIndex(t sqltable.Name) string { return sqltable.Derived(t, "_pending_idx") }

// channel is the PostgreSQL notification channel of table t: its name,
// shortened to the 63-byte identifier limit when it is longer.
func channel(t sqltable.Name) string {
	name := "warren_outbox." + t.String()
	if len(name) > 63 {
		h := fnv.New32a()
		h.Write([]byte(name))
		name = fmt.Sprintf("%s_%08x", name[:54], h.Sum32())
	}
	return name
}
