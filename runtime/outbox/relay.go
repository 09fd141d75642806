package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Defaults of [RelayConfig]. Batches of 500 with 256 publishes in flight
// relay about 1.5 times as fast as batches of 100 with 64 in flight
// (docs/BENCHMARKS.md, "Outbox"): smaller batches pay the claim and the
// commit more often, and the publisher's pipeline drains at the end of
// every batch.
const (
	DefaultBatchSize       = 500
	DefaultConcurrency     = 256
	DefaultPollInterval    = 500 * time.Millisecond
	DefaultPublishTimeout  = 30 * time.Second
	DefaultRetryMin        = time.Second
	DefaultRetryMax        = time.Minute
	DefaultBusyTimeout     = 5 * time.Second
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultMaxAttempts refusals, with the default backoff, span about a
	// quarter of an hour: long enough for someone to bind a missing queue,
	// short enough that a fact that can never be published is marked
	// failed, and shows in warren outbox status, the same day.
	DefaultMaxAttempts = 20
	// DefaultKeepDiscarded is how long a discarded row stays, with the
	// reason it was discarded, before the relay prunes it.
	DefaultKeepDiscarded = 7 * 24 * time.Hour
	DefaultPruneInterval = time.Minute
)

// settleTimeout bounds recording a batch's outcome (deletes, failures,
// commit) once its publishes are over. It is not tied to the relay's ctx:
// rows the broker confirmed are deleted even when the relay is stopping,
// so a clean stop publishes nothing twice.
const settleTimeout = 30 * time.Second

// RelayConfig configures a [Relay]. Zero fields take the defaults named on
// each field.
type RelayConfig struct {
	Dialect Dialect // Postgres or SQLite; required
	Table   string  // the outbox table; default DefaultTable
	// BatchSize is how many rows one round claims, publishes and settles in
	// one transaction. Default DefaultBatchSize.
	BatchSize int
	// Concurrency is how many publishes of a batch are in flight at once,
	// pipelined on the publisher's channel. 1 publishes a batch one fact
	// after another, in id order. Default DefaultConcurrency (at most
	// BatchSize).
	Concurrency int
	// PollInterval is how long Run waits after a round that found fewer
	// rows than BatchSize (or failed) before it looks again. Default
	// DefaultPollInterval.
	PollInterval time.Duration
	// PublishTimeout bounds the publishes of one batch, including waiting
	// for a lost broker connection to come back. A publish still waiting
	// then counts as failed, and its row stays. It also bounds how long the
	// claim holds its rows (and on SQLite the write lock). A round whose
	// broker is unavailable when its turn comes (no connection, a
	// resource alarm) claims nothing and waits up to PublishTimeout for
	// it, holding nothing; one whose broker goes away while it publishes
	// gives up its unsent facts once the broker has stayed away for 2s,
	// and commits. Default DefaultPublishTimeout.
	PublishTimeout time.Duration
	// RetryMin and RetryMax bound how long a row whose publish was refused
	// waits before it is tried again: RetryMin after the first refusal,
	// doubling with each further one, at most RetryMax. Meanwhile newer
	// rows go ahead of it, so one failing fact never holds up the others.
	// Run wakes for a row's retry time when it comes before the next
	// poll, so the backoff holds whatever PollInterval is. Defaults
	// DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// MaxAttempts is how many refused publishes a row gets (the broker
	// nacked it or routed it nowhere, or it fails its schema): after the
	// last it is marked failed, with its error, and is not tried again
	// until someone retries it (Outbox.Retry, warren outbox retry). It is
	// never deleted for it. A publish that fails because the broker cannot
	// be reached costs no attempt. Default DefaultMaxAttempts.
	MaxAttempts int
	// KeepPublished is how long a published row stays in the table, marked
	// published_at, before the relay prunes it. Zero, the default, deletes
	// it in the transaction that saw its confirm: the table holds only the
	// backlog, so claims and status stay cheap, and consumers deduplicate
	// by message id whether or not the row is kept. Keep rows to audit or
	// re-drive what was published.
	KeepPublished time.Duration
	// KeepDiscarded is how long a row discarded by an operator stays, with
	// their reason, before it is pruned. Default DefaultKeepDiscarded.
	KeepDiscarded time.Duration
	// PruneInterval is how often Run prunes kept rows. Default
	// DefaultPruneInterval.
	PruneInterval time.Duration
	// ShutdownTimeout bounds how long a round whose ctx ends waits for the
	// confirms of publishes it has already sent. Facts confirmed in time are
	// deleted as usual; a publish still unconfirmed then is abandoned and
	// its row stays, so the fact may be published twice. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// BusyTimeout is, on SQLite, how long the relay waits for another
	// writer's lock (set with PRAGMA busy_timeout in every transaction it
	// opens). Default DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives one record per round in which a fact was refused,
	// one per row marked failed, and one when the database or the broker
	// becomes unavailable and one when it is back, with counts (not one
	// per poll). Default slog.Default().
	Logger *slog.Logger
	// Now is the clock that dates failures and their retries. Default
	// time.Now.
	Now func() time.Time
	// Facts, when set, are the facts whose rows are validated against
	// their schema again before they are sent, like a publisher does: a row
	// written by an older build, or by hand, that does not match is
	// refused (and retried, then marked failed) instead of reaching
	// consumers that would poison it. Rows of other routing keys are
	// published as they are. The generated NewOutboxRelay sets it to every
	// fact of its package.
	Facts []runtime.Fact
}

