package outbox

import (
	"fmt"
	"hash/fnv"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// Dialect names the SQL flavour of an outbox table: [Postgres] or [SQLite].
// It is [sqldb.Dialect], shared with runtime/idempotency so that one value
// configures both tables of a service; the alias keeps outbox.Postgres
// working. What differs between the dialects (placeholders, how times are
// stored, how the relay locks the rows it claims, how it learns of new
// ones) lives behind it, so that [Outbox] and [Relay] are written once.
type Dialect = sqldb.Dialect

// The dialects an outbox speaks.
const (
	// Postgres is PostgreSQL, used through pgx's database/sql driver
	// (github.com/jackc/pgx/v5/stdlib) or natively (runtime/sqldb/pgxdb).
	// Relays of one table, in any number of processes, take turns: each
	// round holds a transaction-scoped advisory lock named after the table
	// from its claim to its commit, so one relay at a time publishes, and a
	// key's facts leave in order whichever relay sends them. A relay that
	// dies releases the lock with its connection, and the next one takes
	// over with the next round.
	Postgres = sqldb.Postgres
	// SQLite is SQLite, used through the pure-Go driver modernc.org/sqlite.
	// Times are stored in Unix milliseconds (INTEGER). SQLite has one writer
	// at a time: the relay holds the write lock while it publishes a batch,
	// so writers wait for it (up to their busy timeout), and a second relay
	// on the same file only takes turns with the first. Run one relay per
	// database file.
	SQLite = sqldb.SQLite
)

// dialect is what a [Dialect] does differently in an outbox, beside what
// every table of warren's does differently (its [sqldb.Dialect] methods).
type dialect struct {
	sqldb.Dialect
	// lockTable, given the quoted table, takes the lock that makes a claim
	// exclusive before the claim reads; "" when the claim's own SELECT does.
	lockTable func(table string) string
	// claimSuffix ends the claim's SELECT: the row locking clause.
	claimSuffix string
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
		Dialect: Postgres,
		// Relays sharing the table take turns, a round each: two rounds
		// side by side would send their batches interleaved, and a key's
		// later fact, claimed by one relay, could reach the broker before
		// its earlier one, claimed by the other. Two rounds at once were
		// no faster than one (docs/BENCHMARKS.md, "Outbox"). The lock ends
		// with the transaction, or with the connection of a relay that
		// died.
		lockTable: advisoryLock,
		// Rows held otherwise (by an operator's statement, or a relay of an
		// older release that takes no advisory lock) are skipped, not
		// waited for.
		claimSuffix: " FOR UPDATE SKIP LOCKED",
		notify:      true,
	},
	SQLite: {
		Dialect: SQLite,
		// A transaction begun by database/sql is DEFERRED: it would read
		// under a shared lock and try to upgrade when it deletes, which
		// fails at once (SQLITE_BUSY_SNAPSHOT in WAL mode) if anyone wrote
		// in between, after the batch was published. A write statement,
		// even one that touches no row, takes the write lock first.
		lockTable:   func(table string) string { return "UPDATE " + table + " SET attempts = attempts WHERE 0" },
		wakeOnWrite: true,
	},
}

// advisoryLock is the statement that makes a PostgreSQL relay's round
// exclusive among the relays of table (quoted): a transaction-scoped
// advisory lock on a number made from the table's name, waited for.
func advisoryLock(table string) string {
	h := fnv.New64a()
	h.Write([]byte("warren_outbox." + table))
	return fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", int64(h.Sum64()))
}

// channel is the PostgreSQL notification channel of table t: its name,
// shortened to the 63-byte identifier limit when it is longer.
func channel(t sqldb.Table) string {
	name := "warren_outbox." + t.String()
	if len(name) > 63 {
		h := fnv.New32a()
		h.Write([]byte(name))
		name = fmt.Sprintf("%s_%08x", name[:54], h.Sum32())
	}
	return name
}
