package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// Status is what an outbox table holds, as [Outbox.Status] reads it.
type Status struct {
	Pending   int64 // rows due and still to be published (retrying ones included)
	Retrying  int64 // pending rows that were refused at least once
	Failed    int64 // rows marked failed after MaxAttempts refusals, waiting for Retry or Discard
	Discarded int64 // rows discarded, kept until pruned
	Published int64 // published rows kept (RelayConfig.KeepPublished)
	// OldestPending is when the pending row that has waited longest became
	// due: its creation, or for a scheduled fact its due time; zero when
	// none.
	OldestPending time.Time
	Scheduled     int64     // scheduled rows not due yet ([Outbox.In], [Outbox.At])
	NextDue       time.Time // when the first of those is due; zero when none
}

// FailedRow is a row marked failed, as [Outbox.Failed] lists it.
type FailedRow struct {
	ID, RoutingKey string
	Attempts       int
	LastError      string
	CreatedAt      time.Time
	FailedAt       time.Time
}

// Status counts the rows of the outbox table in db by state.
func (o *Outbox) Status(ctx context.Context, db sqldb.DB) (Status, error) {
	// The clock is read once, through a one-row join, so that the query
	// takes one argument in both dialects (SQLite's placeholders are not
	// numbered).
	due := pendingCond + " AND (due_at IS NULL OR due_at <= c.now)"
	waiting := pendingCond + " AND due_at > c.now"
	q := fmt.Sprintf(`SELECT
	count(CASE WHEN %[2]s THEN 1 END),
	count(CASE WHEN %[2]s AND attempts > 0 THEN 1 END),
	count(CASE WHEN failed_at IS NOT NULL AND discarded_at IS NULL THEN 1 END),
	count(discarded_at),
	count(published_at),
	min(CASE WHEN %[2]s THEN coalesce(due_at, created_at) END),
	count(CASE WHEN %[3]s THEN 1 END),
	min(CASE WHEN %[3]s THEN due_at END)
FROM %[1]s, (SELECT CAST(%[4]s AS %[5]s) AS now) AS c`, o.table.Quoted(), due, waiting, o.d.Placeholder(1), o.d.TimeType())
	var s Status
	var oldest, next any
	err := o.read(ctx, db, q, []any{o.d.Time(time.Now())}, func(rs sqldb.Rows) error {
		return rs.Scan(&s.Pending, &s.Retrying, &s.Failed, &s.Discarded, &s.Published, &oldest, &s.Scheduled, &next)
	})
	if err != nil {
		return Status{}, fmt.Errorf("outbox: status of %s: %w", o.table, err)
	}
	if s.OldestPending, err = o.time(oldest); err != nil {
		return Status{}, err
	}
	s.NextDue, err = o.time(next)
	return s, err
}