func (c *RelayConfig) setDefaults() {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = min(DefaultConcurrency, c.BatchSize)
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(DefaultRetryMax, c.RetryMin)
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.KeepDiscarded == 0 {
		c.KeepDiscarded = DefaultKeepDiscarded
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = DefaultPruneInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports what is wrong with c, naming each field.
func (c RelayConfig) Validate() error {
	var errs []error
	if _, err := kind.Table(c.Dialect, c.Table); err != nil {
		errs = append(errs, err)
	}
	if c.BatchSize < 0 || c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("BatchSize %d, Concurrency %d: expected zero (default) or more", c.BatchSize, c.Concurrency))
	}
	if c.PollInterval < 0 || c.PublishTimeout < 0 || c.ShutdownTimeout < 0 || c.BusyTimeout < 0 {
		errs = append(errs, errors.New("PollInterval, PublishTimeout, ShutdownTimeout and BusyTimeout: expected zero (default) or positive durations"))
	}
	if c.MaxAttempts < 0 || c.KeepPublished < 0 || c.KeepDiscarded < 0 || c.PruneInterval < 0 {
		errs = append(errs, fmt.Errorf("MaxAttempts %d, KeepPublished %s, KeepDiscarded %s, PruneInterval %s: expected zero (default) or more", c.MaxAttempts, c.KeepPublished, c.KeepDiscarded, c.PruneInterval))
	}
	if c.RetryMin < 0 || c.RetryMax < c.RetryMin {
		errs = append(errs, fmt.Errorf("RetryMin %s, RetryMax %s: expected 0 <= min <= max", c.RetryMin, c.RetryMax))
	}
	return errors.Join(errs...)
}

