package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// errStore is matched by the errors of a round whose database work failed,
// as opposed to a round in which some publishes failed.
var errStore = errors.New("outbox store")

// errBrokerGone is returned by a claim that found, once it had its turn,
// that the broker could not take a publish: it claims nothing.
var errBrokerGone = errors.New("no connection to the broker that can take a publish")

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

// heldCond is true of the claimed row o (the claim's alias of the table t)
// unless its ordering key is held: an earlier row of the key (a lower
// number) is still to be published and will not be sent before o by this
// round. That is a row refused and waiting for its retry (now, the first
// placeholder's and the second's value, is before retry_at), or marked
// failed until an operator retries or discards it; or one this claim may
// not reach before o: stored after it (a writer's clock may run behind
// the order in which writers of one key take their numbers), or, for a
// scheduled o, not scheduled (the claim of the due rows can fill the batch
// before the others are claimed). A scheduled row not yet due holds
// nothing: it is sent when due, behind the later rows of its key. Rows
// without a key (or written before the ordering_key column) are never
// held and hold nothing.
func heldCond(t sqldb.Table, now1, now2 string) string {
	return fmt.Sprintf("(o.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM %s e WHERE e.ordering_key = o.ordering_key AND e.ordering_seq < o.ordering_seq"+
		" AND e.published_at IS NULL AND e.discarded_at IS NULL AND (e.due_at IS NULL OR e.due_at <= %s)"+
		" AND (e.failed_at IS NOT NULL OR e.retry_at > %s OR e.id > o.id OR (e.due_at IS NULL AND o.due_at IS NOT NULL))))",
		t.Quoted(), now1, now2)
}

// row is one claimed outbox row.
type row struct {
	id, routingKey string
	version        int
	envelope       []byte
	attempts       int            // refused publishes before this round
	seq            sql.NullInt64  // ordering_seq: the fact's number in its key's sequence
	due            time.Time      // due_at: when a scheduled fact was due; zero for the others
	copies         []byte         // the further versions of a fact written in several; nil for the others
	key            sql.NullString // ordering_key: the key seq counts in; NULL without one
	source         string         // the source seq is published under (sourceOf); "" without seq
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
	held                           int       // not sent: behind an unpublished earlier fact of their key
	unavailable                    int       // not published because the broker could not be reached
	unavailableErr                 error     // the first of those; or why nothing was claimed
	brokerBack                     bool      // nothing claimed for the broker, which is back now
}

// relay runs one round: claim, publish, settle. See [Relay.RelayOnce].
func (r *Relay) relay(ctx context.Context) (batchResult, error) {
	b, err := r.round(ctx)
	if b.brokerBack {
		// The broker came back while the round waited for it: claim now.
		return r.round(ctx)
	}
	return b, err
}