// Failed lists up to limit rows marked failed (not discarded), oldest id
// first.
func (o *Outbox) Failed(ctx context.Context, db sqldb.DB, limit int) ([]FailedRow, error) {
	q := fmt.Sprintf(`SELECT id, routing_key, attempts, last_error, created_at, failed_at FROM %s
WHERE failed_at IS NOT NULL AND discarded_at IS NULL ORDER BY id LIMIT %d`, o.table.Quoted(), max(limit, 0))
	var out []FailedRow
	err := o.read(ctx, db, q, nil, func(rs sqldb.Rows) error {
		var f FailedRow
		var lastErr *string
		var created, failed any
		if err := rs.Scan(&f.ID, &f.RoutingKey, &f.Attempts, &lastErr, &created, &failed); err != nil {
			return err
		}
		if lastErr != nil {
			f.LastError = *lastErr
		}
		if err := readTimes([]any{created, failed}, &f.CreatedAt, &f.FailedAt); err != nil {
			return err
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: failed rows of %s: %w", o.table, err)
	}
	return out, nil
}

// Retry makes failed rows pending again, with their attempts reset, for
// the relay to publish at its next round; reason is kept in the rows'
// note. ids names the rows; none means every failed row. It returns how
// many rows it changed: an id that is not a failed row is left alone.
func (o *Outbox) Retry(ctx context.Context, db sqldb.DB, reason string, ids ...string) (int64, error) {
	p := o.d.Placeholder
	return o.resolve(ctx, db, "retry", reason, ids,
		fmt.Sprintf("attempts = 0, failed_at = NULL, retry_at = NULL, note = %s", p(1)), "retried: ")
}

// Discard marks failed rows discarded: they are never published, and are
// pruned by the relay after RelayConfig.KeepDiscarded. reason is kept in
// the rows' note. ids names the rows; none means every failed row. It
// returns how many rows it changed.
func (o *Outbox) Discard(ctx context.Context, db sqldb.DB, reason string, ids ...string) (int64, error) {
	p := o.d.Placeholder
	return o.resolve(ctx, db, "discard", reason, ids,
		fmt.Sprintf("note = %s, discarded_at = %s", p(1), p(2)), "discarded: ")
}

func (o *Outbox) resolve(ctx context.Context, db sqldb.DB, op, reason string, ids []string, set, notePrefix string) (int64, error) {
	if strings.TrimSpace(reason) == "" {
		return 0, fmt.Errorf("outbox: %s: no reason given: say why, it is kept with the rows", op)
	}
	args := []any{notePrefix + reason}
	if op == "discard" {
		args = append(args, o.d.Time(time.Now()))
	}
	where := "failed_at IS NOT NULL AND discarded_at IS NULL"
	if len(ids) > 0 {
		marks := make([]string, len(ids))
		for i, id := range ids {
			args = append(args, id)
			marks[i] = o.d.Placeholder(len(args))
		}
		where += " AND id IN (" + strings.Join(marks, ", ") + ")"
	}
	stmt := fmt.Sprintf("UPDATE %s SET %s WHERE %s", o.table.Quoted(), set, where)
	tx, err := db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return 0, fmt.Errorf("outbox: %s failed rows of %s: %w", op, o.table, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, stmt, args...)
	if err != nil {
		return 0, fmt.Errorf("outbox: %s failed rows of %s: %w", op, o.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("outbox: %s failed rows of %s: %w", op, o.table, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("outbox: %s failed rows of %s: commit: %w", op, o.table, err)
	}
	if n > 0 && op == "retry" && o.d.wakeOnWrite {
		wakeRelays(o.d.Dialect, o.table)
	}
	return n, nil
}

// read runs query q in a transaction of its own and calls scan per row.
func (o *Outbox) read(ctx context.Context, db sqldb.DB, q string, args []any, scan func(sqldb.Rows) error) error {
	return readRows(ctx, db, q, args, scan)
}

// readRows runs query q in a transaction of its own and calls scan per row.
func readRows(ctx context.Context, db sqldb.DB, q string, args []any, scan func(sqldb.Rows) error) error {
	if db == nil {
		return errors.New("nil sqldb.DB")
	}
	tx, err := db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	rs, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return err
		}
	}
	return rs.Err()
}

func (o *Outbox) time(v any) (time.Time, error) { return timeOf(v) }

// readTimes converts the values of time columns (see timeOf) into dst, in
// order.
func readTimes(vals []any, dst ...*time.Time) error {
	for i, v := range vals {
		t, err := timeOf(v)
		if err != nil {
			return err
		}
		*dst[i] = t
	}
	return nil
}

// timeOf converts a time column's value as the driver returns it: a
// time.Time on PostgreSQL, Unix milliseconds on SQLite; zero for NULL.
func timeOf(v any) (time.Time, error) {
	switch t := v.(type) {
	case nil:
		return time.Time{}, nil
	case time.Time:
		return t, nil
	case int64:
		return time.UnixMilli(t).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("time column holds a %T", v)
}
