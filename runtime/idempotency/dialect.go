package idempotency

import "github.com/warrenbus/warren/runtime/sqldb"

// Dialect names the SQL flavour of a claims store: [Postgres] or [SQLite].
// It is [sqldb.Dialect], shared with runtime/outbox so that one value
// configures both tables of a service; the alias keeps
// idempotency.Postgres working. What differs between the dialects
// (placeholders, how a claim's time is stored, how a writer waits for
// another) lives behind its methods, so that [SQLGuard] itself is written
// once.
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
