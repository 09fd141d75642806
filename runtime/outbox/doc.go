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
// backlog. Otherwise it waits for a commit to wake it (PostgreSQL
// LISTEN/NOTIFY over runtime/sqldb/pgxdb; on SQLite, a Write in the same
// process), or for PollInterval, the fallback. [Relay.RelayOnce] runs a
// single round, for tests and for programs that schedule relaying
// themselves.
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
//   - Bounded, never dropped: a fact the broker refuses (nacks, or routes
//     to no queue: [runtime.ErrUnroutable]) or that fails its schema
//     (RelayConfig.Facts) stays in the table with attempts, last_error and
//     last_attempt_at filled in, is counted ([Relay.Stats]) and logged, and
//     is tried again after RetryMin, doubling up to RetryMax. After
//     MaxAttempts refusals (20 by default, about a quarter of an hour) it
//     is marked failed (failed_at) and waits for an operator: warren outbox
//     retry ([Outbox.Retry]) makes it pending again, warren outbox discard
//     ([Outbox.Discard]) gives it up, both with a reason kept in the row's
//     note. A publish that fails because the broker is unreachable costs no
//     attempt. To let the broker drop facts nobody consumes yet, give the
//     relay a publisher made with [runtime.AllowUnroutable].
//   - Published rows are deleted at once by default (RelayConfig.KeepPublished
//     keeps them for a while), so the table holds the backlog and little
//     else; discarded rows are kept KeepDiscarded (7 days) with their
//     reason. Run prunes both.
//   - Quiet outages: while the database or the broker is down, the relay
//     logs one record when the outage starts and one when it ends, with
//     its duration, the rounds that failed and the facts held back. While
//     its broker cannot take a publish, a relay claims nothing (a round
//     under way gives up its unsent facts after 2s), so it holds no rows,
//     no turn of the other relays and, on SQLite, not the write lock the
//     business transactions need.
//   - Several relays on PostgreSQL (in one process or many) share the
//     table by taking turns: a round holds a transaction-scoped advisory
//     lock named after the table from its claim to its commit, so one
//     relay publishes at a time and the next claims only rows its
//     predecessor did not publish. A relay that dies releases the lock
//     with its connection; the others go on. Two rounds side by side were
//     no faster than one (the broker and the confirms are the limit), so
//     the extra relays are standbys that cost nothing.
//
// # Order
//
// A relay publishes in commit order, in this sense: a claim takes every
// pending row committed before it, so rows committed before a round's
// claim are sent before rows committed after it; rows that became visible
// to the same claim are sent in id order. Ids are UUIDv7, made by Write,
// ordered by the writing process's clock (strictly, within one process),
// so rows of one process's transactions that commit together go out in
// the order they were written. The sends of a batch go out one after the
// other on the publisher's channel, with up to Concurrency awaiting their
// confirms, so the broker receives them in that order. The exceptions:
//   - A fact whose publish was refused waits for its retry while newer
//     facts go ahead, so one stuck fact never holds up the rest; but not
//     the newer facts of its own ordering key, which wait with it (below).
//   - A key has one publish in flight at a time: its next fact is sent
//     once the broker confirmed the one before, so facts of other keys, and
//     facts without a key, may pass it.
//   - A publish whose channel was lost before its confirm is sent again on
//     the next channel, after later ones (never after later ones of its
//     key, which wait for its confirm).
//   - A redelivery or a retry on the consumer side reorders again (an
//     ordered consumer retries in place instead).
//
// Per ordering key the order holds whatever fails. Each row stores its key
// (ordering_key). When a fact of a key is refused or not confirmed, the
// key's later facts in the batch are not sent, and cost no attempt; the
// claims after leave them out while the earlier fact is unsent: waiting
// for its retry, or marked failed, until an operator retries or discards
// it. Rows written before the ordering_key column carry no key and are
// never held; a scheduled fact not yet due holds nothing.
//
// Several relays keep this order: they take turns, a round each, and a
// round claims only after the previous one committed.
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
// per database file: a second one only takes turns with the first. Use a
// database file, never ":memory:", where every pooled connection gets its
// own empty database.
//
// A Write wakes the relays of its table in the same process at once; the
// woken claim waits for the writer's lock, so it runs when the writer
// commits. A writer that keeps its transaction open longer than the
// relay's BusyTimeout after Write has its fact published at the next poll.
//
// # Watching the backlog
//
// warren outbox status prints the pending, retrying and failed rows and
// the age of the oldest pending one ([Outbox.Status]); warren outbox failed
// lists the failed rows with their errors. In SQL:
//
//	SELECT routing_key, count(*), max(attempts), min(created_at) FROM warren_outbox WHERE failed_at IS NULL AND published_at IS NULL AND discarded_at IS NULL GROUP BY routing_key;
//	SELECT id, routing_key, attempts, last_error FROM warren_outbox WHERE failed_at IS NOT NULL AND discarded_at IS NULL ORDER BY id;
package outbox
