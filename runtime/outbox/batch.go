package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// errStore is matched by the errors of a round whose database work failed,
// as opposed to a round in which some publishes failed.
var errStore = errors.New("outbox store")

// errInvalid is matched by the refusal of a row that is not a publishable
// fact: its envelope does not decode, or its payload fails its schema.
var errInvalid = errors.New("row is not a valid fact")

// maxErrorText bounds the error text kept in last_error.
const maxErrorText = 1000

// pruneBatch bounds the rows one prune statement deletes, so pruning never
// holds locks (on SQLite: the only write lock) for long.
const pruneBatch = 1000

// pendingCond selects the rows still to be published.
const pendingCond = "failed_at IS NULL AND published_at IS NULL AND discarded_at IS NULL"

// row is one claimed outbox row.
type row struct {
	id, routingKey string
	version        int
	envelope       []byte
	attempts       int           // refused publishes before this round
	seq            sql.NullInt64 // ordering_seq: the fact's number in its key's sequence
	due            time.Time     // due_at: when a scheduled fact was due; zero for the others
	copies         []byte        // the further versions of a fact written in several; nil for the others
}

type failure struct {
	row row
	err error
}

// batchResult is what one round did.
type batchResult struct {
	claimedAt                      time.Time // the clock the claim read rows by; zero if it did not
	claimed, published, unroutable int
	failures                       []failure // refused: an attempt spent
	unavailable                    int       // not published because the broker could not be reached
	unavailableErr                 error     // the first of those
}

// relay runs one round: claim, publish, settle. See [Relay.RelayOnce].
func (r *Relay) relay(ctx context.Context) (batchResult, error) {
	var b batchResult
	if err := ctx.Err(); err != nil {
		return b, err
	}
	// The transaction does not end with ctx: once publishes are confirmed,
	// deleting their rows is what keeps a stopping relay from publishing
	// them again. Its own deadline covers the publishes and the settling.
	txCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout+settleTimeout)
	defer cancel()
	tx, err := r.db.BeginTx(txCtx, sqldb.TxOptions{})
	if err != nil {
		return b, r.storeError(ctx, "begin", err)
	}
	defer tx.Rollback(txCtx) //nolint:errcheck // a no-op after Commit
	b.claimedAt = r.cfg.Now()
	rows, err := r.claimBatch(ctx, tx, b.claimedAt)
	if err != nil {
		return b, r.storeError(ctx, "claim", err)
	}
	b.claimed = len(rows)
	if len(rows) == 0 {
		return b, nil
	}

	outcomes := r.publish(ctx, rows)

	var confirmed []string
	interrupted := 0
	now := r.cfg.Now()
	for i, row := range rows {
		switch err := outcomes[i]; {
		case err == nil:
			confirmed = append(confirmed, row.id)
		case stoppedBy(ctx, err):
			// Not a failure of this fact: the relay is stopping. The row
			// stays as it was, and the next relay publishes it (again, if
			// the broker kept this publish after all).
			interrupted++
		case unreachable(err):
			// The broker is down or blocked: an outage, not a property of
			// the fact, so it costs no attempt.
			b.unavailable++
			if b.unavailableErr == nil {
				b.unavailableErr = fmt.Errorf("outbox: message %s: %w", row.id, err)
			}
		default:
			b.failures = append(b.failures, failure{row: row, err: fmt.Errorf("outbox: message %s: %w", row.id, err)})
			if errors.Is(err, runtime.ErrUnroutable) {
				b.unroutable++
			}
		}
	}
	if err := r.settle(txCtx, tx, confirmed, b.failures, now); err != nil {
		return batchResult{claimed: b.claimed}, fmt.Errorf("%w (the %d facts the broker confirmed are published again by a later round)", err, len(confirmed))
	}
	b.published = len(confirmed)
	r.published.Add(uint64(b.published))
	r.failed.Add(uint64(len(b.failures) + b.unavailable))
	r.unroutable.Add(uint64(b.unroutable))
	for _, f := range b.failures {
		if f.row.attempts+1 >= r.cfg.MaxAttempts {
			r.markedFailed.Add(1)
		}
	}

	errs := make([]error, 0, len(b.failures)+2)
	for _, f := range b.failures {
		errs = append(errs, f.err)
	}
	if b.unavailable > 0 {
		errs = append(errs, fmt.Errorf("outbox: %d facts not published, the broker is unavailable: %w", b.unavailable, b.unavailableErr))
	}
	if interrupted > 0 {
		errs = append(errs, fmt.Errorf("outbox: %d facts left for a later round: %w", interrupted, context.Cause(ctx)))
	}
	return b, errors.Join(errs...)
}

