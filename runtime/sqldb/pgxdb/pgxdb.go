// Package pgxdb lets warren's SQL tables (the idempotency guard, the
// outbox) run over pgx natively: a pgxpool.Pool instead of a *sql.DB, and a
// pgx.Tx where a transaction is handed in or out. It is a package of its
// own so that services on SQLite, or on database/sql alone, do not link
// pgx.
//
//	pool, err := pgxpool.New(ctx, dsn)
//	guard, err := idempotency.NewSQLGuardDB(pgxdb.FromPool(pool), idempotency.SQLConfig{Dialect: idempotency.Postgres})
//	// in a handler: tx, ok := idempotency.TxAs[pgx.Tx](ctx)
//	id, err := ob.Write(ctx, pgxdb.Tx(tx), fact, payload)
//
// Both of its DBs can LISTEN ([sqldb.Listener]), which is what lets an
// outbox relay wake up as soon as a row commits.
package pgxdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// unlistenTimeout bounds cleaning a listening connection before it goes
// back to its pool.
const unlistenTimeout = 5 * time.Second

// FromPool returns a DB over pool whose transactions are pgx.Tx; it is a
// [sqldb.Listener].
func FromPool(pool *pgxpool.Pool) sqldb.DB { return poolDB{pool} }

// FromSQL returns a DB over db, which must be opened with pgx's
// database/sql driver (github.com/jackc/pgx/v5/stdlib). Its transactions
// are *sql.Tx, as with [sqldb.FromSQL]; unlike that one it is a
// [sqldb.Listener].
func FromSQL(db *sql.DB) sqldb.DB { return stdDB{DB: sqldb.FromSQL(db), db: db} }

// Tx returns tx as a [sqldb.Execer], for writing into the outbox in a
// pgx transaction.
func Tx(tx pgx.Tx) sqldb.Execer { return pgxTx{tx} }

type poolDB struct{ pool *pgxpool.Pool }

func (d poolDB) BeginTx(ctx context.Context, opts sqldb.TxOptions) (sqldb.Tx, error) {
	iso, err := isolation(opts.Isolation)
	if err != nil {
		return nil, err
	}
	tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		return nil, err
	}
	return pgxTx{tx}, nil
}

func (d poolDB) Listen(ctx context.Context, channel string) (sqldb.Subscription, error) {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		c.Release()
		return nil, err
	}
	return &poolSub{c: c}, nil
}

type poolSub struct{ c *pgxpool.Conn }

func (s *poolSub) Wait(ctx context.Context) error {
	_, err := s.c.Conn().WaitForNotification(ctx)
	return err
}

func (s *poolSub) Close() error {
	// A connection still listening must not go back to the pool, where
	// another user would collect notifications it never asked for.
	ctx, cancel := context.WithTimeout(context.Background(), unlistenTimeout)
	defer cancel()
	if _, err := s.c.Exec(ctx, "UNLISTEN *"); err != nil {
		conn := s.c.Hijack()
		return conn.Close(ctx)
	}
	s.c.Release()
	return nil
}

type stdDB struct {
	sqldb.DB
	db *sql.DB
}

func (d stdDB) Listen(ctx context.Context, channel string) (sqldb.Subscription, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &stdSub{c: c}
	err = c.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("pgxdb: FromSQL: the database/sql driver's connection is a %T, not pgx's (github.com/jackc/pgx/v5/stdlib)", dc)
		}
		s.pc = pc.Conn()
		_, err := s.pc.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
		return err
	})
	if err != nil {
		_ = s.discard()
		return nil, err
	}
	return s, nil
}

type stdSub struct {
	c  *sql.Conn
	pc *pgx.Conn // used only inside c.Raw
}

func (s *stdSub) Wait(ctx context.Context) error {
	return s.c.Raw(func(any) error {
		_, err := s.pc.WaitForNotification(ctx)
		return err
	})
}

func (s *stdSub) Close() error { return s.discard() }

// discard closes the physical connection rather than giving a listening
// one back to the pool.
func (s *stdSub) discard() error {
	_ = s.c.Raw(func(any) error { return driver.ErrBadConn })
	return s.c.Close()
}

type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return result(tag), nil
}

func (t pgxTx) QueryContext(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	rs, err := t.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows{rs}, nil
}

func (t pgxTx) Commit(ctx context.Context) error { return t.tx.Commit(ctx) }

func (t pgxTx) Rollback(ctx context.Context) error {
	if err := t.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

func (t pgxTx) Native() any { return t.tx }

// result is a command tag as a sql.Result.
type result pgconn.CommandTag

func (r result) RowsAffected() (int64, error) { return pgconn.CommandTag(r).RowsAffected(), nil }

func (result) LastInsertId() (int64, error) {
	return 0, errors.New("pgxdb: PostgreSQL has no last insert id; use RETURNING")
}

// rows is pgx.Rows read like *sql.Rows.
type rows struct{ pgx.Rows }

func (r rows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

func isolation(l sql.IsolationLevel) (pgx.TxIsoLevel, error) {
	switch l {
	case sql.LevelDefault:
		return "", nil
	case sql.LevelReadUncommitted:
		return pgx.ReadUncommitted, nil
	case sql.LevelReadCommitted:
		return pgx.ReadCommitted, nil
	case sql.LevelRepeatableRead:
		return pgx.RepeatableRead, nil
	case sql.LevelSerializable:
		return pgx.Serializable, nil
	}
	return "", fmt.Errorf("pgxdb: isolation level %s: PostgreSQL has read uncommitted, read committed, repeatable read and serializable", l)
}
