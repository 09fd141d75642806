package saga

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// migrations holds the scripts that create the instances table, one
// directory per dialect; every script is idempotent (IF NOT EXISTS).
//
//go:embed migrations
var migrations embed.FS

// instances is the kind of the instances table. Its names are at most 48
// bytes, which keeps its index's name within PostgreSQL's limit.
var instances = sqldb.Kind{
	Name:       "saga",
	Migrations: migrations,
	MaxName:    48,
	Vars: func(t sqldb.Table) map[string]string {
		return map[string]string{"index": sqldb.Quote(t.Derived("_completed_at_idx"))}
	},
}

// DefaultTable is the instances table's name when the config gives none.
const DefaultTable = "warren_saga_instances"

// DefaultKeepCompleted is how long a completed instance is kept when
// neither the manifest nor the config says.
const DefaultKeepCompleted = 7 * 24 * time.Hour

// Config configures a [Store].
type Config struct {
	Dialect sqldb.Dialect // Postgres or SQLite; required, the guard's and the outbox's
	Table   string        // the instances table; default DefaultTable
	// Guard claims each fact; its transaction is the one the state, and
	// the outbox rows, are written in. Required, over the same database.
	Guard *idempotency.SQLGuard
	// Outbox receives the facts handlers publish and the timeouts they
	// schedule. Required, over the same database; timeouts need its relay
	// running, which publishes each when it falls due.
	Outbox *outbox.Outbox
	// Now is the clock that stamps instances; default time.Now.
	Now func() time.Time
	// Metrics receives the saga events (runtime.SagaStarted, ...), labelled
	// with the saga's queue and the routing key of the fact; nil counts in
	// Stats alone. Pass the runtime.Config's Metrics.
	Metrics runtime.Metrics
}

// Store keeps the instances of sagas in a SQL table. It is safe for
// concurrent use; many sagas may share one Store.
type Store struct {
	db      sqldb.DB
	dialect sqldb.Dialect
	table   sqldb.Table
	guard   *idempotency.SQLGuard
	outbox  *outbox.Outbox
	now     func() time.Time
	stats   stats
	metrics runtime.Metrics

	mu   sync.Mutex
	keep map[string]time.Duration // the sagas New bound to the store -> KeepCompleted

	load, insert, update, setTimeouts, prune string
}

// NewStore returns a store over db. It does not create the table: call
// [Store.Migrate], or apply [MigrationSQL] with your own tool.
func NewStore(db sqldb.DB, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("saga: NewStore: nil sqldb.DB")
	}
	if cfg.Guard == nil || cfg.Outbox == nil {
		return nil, errors.New("saga: NewStore: a guard and an outbox are required: the state is written in the guard's transaction, with the outbox rows")
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	t, err := instances.Table(cfg.Dialect, cfg.Table)
	if err != nil {
		return nil, fmt.Errorf("saga: NewStore: %w", err)
	}
	p := cfg.Dialect.Placeholder
	s := &Store{db: db, dialect: cfg.Dialect, table: t, guard: cfg.Guard, outbox: cfg.Outbox, now: cfg.Now, metrics: cfg.Metrics}
	q := t.Quoted()
	s.load = fmt.Sprintf("SELECT version, state, timeouts, completed_at FROM %s WHERE saga = %s AND instance = %s", q, p(1), p(2))
	// ON CONFLICT DO NOTHING: of two handlings that start one instance,
	// the second inserts nothing (after waiting for the first to end) and
	// reads the instance the first made.
	s.insert = fmt.Sprintf("INSERT INTO %s (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES (%s, %s, 1, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
		q, p(1), p(2), p(3), p(4), p(5), p(6), p(7))
	s.update = fmt.Sprintf("UPDATE %s SET version = version + 1, state = %s, timeouts = %s, completed_at = %s, updated_at = %s WHERE saga = %s AND instance = %s AND version = %s",
		q, p(1), p(2), p(3), p(4), p(5), p(6), p(7))
	s.setTimeouts = fmt.Sprintf("UPDATE %s SET timeouts = %s WHERE saga = %s AND instance = %s", q, p(1), p(2), p(3))
	s.prune = fmt.Sprintf("DELETE FROM %s WHERE completed_at IS NOT NULL AND completed_at < %s AND saga = %s", q, p(1), p(2))
	return s, nil
}

// Table returns the instances table's name.
func (s *Store) Table() string { return s.table.String() }

