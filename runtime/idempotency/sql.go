package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// DefaultTable is the claims table's name when [SQLConfig.Table] is empty.
const DefaultTable = "warren_idempotency"

// DefaultBusyTimeout is how long a claim on SQLite waits for another writer
// when [SQLConfig.BusyTimeout] is zero.
const DefaultBusyTimeout = 5 * time.Second

// pruneBatch bounds the rows one prune statement deletes, so a large backlog
// of old claims never holds locks (on SQLite: the only write lock) for long.
const pruneBatch = 5000

// SQLConfig configures an [SQLGuard].
type SQLConfig struct {
	Dialect     Dialect            // Postgres or SQLite; required
	Table       string             // claims table, lower-case, "schema.table" allowed on PostgreSQL; default DefaultTable
	Isolation   sql.IsolationLevel // isolation of the claim's transaction; default the database's (READ COMMITTED on PostgreSQL)
	BusyTimeout time.Duration      // SQLite: how long a claim waits for another writer; default DefaultBusyTimeout
	Now         func() time.Time   // clock that stamps claims and dates Prune's window; default time.Now
}

func (c *SQLConfig) setDefaults() {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports a configuration that cannot work: no or an unknown
// dialect, an unsafe table name, a negative busy timeout.
func (c SQLConfig) Validate() error {
	if _, err := claims.Table(c.Dialect, c.Table); err != nil {
		return err
	}
	if c.BusyTimeout < 0 {
		return fmt.Errorf("busy timeout %s: expected zero (default) or more", c.BusyTimeout)
	}
	return nil
}

// SQLGuard is a guard whose claims are rows in a database table (see
// [MigrationSQL]). Its Run opens a transaction, inserts the claim, runs the
// handler with the transaction in its context ([Tx]) and commits only if
// the handler succeeds, so the claim and the handler's own writes are kept
// or discarded together. The table's primary key on (message_id, consumer)
// decides between concurrent duplicates, across processes and hosts.
//
// An SQLGuard is safe for concurrent use. It implements the runtime's Guard
// interface (pass it to runtime.WithGuard) and [Pruner].
type SQLGuard struct {
	db      sqldb.DB // runs the dialect's setup first in every transaction
	dialect Dialect
	table   sqldb.Table
	txOpts  sqldb.TxOptions
	now     func() time.Time
	claim   string // inserts a claim; affects no row when it exists
	prune   string // deletes up to pruneBatch claims older than a time
}

// NewSQLGuard returns a guard over db, which must be opened with the driver
// of cfg.Dialect; handlers find the claim's *sql.Tx with [Tx]. It does not
// create the table: call [SQLGuard.Migrate] or apply [MigrationSQL] with
// your own migration tool.
func NewSQLGuard(db *sql.DB, cfg SQLConfig) (*SQLGuard, error) {
	if db == nil {
		return nil, errors.New("idempotency: NewSQLGuard: nil *sql.DB")
	}
	return NewSQLGuardDB(sqldb.FromSQL(db), cfg)
}

// NewSQLGuardDB is [NewSQLGuard] over any [sqldb.DB]: with
// pgxdb.FromPool(pool) the claims run in pgx transactions, which handlers
// find with TxAs[pgx.Tx].
func NewSQLGuardDB(db sqldb.DB, cfg SQLConfig) (*SQLGuard, error) {
	if db == nil {
		return nil, errors.New("idempotency: NewSQLGuardDB: nil sqldb.DB")
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("idempotency: NewSQLGuard: %w", err)
	}
	d := cfg.Dialect
	t, _ := claims.Table(d, cfg.Table) // checked by Validate
	// The busy timeout is set in every transaction the guard opens: it
	// belongs to a connection, and the pool hands out any of them.
	g := &SQLGuard{db: sqldb.WithSetup(db, d.BusyTimeout(cfg.BusyTimeout)...), dialect: d, table: t, now: cfg.Now}
	g.txOpts = sqldb.TxOptions{Isolation: cfg.Isolation}
	p := d.Placeholder
	// ON CONFLICT DO NOTHING (PostgreSQL 9.5+, SQLite 3.24+) turns a
	// duplicate into "0 rows affected" instead of an error, which would
	// abort a PostgreSQL transaction.
	g.claim = fmt.Sprintf("INSERT INTO %s (message_id, consumer, claimed_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
		t.Quoted(), p(1), p(2), p(3))
	g.prune = fmt.Sprintf("DELETE FROM %[1]s WHERE (message_id, consumer) IN (SELECT message_id, consumer FROM %[1]s WHERE claimed_at < %[2]s LIMIT %[3]d)",
		t.Quoted(), p(1), pruneBatch)
	return g, nil
}

// Table returns the claims table's name as configured.
func (g *SQLGuard) Table() string { return g.table.String() }

// Run claims (consumer, messageID) and, if the claim is new, calls fn with a
// context carrying the claim's transaction ([Tx]). The claim commits with
// fn's writes only if fn returns nil and ctx is still live.
//
//   - duplicate is true when the pair was claimed and committed before: fn
//     is not called. A claim still open in another transaction is waited
//     for (it may roll back, and then this call claims the pair).
//   - fn's error is returned as it is, after the claim and fn's writes are
//     rolled back, so errors.Is and errors.As see what fn meant (a permanent
//     failure stays permanent). If fn panics, the transaction is rolled back
//     and the panic goes on.
//   - Any other error comes from the store or from ctx (unreachable
//     database, failed begin, claim or commit) and wraps the cause: the
//     message was not handled and should be retried.
func (g *SQLGuard) Run(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error) {
	if err := checkKey(consumer, messageID); err != nil {
		return false, err
	}
	tx, err := g.db.BeginTx(ctx, g.txOpts)
	if err != nil {
		return false, claimError(ctx, "open claim transaction", consumer, messageID, fmt.Errorf("begin: %w", err))
	}
	settled := false
	defer func() {
		if !settled {
			// fn failed or panicked: discard the claim with fn's writes. A
			// failed rollback leaves nothing behind either: an uncommitted
			// transaction never becomes visible.
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	res, err := tx.ExecContext(ctx, g.claim, messageID, consumer, g.dialect.Time(g.now()))
	if err != nil {
		return false, claimError(ctx, "claim", consumer, messageID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, claimError(ctx, "claim", consumer, messageID, err)
	}
	if n == 0 {
		return true, nil
	}
	if err := fn(withTx(ctx, tx)); err != nil {
		return false, err
	}
	// database/sql rolls back a transaction whose context ends; check first,
	// so a cancelled claim reports ctx's error rather than ErrTxDone (and
	// pgx, which would still commit, behaves the same).
	if err := ctx.Err(); err != nil {
		return false, claimError(ctx, "commit claim", consumer, messageID, err)
	}
	settled = true
	if err := tx.Commit(ctx); err != nil {
		return false, claimError(ctx, "commit claim", consumer, messageID, err)
	}
	return false, nil
}

// Prune deletes claims made more than olderThan ago (DefaultRetention when
// olderThan is zero or negative) and returns how many it deleted. It deletes
// in batches, each its own short transaction, so it never blocks claims for
// long; if ctx ends or a batch fails, what was deleted so far stays deleted.
func (g *SQLGuard) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	cutoff := g.dialect.Time(g.now().Add(-retention(olderThan)))
	var total int64
	for {
		n, err := g.pruneBatch(ctx, cutoff)
		total += n
		if err != nil {
			return total, fmt.Errorf("idempotency: prune %s: %w", g.table, err)
		}
		if n < pruneBatch {
			return total, nil
		}
	}
}

func (g *SQLGuard) pruneBatch(ctx context.Context, cutoff any) (int64, error) {
	tx, err := g.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, g.prune, cutoff)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}
