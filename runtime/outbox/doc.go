// Package outbox publishes a fact if and only if the database transaction
// that reports it commits: the transactional outbox.
//
// Publishing straight from a handler or a request leaves two failures
// open: the transaction commits and the process dies before the publish (a
// change nobody hears of), or the publish succeeds and the transaction
// rolls back (a fact about a change that never happened). With an outbox
// the fact is a row written in the business transaction by
// [Outbox.Write]; a [Relay] publishes the committed rows afterwards, with
// the envelope and message id that Write made, and deletes each row once
// the broker has confirmed it.
//
// # Writing
//
// A generated package has a typed writer, one method per fact, and a relay
// constructor bound to its events exchange:
//
//	w, err := catalogueevents.NewOutboxWriter(outbox.Config{Dialect: outbox.Postgres})
//	err = w.Outbox().Migrate(ctx, db) // or apply outbox.MigrationSQL with your migration tool
//
//	tx, err := db.BeginTx(ctx, nil)
//	_, err = tx.ExecContext(ctx, `UPDATE orders SET state = 'placed' WHERE id = $1`, orderID)
//	id, err := w.WriteOrderPlaced(ctx, tx, catalogueevents.OrderPlaced{OrderID: orderID})
//	err = tx.Commit() // the fact is published after this, or never
//
// Each Write method validates the payload against the fact's schema first:
// an invalid payload is an error and writes nothing. [Outbox.Write] is the
// untyped form they call. The transaction is a *sql.Tx, or a pgx.Tx wrapped
// by pgxdb.Tx (runtime/sqldb/pgxdb).
//
// # Relaying
//
// A relay runs beside the service (or in a process of its own):
//
//	relay, err := catalogueevents.NewOutboxRelay(pgxdb.FromSQL(db), conn, outbox.RelayConfig{Dialect: outbox.Postgres})
//	go relay.Run(ctx)
//
// [NewRelay] and [NewRelayDB] make one over any publisher.
//
// Each round claims up to BatchSize due rows in id order, publishes them
// with publisher confirms (Concurrency of them in flight at once), deletes
// the confirmed ones and records the failure on the others, in the
// transaction that claimed them; Run repeats at once while there is a
// backlog and every PollInterval otherwise. [Relay.RelayOnce] runs a single
// round, for tests and for programs that schedule relaying themselves.
//
// # Guarantees
//
//   - Published if and only if committed: a rolled-back transaction leaves
//     no row, and a committed row stays until the broker has confirmed its
//     fact.
//   - Same envelope, same id: the relay publishes the bytes Write stored;
//     the message id returned by Write is the one consumers see.
//   - At least once, not exactly once: if the relay dies, or its database
//     fails, between the broker's confirm and the commit that deletes the
//     row, the fact is published again by a later round. Consumers
//     deduplicate by message id, which runtime/idempotency's guard does.
//   - Nothing is dropped: a fact the broker refuses, or that reaches no
//     queue ([runtime.ErrUnroutable], when no consumer is bound to its
//     routing key yet), stays in the table with attempts, last_error and
//     last_attempt_at filled in, is counted ([Relay.Stats]) and logged, and
//     is tried again after RetryMin, doubling up to RetryMax. To let the
//     broker drop facts nobody consumes yet, give the relay a publisher
//     made with [runtime.AllowUnroutable].
//   - Several relays on PostgreSQL (in one process or many) share the
//     table: the claim uses FOR UPDATE SKIP LOCKED, so no row is claimed by
//     two relays at once and each takes the oldest rows the others do not
//     hold.
//
// # Order
//
// Rows are claimed oldest id first, and ids are UUIDv7, ordered by the
// writing process's clock (strictly, within one process). That is the whole
// ordering promise:
//   - Within a batch, publishes are pipelined, so the broker may receive
//     them in any order. With Concurrency 1 a relay publishes one fact
//     after the other, in id order.
//   - A fact whose publish failed waits for its retry while newer facts go
//     ahead, so one stuck fact never holds up the rest.
//   - Several relays publish their batches side by side, in no order
//     relative to each other; a redelivery or a retry on the consumer side
//     reorders again.
//
// Consumers that need order per entity must carry a version or sequence in
// the payload and check it.
//
// # SQLite
//
// The [SQLite] dialect works with modernc.org/sqlite (pure Go, no cgo).
// SQLite has one writer at a time, and the relay holds the write lock from
// its claim to its commit, which includes publishing the batch: business
// transactions writing to the same file wait for it, up to their own busy
// timeout (open the database with "?_pragma=busy_timeout(5000)"). A batch
// of 500, the default, holds it for some tens of milliseconds against a
// local broker; lower BatchSize if writers must wait less. Run one relay
// per database file:
// a second one only takes turns with the first. Use a database file, never
// ":memory:", where every pooled connection gets its own empty database.
//
// # Watching the backlog
//
// The table is the outbox's state: its row count is the backlog, and rows
// with attempts > 0 are facts that failed to publish, with the reason:
//
//	SELECT routing_key, count(*), max(attempts), min(created_at) FROM warren_outbox GROUP BY routing_key;
//	SELECT id, routing_key, attempts, last_error FROM warren_outbox WHERE attempts > 0 ORDER BY id;
package outbox