// Relay publishes the facts of an outbox table after their transactions
// commit: it claims a batch of rows, publishes them with a
// [runtime.Publisher] and deletes each row whose publish the broker
// confirmed, in the transaction that claimed the batch. A row whose publish
// failed stays, with its error and attempt count, and is tried again later.
//
// Delivery is at least once: if the relay dies, or its database fails,
// between the broker's confirm and the commit, the rows are published
// again by the next round, with the same message ids. Consumers deduplicate
// by id, which an idempotency guard (runtime/idempotency) does.
//
// A Relay is safe for concurrent use. On PostgreSQL any number of relays,
// in one process or many, may run over one table: they take turns, one
// round at a time (a transaction-scoped advisory lock), so a key's facts
// leave in order whichever relay sends them, and when one relay stops or
// dies the others carry on. On SQLite relays take turns too (the write
// lock); run one per file.
type Relay struct {
	db       sqldb.DB
	pub      *runtime.Publisher
	cfg      RelayConfig
	d        dialect
	table    sqldb.Table
	log      *slog.Logger
	setup    []string                     // statements opening every transaction
	facts    map[string]runtime.Fact      // by routing key, from RelayConfig.Facts: the newest version given
	versions map[factVersion]runtime.Fact // every version given, which validates the rows of that version
	claimDue string                       // selects and locks the scheduled rows due now
	claimNow string                       // selects and locks the next unscheduled rows
	nextDue  string                       // reads when the next row falls due or may be retried
	fail     string                       // records a refused publish on its row
	// markPub is the DELETE, or the UPDATE setting published_at, of
	// confirmed rows, without its id list.
	markPub string
	prune   string        // deletes kept rows past their time
	channel string        // NOTIFY channel, on PostgreSQL
	wake    chan struct{} // a round is due now

	storeDown, brokerDown outage // touched only by Run's goroutine

	published, failed, unroutable, markedFailed atomic.Uint64
}

// NewRelay returns a relay that publishes the outbox table of db with pub.
// pub decides what an unroutable fact is: with the default mandatory flag
// it is a failure, kept and retried until a queue is bound to it; a
// publisher made with [runtime.AllowUnroutable] lets the broker drop it.
func NewRelay(db *sql.DB, pub *runtime.Publisher, cfg RelayConfig) (*Relay, error) {
	if db == nil {
		return nil, errors.New("outbox: NewRelay: nil *sql.DB")
	}
	return NewRelayDB(sqldb.FromSQL(db), pub, cfg)
}