// round is one try of relay.
func (r *Relay) round(ctx context.Context) (batchResult, error) {
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
	if errors.Is(err, errBrokerGone) {
		// Nothing is claimed while the broker cannot take a publish: a
		// claim holds its rows, the turn of the other relays
		// (PostgreSQL's advisory lock) and, on SQLite, the one write lock
		// of the business transactions until it commits, and a publish
		// waiting for the broker would hold them for the whole
		// PublishTimeout, round after round. The turn goes back at once,
		// and the broker is waited for without holding anything.
		_ = tx.Rollback(txCtx)
		b.claimedAt = time.Time{}
		werr := r.brokerReady(ctx)
		if cerr := ctx.Err(); cerr != nil {
			return b, cerr
		}
		if werr == nil {
			b.brokerBack = true
			werr = err
		}
		b.unavailableErr = fmt.Errorf("outbox: nothing claimed, the broker is unavailable: %w", werr)
		return b, b.unavailableErr
	}
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
		case errors.Is(err, errHeld):
			// Unsent, behind an earlier fact of its key that was not
			// published: the row stays as it was, and costs no attempt.
			b.held++
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
				// Wrapped below in "outbox: N facts not published", and
				// logged by the relay's logger, whose component says outbox.
				b.unavailableErr = fmt.Errorf("message %s: %w", row.id, err)
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

// brokerReady waits, up to PublishTimeout, until the relay's publisher
// can write to the broker (connected, not blocked by a resource alarm),
// holding nothing meanwhile.
func (r *Relay) brokerReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	return r.pub.Ready(ctx)
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
	// Only a broker that can take a publish now is worth a claim (see
	// relay). Asked once the turn (the lock above) has come, which may be
	// after another relay's round; not waited for.
	now0, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.pub.Ready(now0); err != nil {
		return nil, errBrokerGone
	}
	now := r.d.Time(at)
	// Scheduled facts that fell due first: they are late already.
	rows, err := r.claimRows(ctx, tx, nil, r.claimDue, now, now, now, now, r.cfg.BatchSize)
	if err == nil && len(rows) < r.cfg.BatchSize {
		rows, err = r.claimRows(ctx, tx, rows, r.claimNow, now, now, now, r.cfg.BatchSize-len(rows))
	}
	if err != nil {
		return rows, err
	}
	numberOrder(rows)
	if err := r.sourceRows(ctx, tx, rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// sourceRows gives the numbered rows the source their numbers are
// published under, read in the claim's transaction when there are any: a
// batch without them never needs it. Read in every such claim, not kept,
// so an id drawn again (after a backup was restored) is used from the
// next round on.
func (r *Relay) sourceRows(ctx context.Context, tx sqldb.Tx, rows []row) error {
	source := ""
	for i := range rows {
		if !rows[i].seq.Valid {
			continue
		}
		if source == "" {
			var err error
			if source, err = sourceOf(ctx, tx, r.table); err != nil {
				return err
			}
		}
		rows[i].source = source
	}
	return nil
}

// numberOrder puts the rows of each ordering key in the order of their
// numbers, in the places the claim gave that key's rows: the claim reads
// by id (or due time), which writers of one key on clocks apart may not
// follow.
func numberOrder(rows []row) {
	places := map[string][]int{}
	for i, x := range rows {
		if x.key.Valid && x.seq.Valid {
			places[x.key.String] = append(places[x.key.String], i)
		}
	}
	for _, at := range places {
		if len(at) < 2 {
			continue
		}
		keyRows := make([]row, len(at))
		for j, i := range at {
			keyRows[j] = rows[i]
		}
		slices.SortStableFunc(keyRows, func(a, b row) int { return cmp.Compare(a.seq.Int64, b.seq.Int64) })
		for j, i := range at {
			rows[i] = keyRows[j]
		}
	}
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
		if err := rs.Scan(&x.id, &x.routingKey, &x.version, &x.envelope, &x.attempts, &x.seq, &due, &x.copies, &x.key); err != nil {
			return rows, err
		}
		if x.due, err = timeOf(due); err != nil {
			return rows, err
		}
		rows = append(rows, x)
	}
	return rows, rs.Err()
}

// nextDueIn returns how long until the next row may be claimed after
// claimedAt, the clock of the last claim: a scheduled row falls due, or a
// refused row reaches its retry time. It returns false when none waits
// (or the database could not say: the poll interval then rules).
// Counting from the claim's clock, not from now, keeps a row that fell
// due between the claim and this query from being missed by both: it is
// due at once.
func (r *Relay) nextDueIn(ctx context.Context, claimedAt time.Time) (time.Duration, bool) {
	now := r.cfg.Now()
	if claimedAt.IsZero() {
		claimedAt = now
	}
	var next any
	at := r.d.Time(claimedAt)
	err := readRows(ctx, r.db, r.nextDue, []any{at, at, at}, func(rs sqldb.Rows) error { return rs.Scan(&next) })
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
// after the other, in the order claimed, on the publisher's channel, with
// up to Concurrency sent and not yet confirmed: the broker receives them in
// that order, while their confirms are awaited side by side.
//
// The rows of one ordering key are the exception: a key has one publish in
// flight at a time, its next row sent once the broker confirmed the one
// before, by the goroutine that awaited that confirm. A row refused, or
// not confirmed, so can never be overtaken by a later row of its key: the
// rest of the key's rows in the batch are held (errHeld), unsent and
// unchanged, and the claims after hold them too (heldCond) until it is
// published. Other keys, and rows without a key, go on meanwhile.
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

	go r.watchBroker(finished, abandon)

	p := &publishing{r: r, ctx: ctx, pubCtx: pubCtx, rows: rows, outcomes: make([]error, len(rows)),
		slots: make(chan struct{}, r.cfg.Concurrency), keys: map[string]*keyLine{}}
	for i := range rows {
		if !rows[i].key.Valid {
			p.start(i, "")
			continue
		}
		k := rows[i].key.String
		p.mu.Lock()
		line := p.keys[k]
		if line == nil {
			line = &keyLine{}
			p.keys[k] = line
		}
		switch {
		case line.broken:
			p.outcomes[i] = errHeld
			p.mu.Unlock()
			continue
		case line.busy:
			line.waiting = append(line.waiting, i)
			p.mu.Unlock()
			continue
		}
		line.busy = true
		p.mu.Unlock()
		p.start(i, k)
	}
	p.wg.Wait()
	return p.outcomes
}

// outageGrace is how long a round's broker may stay unreachable (no
// connection, or a resource alarm) before the round gives up the
// publishes still waiting, as unavailable, and commits, releasing its
// claim: a reconnect to a broker that is up takes well under it
// (RELIABILITY.md: 6 to 442 ms after a forced close).
const outageGrace = 2 * time.Second

// watchEvery is how often a round looks at its broker.
const watchEvery = 100 * time.Millisecond

// watchBroker ends the publishes of a round, with errBrokerGone, once its
// broker has been unreachable for outageGrace, until done closes. Without
// it a round that lost its broker would hold its claim (the rows, the
// other relays' turn, SQLite's write lock) for the whole PublishTimeout.
func (r *Relay) watchBroker(done <-chan struct{}, abandon context.CancelCauseFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-done
		cancel()
	}()
	now0, cancelNow := context.WithCancel(ctx)
	cancelNow()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if r.pub.Ready(now0) == nil {
			continue
		}
		wait, cancelWait := context.WithTimeout(ctx, outageGrace)
		err := r.pub.Ready(wait)
		cancelWait()
		if err != nil && ctx.Err() == nil {
			abandon(errBrokerGone)
			return
		}
	}
}

