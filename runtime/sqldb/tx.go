package sqldb

import (
	"context"
	"database/sql"
	"fmt"
)

// Execer runs one statement, the only thing writing a row into a
// caller's transaction needs. A *sql.Tx (or *sql.DB, *sql.Conn) is an
// Execer as it is; pgxdb.Tx makes one of a pgx.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Rows is the result of a query, read like *sql.Rows: Next, then Scan,
// until Next returns false; then Err; Close always.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Tx is a transaction that a [DB] began for one of warren's own tables.
// It is not safe for concurrent use.
type Tx interface {
	Execer
	QueryContext(ctx context.Context, query string, args ...any) (Rows, error)
	Commit(ctx context.Context) error
	// Rollback ends the transaction without keeping its writes. After
	// Commit it does nothing.
	Rollback(ctx context.Context) error
	// Native returns the driver's own transaction, of the kind the DB was
	// made from: a *sql.Tx from [FromSQL], a pgx.Tx from pgxdb.
	Native() any
}

// TxOptions are the options of a transaction a [DB] begins.
type TxOptions struct {
	Isolation sql.IsolationLevel // sql.LevelDefault: the database's own (READ COMMITTED on PostgreSQL)
}

// DB begins transactions. [FromSQL] makes one of a *sql.DB; pgxdb.FromPool
// of a pgxpool.Pool. A DB is safe for concurrent use.
type DB interface {
	BeginTx(ctx context.Context, opts TxOptions) (Tx, error)
}

// Listener is a [DB] that can wait for PostgreSQL notifications
// (LISTEN/NOTIFY). pgxdb's DBs are Listeners; a DB that is not gets polled.
type Listener interface {
	// Listen subscribes to channel on a connection of its own, which the
	// Subscription holds until it is closed.
	Listen(ctx context.Context, channel string) (Subscription, error)
}

// Subscription is a LISTEN on its own connection.
type Subscription interface {
	// Wait returns nil when a notification has arrived (several sent
	// before Wait count as one), ctx's error when it ends first, or the
	// connection's error when it fails; after an error, close the
	// Subscription and listen again.
	Wait(ctx context.Context) error
	Close() error
}

// FromSQL returns a DB over db, whose transactions are *sql.Tx.
func FromSQL(db *sql.DB) DB { return stdDB{db} }

type stdDB struct{ db *sql.DB }

func (d stdDB) BeginTx(ctx context.Context, opts TxOptions) (Tx, error) {
	var o *sql.TxOptions
	if opts.Isolation != sql.LevelDefault {
		o = &sql.TxOptions{Isolation: opts.Isolation}
	}
	tx, err := d.db.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	return stdTx{tx}, nil
}

type stdTx struct{ tx *sql.Tx }

func (t stdTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, query, args...)
}

func (t stdTx) QueryContext(ctx context.Context, query string, args ...any) (Rows, error) {
	rs, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func (t stdTx) Commit(context.Context) error   { return t.tx.Commit() }
func (t stdTx) Rollback(context.Context) error { return t.tx.Rollback() }
func (t stdTx) Native() any                    { return t.tx }

// WithSetup returns a DB whose transactions each begin by running stmts,
// the settings of a connection that the transaction's work relies on, such
// as the [Dialect.BusyTimeout] of a SQLite database: a pool may hand out
// any of its connections, so the setting is made again in every
// transaction. When a statement fails, BeginTx rolls the transaction back
// and returns the statement's error. Without stmts WithSetup returns db
// itself. The DB it returns is not a [Listener], even when db is one.
func WithSetup(db DB, stmts ...string) DB {
	if len(stmts) == 0 {
		return db
	}
	return setupDB{db: db, stmts: stmts}
}

type setupDB struct {
	db    DB
	stmts []string
}

func (d setupDB) BeginTx(ctx context.Context, opts TxOptions) (Tx, error) {
	tx, err := d.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, stmt := range d.stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return tx, nil
}