// NewRelayDB is [NewRelay] over any [sqldb.DB]: pgxdb.FromPool(pool) for
// pgx, or pgxdb.FromSQL(db) for a *sql.DB on pgx's driver, both of which
// LISTEN for new rows instead of waiting for the poll interval.
func NewRelayDB(db sqldb.DB, pub *runtime.Publisher, cfg RelayConfig) (*Relay, error) {
	if db == nil {
		return nil, errors.New("outbox: NewRelayDB: nil sqldb.DB")
	}
	if pub == nil {
		return nil, errors.New("outbox: NewRelay: nil *runtime.Publisher")
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("outbox: NewRelay: %w", err)
	}
	cfg.Concurrency = min(cfg.Concurrency, cfg.BatchSize)
	t, _ := kind.Table(cfg.Dialect, cfg.Table) // checked by Validate
	d := dialects[cfg.Dialect]
	r := &Relay{db: db, pub: pub, cfg: cfg, d: d, table: t, log: cfg.Logger.With("component", "warren.outbox", "table", t.String()),
		channel: channel(t), wake: make(chan struct{}, 1)}
	r.storeDown = outage{log: r.log, what: "database"}
	r.brokerDown = outage{log: r.log, what: "broker"}
	r.facts = make(map[string]runtime.Fact, len(cfg.Facts))
	r.versions = make(map[factVersion]runtime.Fact, len(cfg.Facts))
	for _, f := range cfg.Facts {
		if prev, ok := r.facts[f.RoutingKey]; !ok || f.Version > prev.Version {
			r.facts[f.RoutingKey] = f
		}
		r.versions[factVersion{f.RoutingKey, max(f.Version, 1)}] = f
	}
	r.setup = d.BusyTimeout(cfg.BusyTimeout)
	if d.lockTable != nil {
		r.setup = append(r.setup, d.lockTable(t.Quoted()))
	}
	p := d.Placeholder
	// Two claims, each reading one partial index (see
	// migrations/postgres/004_schedule.sql): scheduled rows not yet due
	// never cost a claim a step. The limit is the last placeholder.
	// Each also leaves out the rows whose key is held (see heldCond).
	const cols = "id, routing_key, version, envelope, attempts, ordering_seq, due_at, copies, ordering_key"
	r.claimDue = fmt.Sprintf("SELECT %s FROM %s o WHERE %s AND due_at IS NOT NULL AND due_at <= %s AND (retry_at IS NULL OR retry_at <= %s) AND %s ORDER BY due_at, id LIMIT %s%s",
		cols, t.Quoted(), pendingCond, p(1), p(2), heldCond(t, p(3), p(4)), p(5), d.claimSuffix)
	r.claimNow = fmt.Sprintf("SELECT %s FROM %s o WHERE %s AND due_at IS NULL AND (retry_at IS NULL OR retry_at <= %s) AND %s ORDER BY id LIMIT %s%s",
		cols, t.Quoted(), pendingCond, p(1), heldCond(t, p(2), p(3)), p(4), d.claimSuffix)
	// The next time a row may be claimed that cannot be now: a scheduled
	// row falling due, or a refused one (scheduled or not) reaching its
	// retry_at. Each half reads one of the claim's partial indexes, or
	// both (due_at IS NULL, due_at <= now), never the rows kept or failed.
	// A row both due later and refused (an operator moved it) counts by
	// the earlier of its times: the relay wakes once for nothing, never
	// too late.
	r.nextDue = fmt.Sprintf("SELECT min(t) FROM (SELECT min(due_at) AS t FROM %[1]s WHERE %[2]s AND due_at IS NOT NULL AND due_at > %[3]s"+
		" UNION ALL SELECT min(retry_at) AS t FROM %[1]s WHERE %[2]s AND retry_at > %[4]s AND (due_at IS NULL OR due_at <= %[5]s)) AS next_due",
		t.Quoted(), pendingCond, p(1), p(2), p(3))
	r.fail = fmt.Sprintf("UPDATE %s SET attempts = attempts + 1, last_error = %s, last_attempt_at = %s, retry_at = %s, failed_at = CASE WHEN attempts + 1 >= %s THEN CAST(%s AS %s) END WHERE id = %s",
		t.Quoted(), p(1), p(2), p(3), p(4), p(5), d.TimeType(), p(6))
	r.markPub = "DELETE FROM " + t.Quoted()
	if cfg.KeepPublished > 0 {
		r.markPub = fmt.Sprintf("UPDATE %s SET published_at = %s", t.Quoted(), p(1))
	}
	r.prune = fmt.Sprintf("DELETE FROM %[1]s WHERE id IN (SELECT id FROM %[1]s WHERE published_at < %[2]s OR discarded_at < %[3]s LIMIT %[4]d)",
		t.Quoted(), p(1), p(2), pruneBatch)
	return r, nil
}

// Stats are what a relay counted since it was made.
type Stats struct {
	Published    uint64 // facts published, confirmed and deleted (or marked published) in the outbox
	Failed       uint64 // publishes that failed, their rows kept for a later round; Unroutable included
	Unroutable   uint64 // failed publishes of facts that reached no queue ([runtime.ErrUnroutable])
	MarkedFailed uint64 // rows marked failed after MaxAttempts refusals
}

// Stats returns what r counted so far.
func (r *Relay) Stats() Stats {
	return Stats{Published: r.published.Load(), Failed: r.failed.Load(), Unroutable: r.unroutable.Load(), MarkedFailed: r.markedFailed.Load()}
}