// errHeld is the outcome of a row not sent because an earlier row of its
// ordering key in the batch was not published: not a failure of its own.
var errHeld = errors.New("held behind an earlier fact of its ordering key")

// publishing is one batch's publishes under way.
type publishing struct {
	r           *Relay
	ctx, pubCtx context.Context
	rows        []row
	outcomes    []error
	slots       chan struct{}
	wg          sync.WaitGroup
	mu          sync.Mutex
	keys        map[string]*keyLine // by ordering key
}

// keyLine is the rows of one ordering key in a batch.
type keyLine struct {
	busy    bool  // a row of the key is being sent or awaits its confirm
	waiting []int // rows of the key to send after it, in order
	broken  bool  // a row of the key was not published: hold the rest
}

// start sends row i, of ordering key k ("" for none), once a slot is free,
// and awaits its confirm in a goroutine, which then sends the key's next
// row. A row that cannot start (ctx done, or its send failed) ends its
// key's line.
func (p *publishing) start(i int, k string) {
	ctx := p.ctx
	if ctx.Err() == nil {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		p.outcomes[i] = fmt.Errorf("not published: %w", context.Cause(ctx))
		p.next(k, false)
		return
	}
	if p.pubCtx.Err() != nil {
		// The round gave up (its broker gone, or PublishTimeout): send
		// nothing more.
		p.outcomes[i] = fmt.Errorf("not published: %w", context.Cause(p.pubCtx))
		<-p.slots
		p.next(k, false)
		return
	}
	h, err := p.r.send(p.pubCtx, p.rows[i])
	if err != nil {
		p.outcomes[i] = err
		<-p.slots
		p.next(k, false)
		return
	}
	p.wg.Go(func() {
		err := h.Wait(p.pubCtx)
		p.outcomes[i] = err
		<-p.slots
		p.next(k, err == nil)
	})
}

// next goes on with key k's line once its row in flight was published
// (ok) or not: it sends the key's next waiting row, or, after a row not
// published, holds the rest.
func (p *publishing) next(k string, ok bool) {
	if k == "" {
		return
	}
	p.mu.Lock()
	line := p.keys[k]
	if !ok {
		line.broken = true
		for _, j := range line.waiting {
			p.outcomes[j] = errHeld
		}
		line.waiting = nil
	}
	if len(line.waiting) == 0 {
		line.busy = false
		p.mu.Unlock()
		return
	}
	j := line.waiting[0]
	line.waiting = line.waiting[1:]
	p.mu.Unlock()
	p.start(j, k)
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
		f = f.WithSequence(x.source, x.seq.Int64)
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
// in batches. A failure is an outage of the database like any other; a
// prune cut short because ctx ended is Run stopping, not a failure.
func (r *Relay) pruneKept(ctx context.Context) {
	now := r.cfg.Now()
	// With KeepPublished zero no row is marked published: any cutoff does.
	published := r.d.Time(now.Add(-r.cfg.KeepPublished))
	discarded := r.d.Time(now.Add(-r.cfg.KeepDiscarded))
	for ctx.Err() == nil {
		n, err := r.pruneBatch(ctx, published, discarded)
		if err != nil {
			if ctx.Err() != nil {
				// The rows stay for the next prune; logging this as the
				// database going down would raise an error at every
				// shutdown that lands here.
				return
			}
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
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, runtime.ErrClosed) || errors.Is(err, errBrokerGone)
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