// claimBatch opens the claim (the dialect's lock first) and reads the due
// rows: the scheduled ones that fell due, soonest due first, then the
// others, oldest id first. It runs under ctx, so a relay that is stopped
// while waiting for a lock gives up without having claimed anything.
func (r *Relay) claimBatch(ctx context.Context, tx sqldb.Tx, at time.Time) ([]row, error) {
	for _, stmt := range r.setup {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	now := r.d.Time(at)
	// Scheduled facts that fell due first: they are late already.
	rows, err := r.claimRows(ctx, tx, nil, r.claimDue, now, now, r.cfg.BatchSize)
	if err != nil || len(rows) == r.cfg.BatchSize {
		return rows, err
	}
	return r.claimRows(ctx, tx, rows, r.claimNow, now, r.cfg.BatchSize-len(rows))
}

// claimRows runs one claim query and appends its rows to rows.
func (r *Relay) claimRows(ctx context.Context, tx sqldb.Tx, rows []row, q string, args ...any) ([]row, error) {
	rs, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return rows, err
	}
	defer rs.Close()
	for rs.Next() {
		var x row
		var due any
		if err := rs.Scan(&x.id, &x.routingKey, &x.version, &x.envelope, &x.attempts, &x.seq, &due, &x.copies); err != nil {
			return rows, err
		}
		if x.due, err = timeOf(due); err != nil {
			return rows, err
		}
		rows = append(rows, x)
	}
	return rows, rs.Err()
}

// nextDueIn returns how long until the next scheduled row falls due after
// claimedAt, the clock of the last claim, and false when none waits (or the
// database could not say: the poll interval then rules). Counting from the
// claim's clock, not from now, keeps a row that fell due between the claim
// and this query from being missed by both: it is due at once.
func (r *Relay) nextDueIn(ctx context.Context, claimedAt time.Time) (time.Duration, bool) {
	now := r.cfg.Now()
	if claimedAt.IsZero() {
		claimedAt = now
	}
	var next any
	err := readRows(ctx, r.db, r.nextDue, []any{r.d.Time(claimedAt)}, func(rs sqldb.Rows) error { return rs.Scan(&next) })
	if err != nil {
		return 0, false
	}
	t, err := timeOf(next)
	if err != nil || t.IsZero() {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// publish publishes rows and returns each row's outcome. It sends them one
// after the other, in id order, on the publisher's channel, with up to
// Concurrency sent and not yet confirmed: the broker receives them in the
// order they were claimed, while their confirms are awaited side by side.
//
// Once ctx is done no further publish starts, but those already under way
// get ShutdownTimeout to be confirmed: a publish abandoned after it was
// sent may well have reached the broker, and its row, left in the table,
// would be published a second time.
func (r *Relay) publish(ctx context.Context, rows []row) []error {
	grace, abandon := context.WithCancelCause(context.WithoutCancel(ctx))
	defer abandon(nil)
	pubCtx, cancel := context.WithTimeout(grace, r.cfg.PublishTimeout)
	defer cancel()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(r.cfg.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			abandon(context.Cause(ctx))
		}
	}()

	outcomes := make([]error, len(rows))
	slots := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range rows {
		if ctx.Err() == nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			outcomes[i] = fmt.Errorf("not published: %w", context.Cause(ctx))
			continue
		}
		h, err := r.send(pubCtx, rows[i])
		if err != nil {
			outcomes[i] = err
			<-slots
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			outcomes[i] = h.Wait(pubCtx)
		})
	}
	wg.Wait()
	return outcomes
}

// send checks a row and sends its fact, without waiting for the confirm;
// a fact written in several versions is sent in each.
func (r *Relay) send(ctx context.Context, x row) (*runtime.Pending, error) {
	var env runtime.Envelope
	if err := json.Unmarshal(x.envelope, &env); err != nil {
		return nil, fmt.Errorf("%w: decode envelope: %w", errInvalid, err)
	}
	if env.ID != x.id {
		return nil, fmt.Errorf("%w: envelope id %q differs from the row's id", errInvalid, env.ID)
	}
	f, err := r.checked(x, x.version, env.Payload)
	if err != nil {
		return nil, err
	}
	if len(x.copies) == 0 {
		return r.pub.PublishEnvelopeAsync(ctx, f, env)
	}
	var stored []storedCopy
	if err := json.Unmarshal(x.copies, &stored); err != nil {
		return nil, fmt.Errorf("%w: decode copies: %w", errInvalid, err)
	}
	copies := []runtime.EnvelopeCopy{{Fact: f, Envelope: env}}
	for _, c := range stored {
		cf, err := r.checked(x, c.Version, c.Payload)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", c.Version, err)
		}
		copies = append(copies, runtime.EnvelopeCopy{Fact: cf, Envelope: runtime.Envelope{ID: env.ID, OccurredAt: env.OccurredAt, Payload: c.Payload}})
	}
	return r.pub.PublishEnvelopeVersionsAsync(ctx, copies...)
}