// Run relays until ctx is done, then returns nil. It relays a batch with
// [Relay.RelayOnce] and, when the batch was full, the next one at once;
// otherwise it waits until a row may be due: PollInterval, or until the
// next scheduled fact falls due or the next refused one may be tried again
// (after RetryMin, 2*RetryMin, ... up to RetryMax) if that is sooner, or
// less when woken: a long PollInterval delays neither. On PostgreSQL,
// over a DB that is a [sqldb.Listener]
// (runtime/sqldb/pgxdb), Run LISTENs on the table's channel, which Write
// notifies when its transaction commits; on SQLite a Write in this process
// wakes it. Polling stays the fallback: rows written by other processes
// (SQLite) or while the listening connection was down are found by it.
//
// Failures are logged and retried, never returned: a fact that could not
// be published stays in the table, and a database or broker that cannot be
// reached is tried again every PollInterval. Such an outage is logged once
// when it starts and once when it ends, with how long it lasted and what
// it held back. Run also prunes kept rows every PruneInterval.
//
// Cancelling ctx stops Run cleanly: no further publish starts, those
// already sent get ShutdownTimeout to be confirmed, the rows confirmed are
// deleted, and the others stay as they were (not counted as failures) for
// the next relay to publish. Run then returns.
func (r *Relay) Run(ctx context.Context) error {
	defer register(r)()
	if l, ok := r.db.(sqldb.Listener); ok && r.d.notify {
		go r.listen(ctx, l)
	}
	lastPrune := time.Time{}
	for {
		b, err := r.relay(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.observe(b, err)
		if time.Since(lastPrune) >= r.cfg.PruneInterval {
			lastPrune = time.Now()
			r.pruneKept(ctx)
		}
		if err == nil || !errors.Is(err, errStore) {
			if b.claimed == r.cfg.BatchSize && b.unavailable == 0 {
				// A backlog: go on while it lasts. Rows that failed wait
				// for their retry time, so the next claim takes other rows.
				continue
			}
		}
		wait := r.cfg.PollInterval
		if d, ok := r.nextDueIn(ctx, b.claimedAt); ok && d < wait {
			// A scheduled fact falls due, or a refused one may be tried
			// again, before the next poll: wake for it.
			wait = d
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-r.wake:
			t.Stop()
		}
	}
}

// wakeUp makes Run start a round now, or right after the one under way.
func (r *Relay) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// RelayOnce relays one batch: it claims up to BatchSize rows that are due
// (scheduled rows that fell due first, by due time; then the others, oldest
// id first), publishes them, deletes the ones the broker confirmed
// and records the failure on the others, all in one transaction. It
// returns how many facts it published.
//
// err joins the failures of the batch, one per fact (each matches what the
// publisher returned, such as [runtime.ErrUnroutable] or
// [runtime.ErrNacked]), with ctx's error if ctx ended before every row was
// published (see [Relay.Run] for what a round does then); it is a
// database error, with n zero, when the batch could not be claimed or
// settled, in which case the batch is claimed again by a later round. When
// the publisher's broker is unavailable (no connection within
// PublishTimeout, or a resource alarm), nothing is claimed, n is zero and
// err says so.
func (r *Relay) RelayOnce(ctx context.Context) (n int, err error) {
	b, err := r.relay(ctx)
	return b.published, err
}

// logFailures writes one record for a round in which facts were refused:
// at error level when one reached no queue, since that needs someone to
// declare the topology or fix a binding; and one per row marked failed.
func (r *Relay) logFailures(b batchResult) {
	for _, f := range b.failures {
		if f.row.attempts+1 >= r.cfg.MaxAttempts {
			r.log.Error("outbox relay: fact marked failed; warren outbox retry or discard decides what becomes of it",
				"message_id", f.row.id, "routing_key", f.row.routingKey, "attempts", f.row.attempts+1, "err", f.err)
		}
	}
	if len(b.failures) == 0 {
		return
	}
	level := slog.LevelWarn
	if b.unroutable > 0 {
		level = slog.LevelError
	}
	first := b.failures[0]
	r.log.Log(context.Background(), level, "outbox relay: facts refused; kept for a later round",
		"failed", len(b.failures), "unroutable", b.unroutable, "published", b.published,
		"first_message_id", first.row.id, "first_routing_key", first.row.routingKey, "first_attempts", first.row.attempts+1,
		"first_err", first.err)
}
