package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Admin reads and removes saga instances for operators (warren saga). It
// needs no guard: it never handles a fact.
type Admin struct {
	db      sqldb.DB
	dialect sqldb.Dialect
	table   sqldb.Table
	outbox  *outbox.Outbox // cancels a deleted instance's timeouts; nil leaves them
}

// NewAdmin returns an Admin of the instances table named table (default
// DefaultTable) in db. ob is the outbox the sagas schedule their timeouts
// in: Delete cancels the deleted instance's pending timeouts there.
func NewAdmin(db sqldb.DB, d sqldb.Dialect, table string, ob *outbox.Outbox) (*Admin, error) {
	if db == nil {
		return nil, errors.New("saga: NewAdmin: nil sqldb.DB")
	}
	if table == "" {
		table = DefaultTable
	}
	t, err := instances.Table(d, table)
	if err != nil {
		return nil, fmt.Errorf("saga: %w", err)
	}
	return &Admin{db: db, dialect: d, table: t, outbox: ob}, nil
}

// Table returns the instances table's name.
func (a *Admin) Table() string { return a.table.String() }

// InstanceRow is one stored instance.
type InstanceRow struct {
	Saga, Instance string
	Version        int64
	State          json.RawMessage
	// Timeouts are the pending timeouts: name -> the outbox message id
	// of the scheduled fact.
	Timeouts    map[string]string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt time.Time // zero while the instance runs
	// Due is when each pending timeout is due, by name, as the outbox
	// holds it; only [Admin.Instances] of an Admin with an outbox reads
	// it. A timeout absent here was published already: its fact is on
	// its way to the saga.
	Due map[string]time.Time
}