// checked returns the Fact that publishes version v of row x's fact, once
// payload matched that version's schema.
func (r *Relay) checked(x row, v int, payload []byte) (runtime.Fact, error) {
	// The payload was validated by Write; it is validated again only
	// against the facts the relay was given, in the row's version (a fact
	// of several versions keeps rows of each).
	f, ok := r.versions[factVersion{x.routingKey, max(v, 1)}]
	if !ok {
		f = r.facts[x.routingKey]
		f.Validate = nil
	}
	if f.Validate != nil {
		if err := f.Validate(payload); err != nil {
			return f, fmt.Errorf("%w: payload does not match its schema: %w", errInvalid, err)
		}
	}
	f.RoutingKey, f.Version, f.Validate = x.routingKey, v, nil
	if x.seq.Valid {
		f = f.WithSequence(sequenceSource(r.table), x.seq.Int64)
	}
	if !x.due.IsZero() {
		f = f.WithDueAt(x.due)
	}
	return f, nil
}

// settle deletes (or marks published) the confirmed rows, records the
// refusals on theirs, marking failed those out of attempts, and commits.
func (r *Relay) settle(ctx context.Context, tx sqldb.Tx, confirmed []string, failures []failure, now time.Time) error {
	if len(confirmed) > 0 {
		var args []any
		if r.cfg.KeepPublished > 0 {
			args = append(args, r.d.Time(now))
		}
		marks := make([]string, len(confirmed))
		for i, id := range confirmed {
			args = append(args, id)
			marks[i] = r.d.Placeholder(len(args))
		}
		stmt := fmt.Sprintf("%s WHERE id IN (%s)", r.markPub, strings.Join(marks, ", "))
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return r.storeError(ctx, "settle published rows", err)
		}
	}
	for _, f := range failures {
		retryAt := now.Add(r.retryDelay(f.row.attempts + 1))
		stamp := r.d.Time(now)
		if _, err := tx.ExecContext(ctx, r.fail, errorText(f.err), stamp, r.d.Time(retryAt), r.cfg.MaxAttempts, stamp, f.row.id); err != nil {
			return r.storeError(ctx, "record refused publish", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return r.storeError(ctx, "commit", err)
	}
	return nil
}

// pruneKept deletes published and discarded rows past their keeping time,
// in batches. A failure is an outage of the database like any other.
func (r *Relay) pruneKept(ctx context.Context) {
	now := r.cfg.Now()
	// With KeepPublished zero no row is marked published: any cutoff does.
	published := r.d.Time(now.Add(-r.cfg.KeepPublished))
	discarded := r.d.Time(now.Add(-r.cfg.KeepDiscarded))
	for ctx.Err() == nil {
		n, err := r.pruneBatch(ctx, published, discarded)
		if err != nil {
			r.observe(batchResult{}, r.storeError(ctx, "prune kept rows", err))
			return
		}
		if n < pruneBatch {
			return
		}
	}
}

func (r *Relay) pruneBatch(ctx context.Context, published, discarded any) (int64, error) {
	tx, err := r.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	for _, stmt := range r.setup {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, r.prune, published, discarded)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return n, tx.Commit(ctx)
}

// retryDelay is how long a row waits after its n-th refused publish.
func (r *Relay) retryDelay(n int) time.Duration {
	d := r.cfg.RetryMin
	for i := 1; i < n && d < r.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, r.cfg.RetryMax)
}

func (r *Relay) storeError(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	return fmt.Errorf("%w: %s %s: %s: %w", errStore, r.cfg.Dialect, r.table, op, err)
}

// stoppedBy reports whether err is ctx ending rather than a failure of the
// publish itself.
func stoppedBy(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, ctx.Err()) || errors.Is(err, context.Cause(ctx)))
}

// unreachable reports whether a publish failed because the broker could
// not be reached in time (down, blocked by an alarm, the publisher closed)
// rather than because it refused the fact.
func unreachable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, runtime.ErrClosed)
}

func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorText {
		s = s[:maxErrorText]
	}
	return strings.ToValidUTF8(s, "?")
}

// factVersion is one version of a fact, which validates the outbox rows
// written in it.
type factVersion struct {
	routingKey string
	version    int
}
