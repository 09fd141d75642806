// Package idempotency makes handling a message twice harmless. At-least-once
// delivery means every handler will one day see the same message again (an
// ack lost with a connection, a redelivery after a crash); a guard remembers
// which (message id, consumer) pairs were handled and skips the repeats.
//
// [SQLGuard] is the one to use in production. It inserts the claim and runs
// the handler's own database work in one transaction: a unique key on
// (message_id, consumer) is the whole mechanism, so a claim is never
// committed for work that did not commit, and concurrent duplicates on
// different workers or hosts are decided by the database. [MemoryGuard] has
// the same semantics without the database, for tests and single-process use.
//
// # Using a guard
//
// Create the table once, then hand the guard to a consumer:
//
//	db, err := sql.Open("pgx", dsn) // import _ "github.com/jackc/pgx/v5/stdlib"
//	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.Postgres})
//	err = guard.Migrate(ctx) // or apply idempotency.MigrationSQL with your migration tool
//	consumer, err := catalogueevents.NewSearchIndexerConsumer(conn, h, runtime.WithGuard(guard))
//
// Migrate also creates "<table>_parked", where an SQLGuard keeps the
// parked ordering keys of ordered consumers with onPoison park
// ([runtime.ParkStore]; see park.go).
//
// A handler writes through the claim's transaction, found with [Tx]:
//
//	func (h *Indexer) HandleImportCompleted(ctx context.Context, d runtime.Delivery, f ImportCompleted) error {
//		tx, ok := idempotency.Tx(ctx)
//		if !ok {
//			return runtime.Permanent(errors.New("search-indexer needs an SQL idempotency guard"))
//		}
//		_, err := tx.ExecContext(ctx, `INSERT INTO imports (id, rows) VALUES ($1, $2)`, f.ImportID, f.Rows)
//		return err
//	}
//
// Writes made outside that transaction (another *sql.DB call, an e-mail, an
// HTTP request) are not undone when the handler fails, and may happen again
// if the message is retried.
//
// # pgx
//
// Services that use pgx directly hand the guard a pool through
// runtime/sqldb/pgxdb; the claim is then a pgx transaction, and the handler
// gets it back as one:
//
//	guard, err := idempotency.NewSQLGuardDB(pgxdb.FromPool(pool), idempotency.SQLConfig{Dialect: idempotency.Postgres})
//	// in the handler:
//	tx, ok := idempotency.TxAs[pgx.Tx](ctx)
//	_, err := tx.Exec(ctx, `INSERT INTO imports (id, rows) VALUES ($1, $2)`, f.ImportID, f.Rows)
//
// # Pruning old claims
//
// Claims are kept until pruned. Keep them longer than a message can come
// back: the retry ladder, plus however long a message may wait in a queue or
// the poison lane before it is replayed. [DefaultRetention] is 7 days. Prune
// from inside the service with [PruneEvery]:
//
//	go idempotency.PruneEvery(ctx, guard, time.Hour, idempotency.DefaultRetention, func(err error) {
//		logger.Warn("prune idempotency claims", "err", err)
//	})
//
// or from cron, straight in the database (claimed_at is a timestamptz on
// PostgreSQL, Unix milliseconds on SQLite):
//
//	# m h dom mon dow  command
//	17 * * * *  psql "$DATABASE_URL" -c "DELETE FROM warren_idempotency WHERE claimed_at < now() - interval '7 days'"
//	17 * * * *  sqlite3 /var/lib/shop/shop.db "DELETE FROM warren_idempotency WHERE claimed_at < (strftime('\%s','now') - 7*86400) * 1000"
//
// (cron treats an unescaped % as a newline, hence the backslash).
//
// # SQLite
//
// The [SQLite] dialect works with modernc.org/sqlite (pure Go, no cgo), with
// these caveats:
//   - Use a database file, never ":memory:": every pooled connection would
//     get its own empty in-memory database.
//   - SQLite has a single writer. A claim's transaction holds the write lock
//     while its handler runs, so guarded handlers run one at a time per
//     database file, whatever the consumer's concurrency.
//   - A claim waits for the writer ahead of it up to [SQLConfig.BusyTimeout]
//     (set with PRAGMA busy_timeout in every transaction the guard opens).
//     A handler that holds the lock longer makes the claims behind it fail;
//     those messages are retried later, not lost.
//   - Write-ahead logging (open with "?_pragma=journal_mode(WAL)") lets
//     readers run while a handler writes; it is not required.
//   - A handler must write only through [Tx]: a write through the *sql.DB
//     itself would wait for the lock that the handler's own claim holds,
//     until the busy timeout.
package idempotency