// MigrationSQL returns the script that creates the instances table named
// table for dialect d.
func MigrationSQL(d sqldb.Dialect, table string) (string, error) {
	script, err := instances.SQL(d, table)
	if err != nil {
		return "", fmt.Errorf("saga: migration: %w", err)
	}
	return script, nil
}

// Migrate creates the instances table and its index if they do not exist.
func (s *Store) Migrate(ctx context.Context) error {
	if err := sqldb.Migrate(ctx, s.db, s.dialect, s.table); err != nil {
		return fmt.Errorf("saga: %w", err)
	}
	return nil
}

// Prune deletes the instances of saga completed more than keep ago
// (DefaultKeepCompleted when keep is 0) and returns how many.
func (s *Store) Prune(ctx context.Context, saga string, keep time.Duration) (int64, error) {
	if keep <= 0 {
		keep = DefaultKeepCompleted
	}
	tx, err := s.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return 0, fmt.Errorf("saga: prune %s: %w", saga, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	res, err := tx.ExecContext(ctx, s.prune, s.now().Add(-keep).UnixMilli(), saga)
	if err != nil {
		return 0, fmt.Errorf("saga: prune %s: %w", saga, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("saga: prune %s: %w", saga, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// register remembers a saga bound to the store, for PruneEvery.
func (s *Store) register(def Definition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keep == nil {
		s.keep = map[string]time.Duration{}
	}
	s.keep[def.Name] = def.KeepCompleted
}

// PruneEvery prunes, at once and then every interval until ctx is done,
// the completed instances of every saga bound to the store ([New]) that
// have been complete for longer than the saga's KeepCompleted. A failed
// prune goes to onError (nil ignores it), and the loop carries on. Run it
// in a goroutine of its own; every replica may run it.
func (s *Store) PruneEvery(ctx context.Context, interval time.Duration, onError func(error)) {
	prune := func() {
		s.mu.Lock()
		keep := make(map[string]time.Duration, len(s.keep))
		for name, k := range s.keep {
			keep[name] = k
		}
		s.mu.Unlock()
		for name, k := range keep {
			if _, err := s.Prune(ctx, name, k); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
	prune()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			prune()
		}
	}
}

// Stats are what a store counted since it was made, over every saga.
type Stats struct {
	Started   int64 // instances started
	Completed int64 // instances completed
	TimedOut  int64 // timeouts handled
	// Conflicts are writes that found another version than they read:
	// the fact was handled again on the new state.
	Conflicts int64
	// LateTimeouts are timeouts that fired after their instance
	// completed (or was removed), dropped without calling the handler.
	LateTimeouts int64
	Ignored      int64 // facts ignored by their rule
}

type stats struct {
	started, completed, timedOut, conflicts, late, ignored atomic.Int64
}

// tally is what one handling did, counted once its transaction commits.
type tally struct{ started, completed, timedOut, late, ignored int64 }

type tallyKey struct{}

// tallyOf returns the handling's tally; a throwaway one outside [Store.count].
func tallyOf(ctx context.Context) *tally {
	if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
		return t
	}
	return &tally{}
}

// count is the middleware that adds a handling's tally to the stats once
// the guard inside it has committed (the handling returned nil).
func (s *Store) count(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(ctx context.Context, d runtime.Delivery) error {
		t := &tally{}
		err := next(context.WithValue(ctx, tallyKey{}, t), d)
		if err == nil {
			s.stats.started.Add(t.started)
			s.stats.completed.Add(t.completed)
			s.stats.timedOut.Add(t.timedOut)
			s.stats.late.Add(t.late)
			s.stats.ignored.Add(t.ignored)
			for e, n := range map[runtime.Event]int64{runtime.SagaStarted: t.started, runtime.SagaCompleted: t.completed, runtime.SagaTimedOut: t.timedOut, runtime.SagaLateTimeout: t.late} {
				s.event(d, e, n)
			}
		}
		return err
	}
}

// event counts n events e of delivery d in the configured Metrics.
func (s *Store) event(d runtime.Delivery, e runtime.Event, n int64) {
	if s.metrics == nil {
		return
	}
	for range n {
		s.metrics.Count(d.Consumer, e, d.RoutingKey)
	}
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	return Stats{
		Started: s.stats.started.Load(), Completed: s.stats.completed.Load(), TimedOut: s.stats.timedOut.Load(),
		Conflicts: s.stats.conflicts.Load(), LateTimeouts: s.stats.late.Load(), Ignored: s.stats.ignored.Load(),
	}
}