// TimeoutNames returns the names of the pending timeouts, sorted.
func (r InstanceRow) TimeoutNames() []string {
	var out []string
	for n := range r.Timeouts {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// List returns up to limit instances, of saga alone when it is not "",
// running ones first, each kind oldest first.
func (a *Admin) List(ctx context.Context, saga string, limit int) ([]InstanceRow, error) {
	if limit < 1 {
		return nil, nil // as LIMIT 0 would
	}
	p, err := a.list(ctx, ListQuery{Saga: saga, Limit: limit})
	return p.Rows, err
}

// Which instances a [ListQuery] selects.
const (
	AllInstances       = ""          // running and completed
	RunningInstances   = "running"   // not completed
	CompletedInstances = "completed" // completed, not pruned yet
)

// ListQuery selects the instances [Admin.Instances] reads.
type ListQuery struct {
	Saga        string // only this saga's instances; "" for every saga's
	State       string // AllInstances, RunningInstances or CompletedInstances
	NewestFirst bool   // by start, newest first; default oldest first
	Limit       int    // at most this many rows; at least 1
}

// InstancePage is what [Admin.Instances] reads: the first rows and how
// many there are in all.
type InstancePage struct {
	// Rows are running instances first, then completed ones, each kind
	// in the order the query asked for.
	Rows []InstanceRow
	// Total counts the instances the query selects, Limit ignored.
	Total int64
}

// Instances reads the instances q selects, as List does, and how many
// there are beyond the limit. With the Admin's outbox, each row's Due
// says when its pending timeouts are due.
func (a *Admin) Instances(ctx context.Context, q ListQuery) (InstancePage, error) {
	page, err := a.list(ctx, q)
	if err != nil || a.outbox == nil {
		return page, err
	}
	var ids []string
	for _, r := range page.Rows {
		for _, id := range r.Timeouts {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return page, nil
	}
	due, err := a.outbox.DueTimes(ctx, a.db, ids...)
	if err != nil {
		return InstancePage{}, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	for i, r := range page.Rows {
		for name, id := range r.Timeouts {
			if t, ok := due[id]; ok {
				if page.Rows[i].Due == nil {
					page.Rows[i].Due = map[string]time.Time{}
				}
				page.Rows[i].Due[name] = t
			}
		}
	}
	return page, nil
}

// list is the one query of instances: List and Instances read through it.
func (a *Admin) list(ctx context.Context, q ListQuery) (InstancePage, error) {
	var state string
	switch q.State {
	case AllInstances:
	case RunningInstances:
		state = " AND completed_at IS NULL"
	case CompletedInstances:
		state = " AND completed_at IS NOT NULL"
	default:
		return InstancePage{}, fmt.Errorf("saga: list: state %q: expected %q, %q or \"\"", q.State, RunningInstances, CompletedInstances)
	}
	if q.Limit < 1 {
		return InstancePage{}, fmt.Errorf("saga: list: limit %d: expected at least 1", q.Limit)
	}
	order := ""
	if q.NewestFirst {
		order = " DESC"
	}
	p := a.dialect.Placeholder
	// The window count is taken before LIMIT: it counts every instance
	// selected, in the same reading as the rows.
	sql := fmt.Sprintf(`SELECT saga, instance, version, state, timeouts, created_at, updated_at, completed_at, COUNT(*) OVER () FROM %s
WHERE (%s = '' OR saga = %s)%s ORDER BY completed_at IS NOT NULL, created_at%s, saga, instance LIMIT %s`, a.table.Quoted(), p(1), p(2), state, order, p(3))
	var page InstancePage
	rows, err := a.query(ctx, sql, []any{&page.Total}, q.Saga, q.Saga, q.Limit)
	page.Rows = rows
	return page, err
}

// Show returns one instance; ok is false when there is none.
func (a *Admin) Show(ctx context.Context, saga, instance string) (row InstanceRow, ok bool, err error) {
	p := a.dialect.Placeholder
	q := fmt.Sprintf(`SELECT saga, instance, version, state, timeouts, created_at, updated_at, completed_at FROM %s WHERE saga = %s AND instance = %s`,
		a.table.Quoted(), p(1), p(2))
	rows, err := a.query(ctx, q, nil, saga, instance)
	if err != nil || len(rows) == 0 {
		return InstanceRow{}, false, err
	}
	return rows[0], true, nil
}

// Delete removes an instance and cancels its pending timeouts, in one
// transaction; deleted is false when there was no such instance. A fact
// of the instance that arrives later finds none, and follows its rule.
func (a *Admin) Delete(ctx context.Context, saga, instance string) (deleted bool, err error) {
	tx, err := a.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return false, fmt.Errorf("saga: delete %s %q: %w", saga, instance, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The delete comes first and returns the row it removed: read first,
	// a SQLite transaction (DEFERRED, as database/sql begins it) would fail
	// at once with SQLITE_BUSY_SNAPSHOT when it comes to write, if a
	// consumer wrote in between; and the timeouts cancelled are those of
	// the row as it was deleted, not as it was read a moment before.
	p := a.dialect.Placeholder
	found, err := a.queryTx(ctx, tx, fmt.Sprintf(`DELETE FROM %s WHERE saga = %s AND instance = %s RETURNING saga, instance, version, state, timeouts, created_at, updated_at, completed_at`,
		a.table.Quoted(), p(1), p(2)), nil, saga, instance)
	if err != nil {
		return false, fmt.Errorf("saga: delete %s %q: %w", saga, instance, err)
	}
	if len(found) == 0 {
		return false, nil
	}
	row := found[0]
	if a.outbox != nil && len(row.Timeouts) > 0 {
		var ids []string
		for _, id := range row.Timeouts {
			ids = append(ids, id)
		}
		if _, err := a.outbox.Cancel(ctx, tx, ids...); err != nil {
			return false, fmt.Errorf("saga: delete %s %q: cancel its timeouts: %w", saga, instance, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("saga: delete %s %q: %w", saga, instance, err)
	}
	return true, nil
}

// query reads instances with query q; extra receives the columns q selects
// after the instance's own, from every row.
func (a *Admin) query(ctx context.Context, q string, extra []any, args ...any) ([]InstanceRow, error) {
	tx, err := a.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return a.queryTx(ctx, tx, q, extra, args...)
}

func (a *Admin) queryTx(ctx context.Context, tx sqldb.Tx, q string, extra []any, args ...any) ([]InstanceRow, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	defer rows.Close()
	var out []InstanceRow
	for rows.Next() {
		var r InstanceRow
		var state, timeouts string
		var created, updated int64
		var completed *int64
		if err := rows.Scan(append([]any{&r.Saga, &r.Instance, &r.Version, &state, &timeouts, &created, &updated, &completed}, extra...)...); err != nil {
			return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
		}
		r.State = json.RawMessage(state)
		if err := json.Unmarshal([]byte(timeouts), &r.Timeouts); err != nil {
			return nil, fmt.Errorf("saga: read %s: instance %q: pending timeouts: %w", a.table, r.Instance, err)
		}
		r.CreatedAt, r.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
		if completed != nil {
			r.CompletedAt = time.UnixMilli(*completed)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	return out, nil
}

// Summary is what a saga's instances look like at one moment.
type Summary struct {
	Saga      string
	Running   int64 // instances not completed
	Completed int64 // completed instances not pruned yet
	// OldestRunning is when the oldest running instance started; zero
	// without running instances.
	OldestRunning time.Time
	// WithTimeouts counts the running instances with a timeout pending.
	WithTimeouts int64
}

// Summaries returns a Summary per saga with instances in the table,
// sorted by saga.
func (a *Admin) Summaries(ctx context.Context) ([]Summary, error) {
	q := fmt.Sprintf(`SELECT saga,
  SUM(CASE WHEN completed_at IS NULL THEN 1 ELSE 0 END),
  SUM(CASE WHEN completed_at IS NULL THEN 0 ELSE 1 END),
  MIN(CASE WHEN completed_at IS NULL THEN created_at END),
  SUM(CASE WHEN completed_at IS NULL AND timeouts <> '{}' THEN 1 ELSE 0 END)
FROM %s GROUP BY saga ORDER BY saga`, a.table.Quoted())
	tx, err := a.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	defer rows.Close()
	var out []Summary
	for rows.Next() {
		var s Summary
		var oldest *int64
		if err := rows.Scan(&s.Saga, &s.Running, &s.Completed, &oldest, &s.WithTimeouts); err != nil {
			return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
		}
		if oldest != nil {
			s.OldestRunning = time.UnixMilli(*oldest)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("saga: read %s: %w", a.table, err)
	}
	return out, nil
}
