package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// Scheduled facts wait in the outbox table itself: a row written through
// a view of [Outbox.In] or [Outbox.At] has a due_at, and the relay claims
// it only once that time has come. Until then the row is the business
// transaction's, like any other: it can be cancelled (deleted) in another
// transaction, and it survives restarts of the relay and of the broker,
// which does not see it before it is due.

// ErrSchedule matches the error of a write whose schedule cannot be kept:
// a negative delay. Its text has no "outbox:" of its own: the write's
// error that wraps it says where it comes from, once.
var ErrSchedule = errors.New("schedule out of range")

// schedule is when the facts written through an [Outbox] view are due;
// the zero schedule publishes them once their transaction commits.
type schedule struct {
	set   bool
	delay time.Duration // In
	due   time.Time     // At, when isAt
	isAt  bool
}

// at returns when a fact written at now is due: the zero time for one
// published once committed.
func (s schedule) at(now time.Time) (time.Time, error) {
	switch {
	case !s.set:
		return time.Time{}, nil
	case s.isAt:
		return s.due, nil
	case s.delay < 0:
		return time.Time{}, fmt.Errorf("%w: delay %s, expected 0 or more", ErrSchedule, s.delay)
	}
	return now.Add(s.delay), nil
}

// In returns a view of o whose writes are due after d: each fact is
// validated and written now, in the caller's transaction, and the relay
// publishes it once d has passed since the write (not before; within its
// poll interval after, or sooner, see [Relay.Run]). d is counted from the
// writing process's clock, which the relays must share to the
// millisecond or so. In(0) is due at once. A negative d is an error
// matching [ErrSchedule], and nothing is written.
//
// The outbox holds a fact for as long as asked: there is no horizon
// beyond the database's own range of times. A scheduled fact is published
// with header runtime.HeaderDueAt, and can be cancelled until the relay
// has published it ([Outbox.Cancel]). The view shares o's table and may be
// kept; o itself still writes facts due at once.
func (o *Outbox) In(d time.Duration) *Outbox {
	v := *o
	v.due = schedule{set: true, delay: d}
	return &v
}

// At returns a view of o whose writes are due at t, as [Outbox.In]. A t
// that has passed is due at once (a schedule computed a moment late is not
// refused) and still carries t as its due time.
func (o *Outbox) At(t time.Time) *Outbox {
	v := *o
	v.due = schedule{set: true, due: t, isAt: true}
	return &v
}

// Cancel deletes the scheduled facts with the given message ids (those
// [Outbox.Write] returned through a view of In or At) that the relay has
// not published yet, in tx, and returns how many it deleted. An id that is
// unknown, already published, or not scheduled (written to be published
// at once) is left alone and not counted, so a caller can tell whether its
// fact will still go out: cancelled 0 means it already has (or never
// existed).
//
// tx is the caller's transaction, so that cancelling a timeout commits or
// rolls back with the change that made it pointless. On PostgreSQL a
// fact the relay is publishing at that moment is locked by its claim:
// Cancel waits for the claim to end and then finds it published.
func (o *Outbox) Cancel(ctx context.Context, tx sqldb.Execer, ids ...string) (cancelled int64, err error) {
	if isNil(tx) {
		return 0, errors.New("outbox: cancel: nil transaction")
	}
	if len(ids) == 0 {
		return 0, nil
	}
	p := o.d.Placeholder
	marks := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		marks[i], args[i] = p(i+1), id
	}
	q := fmt.Sprintf("DELETE FROM %s WHERE id IN (%s) AND due_at IS NOT NULL AND %s",
		o.table.Quoted(), strings.Join(marks, ", "), pendingCond)
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("outbox: cancel in %s: %w", o.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("outbox: cancel in %s: %w", o.table, err)
	}
	return n, nil
}

// ScheduledRow is a scheduled fact not yet published, as
// [Outbox.Scheduled] lists it.
type ScheduledRow struct {
	ID, RoutingKey string
	DueAt          time.Time
	CreatedAt      time.Time
	Attempts       int // refused publishes since it fell due
}

// Scheduled lists up to limit scheduled facts that are still to be
// published, soonest due first (those already due but not yet published
// included), for routing key routingKey or, when it is "", for all.
func (o *Outbox) Scheduled(ctx context.Context, db sqldb.DB, routingKey string, limit int) ([]ScheduledRow, error) {
	where, args := "due_at IS NOT NULL AND "+pendingCond, []any(nil)
	if routingKey != "" {
		where += " AND routing_key = " + o.d.Placeholder(1)
		args = append(args, routingKey)
	}
	q := fmt.Sprintf("SELECT id, routing_key, due_at, created_at, attempts FROM %s WHERE %s ORDER BY due_at, id LIMIT %d",
		o.table.Quoted(), where, max(limit, 0))
	var out []ScheduledRow
	err := o.read(ctx, db, q, args, func(rs sqldb.Rows) error {
		var x ScheduledRow
		var due, created any
		if err := rs.Scan(&x.ID, &x.RoutingKey, &due, &created, &x.Attempts); err != nil {
			return err
		}
		if err := readTimes([]any{due, created}, &x.DueAt, &x.CreatedAt); err != nil {
			return err
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: scheduled facts of %s: %w", o.table, err)
	}
	return out, nil
}

// DueTimes returns when each of the scheduled facts ids is due, for those
// still to be published: an id that is not in the map was published,
// cancelled or never scheduled. The ids are read in batches of at most
// 500, which keeps every query within the databases' limits on arguments.
func (o *Outbox) DueTimes(ctx context.Context, db sqldb.DB, ids ...string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(ids))
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 500)]
		ids = ids[len(batch):]
		marks := make([]string, len(batch))
		args := make([]any, len(batch))
		for i, id := range batch {
			marks[i], args[i] = o.d.Placeholder(i+1), id
		}
		q := fmt.Sprintf("SELECT id, due_at FROM %s WHERE id IN (%s) AND due_at IS NOT NULL AND %s",
			o.table.Quoted(), strings.Join(marks, ", "), pendingCond)
		err := o.read(ctx, db, q, args, func(rs sqldb.Rows) error {
			var id string
			var due any
			if err := rs.Scan(&id, &due); err != nil {
				return err
			}
			t, err := o.time(due)
			if err != nil {
				return err
			}
			out[id] = t
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("outbox: due times in %s: %w", o.table, err)
		}
	}
	return out, nil
}
