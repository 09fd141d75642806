package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// A batch consumer (topology.Consumer.Batch) hands its handler up to
// Batch.Size facts at once and settles each on its own:
//
//   - A batch closes at Size facts or Batch.Wait after its first fact,
//     whichever comes first. Its facts are unacked deliveries, so a batch
//     never holds more than the prefetch. One filler per channel reads the
//     deliveries and checks them as they arrive, a run at a time (a long
//     run shared with a helper), so that the next batch is filled and
//     checked while the Concurrency workers handle theirs.
//   - The done facts of a batch are acked with one multiple ack, once the
//     batches filled before it are complete too (their other facts being
//     settled one by one before): one frame instead of Size.
//   - Each fact is checked (body, envelope, schema) before the batch
//     reaches the handler: one that fails goes to poison on its own, and
//     the others go on without it.
//   - The handler returns an outcome per fact ([Outcomes]) or one error
//     for all. A fact done is acked; a failed one walks its own retry
//     ladder (its own attempt header), a permanent one goes to poison with
//     its own failure headers, an [Unavailable] one is held without
//     spending an attempt, and a deferred one waits in the delay levels,
//     each exactly as a plain consumer settles it. A panic fails the
//     whole batch as a retry.
//   - Outcomes that name a fact not in the batch, or that leave one out,
//     are an error naming them; the facts left out are retried.
//   - With a [BatchGuard] the claims of the batch are made in one round
//     trip in the transaction the handler writes in; facts claimed before
//     are acked as duplicates without reaching the handler, and the claims
//     of failed facts are let go before the commit.
//   - A run of unavailable batches pauses the consumer as it pauses a
//     plain one ([OutagePolicy]); each batch counts once.
//   - Of a fact published in several versions side by side, the copies
//     of the versions the consumer does not handle (see versions.go) are
//     acked unhandled before any check, counted as DuplicateSkipped, as a
//     plain consumer acks them: never poisoned, never in a batch.

// Item is one fact of a batch with the delivery that carried it.
type Item[T any] struct {
	Delivery Delivery
	Fact     T
}

// Outcomes are a batch handler's verdict on each fact of its batch, by
// message id ([Delivery.MessageID]): nil for a fact done, an error for one
// that failed, meaning what it means for a single fact ([Permanent],
// [Unavailable], [Defer], any other error retried). Outcomes must name
// every fact of the batch and no other; a handler whose facts all
// succeeded may return nil Outcomes and a nil error instead.
type Outcomes map[string]error

// Done records that the fact with id was handled.
func (o Outcomes) Done(id string) { o[id] = nil }

// Fail records that the fact with id failed with err (nil is replaced by
// a generic failure, so a failure is never taken for success).
func (o Outcomes) Fail(id string, err error) {
	if err == nil {
		err = errors.New("failed (no error given)")
	}
	o[id] = err
}

// BatchFunc handles one batch B of a batch consumer: a generated batch
// type that holds the batch's facts by type, each with its delivery.
type BatchFunc[B any] func(ctx context.Context, batch B) (Outcomes, error)

type batchKey struct{}

// Collect returns the Route of a batch consumer that adds each fact of f
// to the batch being built, with add. Generated batch consumer
// constructors build one per fact the consumer receives; B is the
// generated batch type, the same for every route of a consumer.
func Collect[B, T any](f Fact, add func(batch *B, item Item[T])) Route {
	field, items := itemsField[B, T](), reflect.TypeFor[[]Item[T]]()
	return Handle(f, func(ctx context.Context, d Delivery, fact T) error {
		bo, ok := ctx.Value(batchKey{}).(*batchOf[B])
		if !ok {
			return Permanent(fmt.Errorf("fact %s: its route was built with Collect but the consumer is not a batch consumer of this batch type", f.RoutingKey))
		}
		if field >= 0 {
			bo.size(field, f.RoutingKey, items)
		}
		add(&bo.b, Item[T]{Delivery: d, Fact: fact})
		return nil
	})
}

// batchOf is a batch being built, in the ctx of its routes' calls.
type batchOf[B any] struct {
	b     B
	facts []*batchFact
}

// size gives B's field (a []Item[T], of type t) room for the batch's facts
// of routingKey before the first is added: appending them one by one
// would copy the slice, facts and all, about as often as it doubles.
func (bo *batchOf[B]) size(field int, routingKey string, t reflect.Type) {
	v := reflect.ValueOf(&bo.b).Elem().Field(field)
	if v.Cap() > 0 {
		return
	}
	n := 0
	for _, f := range bo.facts {
		if f.in.routingKey == routingKey {
			n++
		}
	}
	v.Set(reflect.MakeSlice(t, 0, n))
}

// itemsField returns the index of B's one exported field of type
// []Item[T], or -1 if it has none or several (Collect then leaves the
// slices to add).
func itemsField[B, T any]() int {
	bt, want := reflect.TypeFor[B](), reflect.TypeFor[[]Item[T]]()
	if bt.Kind() != reflect.Struct {
		return -1
	}
	found := -1
	for i := range bt.NumField() {
		if sf := bt.Field(i); sf.Type == want && sf.IsExported() {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

// batchRefuses are the options that do not apply to a batch consumer.
var batchRefuses = map[optionSet]string{
	optMiddleware:      "middleware wraps the handling of one fact, and a batch consumer's handler takes a batch",
	optMaxDeferInPlace: "a batch consumer's deferred facts wait in the delay levels, not in place",
}

// orderedBatchRefuses are the options that do not apply to an ordered
// batch consumer, whose deferred facts wait in place.
var orderedBatchRefuses = map[optionSet]string{optMiddleware: batchRefuses[optMiddleware]}

// NewBatchConsumer returns a batch consumer of c's work queue: c must be a
// batch consumer of the topology (topology.Consumer.Batch). routes, built
// with [Collect], add each fact to a B; fn handles each batch. Facts with
// no route go to poison. A guard given with [WithGuard] must be a
// [BatchGuard]; [WithMiddleware] does not apply, nor [WithMaxDeferInPlace]
// unless c is ordered. An ordered c (topology.Consumer.Shards) gets
// batches of at most one fact per ordering key (see batch_ordered.go).
func NewBatchConsumer[B any](conn *Conn, c topology.Consumer, routes []Route, fn BatchFunc[B], opts ...ConsumerOption) (*Consumer, error) {
	var errs []error
	switch {
	case c.Batch == (topology.Batch{}):
		errs = append(errs, errors.New("not a batch consumer (topology.Consumer.Batch is not set): build it with NewConsumer"))
	case c.Batch.Size < 1:
		errs = append(errs, fmt.Errorf("batch size %d: expected at least 1", c.Batch.Size))
	}
	if c.Batch != (topology.Batch{}) && c.Batch.Wait <= 0 {
		errs = append(errs, fmt.Errorf("batch wait %s: expected a positive duration", c.Batch.Wait))
	}
	if fn == nil {
		errs = append(errs, errors.New("nil batch handler"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new consumer %q: %w", c.Name, err)
	}
	refused := batchRefuses
	if c.Ordered() {
		refused = orderedBatchRefuses
	}
	cons, err := newConsumer(conn, c, routes, refused, opts)
	if err != nil {
		return nil, err
	}
	var guard BatchGuard
	if g := cons.opts.guard; g != nil {
		bg, ok := g.(BatchGuard)
		if !ok {
			return nil, fmt.Errorf("new consumer %q: guard %T cannot claim a batch: expected a runtime.BatchGuard (runtime/idempotency's guards are)", c.Name, g)
		}
		guard = bg
	}
	if c.Batch.Size > cons.opts.prefetch {
		return nil, fmt.Errorf("new consumer %q: batch size %d: expected at most the prefetch (%d), or no batch could fill", c.Name, c.Batch.Size, cons.opts.prefetch)
	}
	cons.batch = &batchState{guard: guard, call: func(ctx context.Context, facts []*batchFact) (Outcomes, error) {
		bo := &batchOf[B]{facts: facts}
		bctx := context.WithValue(ctx, batchKey{}, bo)
		for _, f := range facts {
			if err := f.h.call.invoke(bctx, f.d); err != nil {
				return nil, err
			}
		}
		return fn(ctx, bo.b)
	}}
	var k kind[*batchJob] = batchKind{cons}
	if c.Ordered() {
		cons.ordered = newOrderedState()
		k = orderedBatchKind{cons}
	}
	eng := &engine[*batchJob]{core: &cons.core, kind: k}
	cons.run = eng.run
	return cons, nil
}

// batchState is what a batch consumer keeps besides a plain one's.
type batchState struct {
	guard BatchGuard // nil without a guard
	// call builds the batch of facts and calls the handler with it.
	call func(ctx context.Context, facts []*batchFact) (Outcomes, error)
}

// batchJob is one batch of deliveries, as its source closed it.
type batchJob struct {
	ds     []amqp.Delivery
	facts  []prepared    // ds, inspected and checked
	waited time.Duration // from its first delivery until it closed
	// src is the source that closed the batch, which acks its done facts
	// together with those of the batches before it; nil for a probe, whose
	// facts are acked one by one.
	src *batchSource
	// done are the facts to ack, each with the event it counts as, once
	// the batch is complete.
	done     []doneFact
	complete bool // every fact is settled but those in done

	// An ordered batch's facts, by their place in ds: again holds the
	// state of each one tried again in place (the zero inbound for one
	// new in hand), later what became of each once handled.
	again []inbound
	later []inPlace
}

type doneFact struct {
	in *inbound // the batch fact's own: an inbound is hundreds of bytes
	e  Event
}

// prepared is a delivery inspected and checked before its batch is
// handled: the fact ready for the handler, or why it failed its checks,
// or another copy of a fact published in several versions (skip).
type prepared struct {
	in   *inbound // f's own when it passed (a batch holds one slot per fact)
	f    *batchFact
	err  error
	skip bool // another version's copy: acked unhandled as a duplicate
}

func (j *batchJob) add(p prepared) {
	j.ds = append(j.ds, p.in.d)
	j.facts = append(j.facts, p)
}

// prepare counts a delivery and checks its bytes, envelope and payload.
func (c *Consumer) prepare(s *session, d amqp.Delivery) prepared {
	in := inspect(s, d)
	c.count(Delivered, in.routingKey)
	if d.Redelivered {
		c.count(Redelivered, in.routingKey)
	}
	if c.otherCopy(in) {
		return skippedCopy(in)
	}
	f, err := c.checkFact(in)
	if err != nil {
		return failedCheck(in, err)
	}
	return prepared{in: &f.in, f: f}
}

// failedCheck is the prepared delivery that failed its checks; apart from
// prepare, so that only a failure moves its inbound to the heap.
func failedCheck(in inbound, err error) prepared { return prepared{in: &in, err: err} }

// skippedCopy is the prepared delivery that is another copy of a fact
// published in several versions; apart from prepare, as failedCheck is.
func skippedCopy(in inbound) prepared { return prepared{in: &in, skip: true} }

// otherCopy reports whether in is a copy of a fact published in several
// versions that the consumer does not handle (see [Route.otherCopy]): a
// batch consumer acks it unhandled, counted as DuplicateSkipped, as
// [Consumer.handle] does for a plain consumer, before it is checked
// against a schema of a version it may not read.
func (c *Consumer) otherCopy(in inbound) bool {
	route, ok := c.routes[in.routingKey]
	return ok && route.otherCopy(in.d.Headers, versionOf(in.d.Headers))
}

// batchKind is a batch consumer on the engine: it reads one work queue,
// its source closes batches, and an outage pauses it.
type batchKind struct{ c *Consumer }

func (k batchKind) queues() []string { return []string{k.c.spec.Queue} }

func (k batchKind) source(r *channelRun, feeds []<-chan amqp.Delivery) source[*batchJob] {
	s := &batchSource{out: make(chan *batchJob)}
	go s.fill(k.c, r, feeds[0])
	return s
}

func (k batchKind) work(r *channelRun, j *batchJob) { k.c.processBatch(r.hctx, j) }

func (k batchKind) giveBack(j *batchJob, why string) {
	for _, d := range j.ds {
		k.c.giveBack(d, why)
	}
	k.c.release(j)
}

func (k batchKind) hold(r *channelRun, j *batchJob) {
	for _, d := range j.ds {
		k.c.hold(r.hctx, inspect(r.s, d), errPaused)
	}
	k.c.release(j)
}

// probe handles one delivery as a batch of one.
func (k batchKind) probe(r *channelRun, d amqp.Delivery) error {
	j := &batchJob{}
	j.add(k.c.prepare(r.s, d))
	return k.c.processBatch(r.hctx, j)
}

func (batchKind) traits() traits { return traits{pauses: true, queueNoun: "work queue"} }

// batchSource closes batches of one feed: its filler reads the feed,
// checks each fact as it arrives (so that a batch is checked while the
// previous one is handled), and closes a batch at its size or its wait
// after its first fact; the workers take the closed batches in turn.
type batchSource struct {
	out chan *batchJob // closed batches; closed once the feed ends

	// open are the batches closed and not yet acked, in the order they
	// were filled, which is the order of their delivery tags: once the
	// first ones are complete, one multiple ack of the highest tag among
	// them acks every done fact they hold, and nothing else is unacked
	// below it (their other facts are settled already).
	mu   sync.Mutex
	open []*batchJob
}

// fill closes batches from feed until it ends, or until the channel is
// gone (what was taken then returns to the queue by itself).
func (s *batchSource) fill(c *Consumer, r *channelRun, feed <-chan amqp.Delivery) {
	defer close(s.out)
	// The facts are decoded and checked as they arrive, by the filler and,
	// for a long run of them, by helpers in parallel: the decoding is most
	// of a batch consumer's work, and a batch's facts are independent of
	// each other.
	tasks := make(chan checkTask, checkers)
	defer close(tasks)
	for range checkers - 1 {
		go func() {
			for t := range tasks {
				t.run(c, r)
			}
		}()
	}
	size, wait := c.spec.Batch.Size, c.spec.Batch.Wait
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		first, ok := <-feed
		if !ok {
			return
		}
		opened := time.Now()
		j := &batchJob{ds: make([]amqp.Delivery, 0, size), facts: make([]prepared, size), src: s}
		var checked sync.WaitGroup
		j.ds = append(j.ds, first)
		timer.Reset(wait)
		ended := false
		sent := 0 // j.ds[:sent] are checked, or with a helper
	filling:
		for len(j.ds) < size {
			// Take what the feed holds already without blocking, and check
			// it as one run: under load, a hand-off and a goroutine's
			// wake-up per delivery were much of the consumer's CPU beside
			// the decoding, and each one on a batch's way to its handler
			// waits for the machine's scheduler.
			for len(j.ds) < size {
				select {
				case d, ok := <-feed:
					if !ok {
						ended = true
						break filling
					}
					j.ds = append(j.ds, d)
					continue
				default:
				}
				break
			}
			sent = s.check(c, r, tasks, j, sent, &checked)
			if len(j.ds) == size {
				break
			}
			select {
			case d, ok := <-feed:
				if !ok {
					ended = true
					break filling
				}
				j.ds = append(j.ds, d)
			case <-timer.C:
				break filling
			}
		}
		s.check(c, r, tasks, j, sent, &checked)
		j.waited = time.Since(opened)
		checked.Wait()
		j.facts = j.facts[:len(j.ds)]
		s.mu.Lock()
		s.open = append(s.open, j)
		s.mu.Unlock()
		select {
		case s.out <- j:
		case <-r.stop:
			return
		}
		if ended {
			return
		}
	}
}

// check checks j.ds[from:] and returns how many of j.ds are checked or
// being checked. The filler checks a run itself, between two waits for
// the feed, so that a batch closes without waking another goroutine; a run
// long enough to share is split, the helpers checking their parts while
// the filler checks the last.
func (s *batchSource) check(c *Consumer, r *channelRun, tasks chan<- checkTask, j *batchJob, from int, wg *sync.WaitGroup) int {
	rest := j.ds[from:]
	parts := 1
	if len(rest) >= checkers*minCheck {
		parts = checkers
	}
	per := (len(rest) + parts - 1) / parts
	for i := 0; i < len(rest); i += per {
		n := min(per, len(rest)-i)
		t := checkTask{ds: rest[i : i+n], slots: j.facts[from+i : from+i+n]}
		if i+n < len(rest) {
			wg.Add(1)
			t.wg = wg
			tasks <- t
			continue
		}
		t.run(c, r)
	}
	return len(j.ds)
}

// checkers is how many goroutines of a batch consumer's channel decode
// and check its facts: the filler and checkers-1 helpers. minCheck is the
// fewest deliveries worth handing to each of them rather than checking
// all in the filler.
const (
	checkers = 2
	minCheck = 8
)

// checkTask is a run of deliveries to check, and where their results go.
type checkTask struct {
	ds    []amqp.Delivery
	slots []prepared
	wg    *sync.WaitGroup // nil when the filler checks the run itself
}

func (t checkTask) run(c *Consumer, r *channelRun) {
	for i, d := range t.ds {
		t.slots[i] = c.prepare(r.s, d)
	}
	if t.wg != nil {
		t.wg.Done()
	}
}

func (s *batchSource) next(stop <-chan struct{}) (*batchJob, bool) {
	select {
	case j, ok := <-s.out:
		return j, ok
	case <-stop:
		return nil, false
	}
}

func (*batchSource) done(*batchJob) {}

// release marks j complete and acks the done facts of the complete
// batches at the head of the channel's open ones with one multiple ack,
// counting each. The ack is made under the lock, so that two of them never
// cross: a lower multiple ack after a higher one would name tags acked
// already, which the broker takes for an error and closes the channel.
func (c *Consumer) release(j *batchJob) {
	s := j.src
	if s == nil {
		for _, f := range j.done {
			c.ack(*f.in, f.e)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j.complete = true
	n := 0
	var last *inbound
	for n < len(s.open) && s.open[n].complete {
		for i := range s.open[n].done {
			last = s.open[n].done[i].in
		}
		n++
	}
	if n == 0 {
		return
	}
	released := slices.Clone(s.open[:n])
	s.open = slices.Delete(s.open, 0, n)
	if last == nil {
		return
	}
	if err := last.d.Ack(true); err != nil {
		// The channel is gone; the broker redelivers the messages.
		c.log.Debug("ack failed; the messages will be redelivered", "message_id", last.d.MessageId, "err", c.conn.redact(err))
		return
	}
	for _, b := range released {
		for _, f := range b.done {
			c.count(f.e, f.in.routingKey)
		}
	}
}
func (*batchSource) lost() <-chan string { return nil }

// batchFact is one fact of a batch that passed its checks.
type batchFact struct {
	in       inbound
	d        Delivery
	h        *handling
	returned func(transport.Outcome)
	err      error // its outcome, once the handler returned
	dup      bool  // the guard had seen it
}

// processBatch checks, handles and settles every delivery of j; it
// returns the error of the batch's handling that an outage probe goes by:
// an Unavailable one when the batch, or any of its facts, was unavailable.
func (c *Consumer) processBatch(ctx context.Context, j *batchJob) error {
	facts := make([]*batchFact, 0, len(j.facts))
	var byID map[string]*batchFact // the guard's: one claim per message id
	if c.batch.guard != nil {
		byID = make(map[string]*batchFact, len(j.facts))
	}
	for _, p := range j.facts {
		if p.skip {
			// The fact in another version, which the consumer handles
			// instead: acked unhandled with the batch's done facts.
			j.done = append(j.done, doneFact{p.in, DuplicateSkipped})
			continue
		}
		if p.err != nil {
			// Fails the same on every attempt: poisoned now, on its own.
			c.settle(ctx, *p.in, false, p.err)
			continue
		}
		f := p.f
		if c.batch.guard != nil && byID[f.d.MessageID] != nil {
			// The same fact twice in one batch (published twice, or
			// redelivered while in hand): one claim decides it, so the
			// second goes back and meets the guard on its next delivery.
			c.giveBack(p.in.d, "the same message id is in the batch already")
			continue
		}
		if byID != nil {
			byID[f.d.MessageID] = f
		}
		facts = append(facts, f)
	}
	if len(facts) == 0 {
		c.release(j)
		return nil
	}
	if bm, ok := c.metrics.(BatchMetrics); ok {
		bm.ObserveBatch(c.name, len(facts), j.waited)
	}
	c.handleBatch(ctx, facts)
	var unavailable error
	for _, f := range facts {
		settled, deferred := c.deferral(f.in, f.err)
		f.returned(transport.Outcome{Err: f.err, Duplicate: f.dup, Deferred: deferred})
		switch {
		case f.dup:
			j.done = append(j.done, doneFact{&f.in, DuplicateSkipped})
		case settled == nil:
			j.done = append(j.done, doneFact{&f.in, Acked})
		default:
			if c.end(ctx, f.in, f.dup, settled) && unavailable == nil {
				unavailable = settled
			}
		}
	}
	c.release(j)
	// The batch counts once towards an outage: a whole batch unavailable
	// is one failure, as one fact is for a plain consumer.
	if unavailable != nil {
		c.outage.failed(unavailable)
	} else {
		c.outage.succeeded()
	}
	return unavailable
}

// checkFact checks a delivery's bytes, envelope and payload as [handle]
// does before the handler, and returns it ready for the batch.
func (c *Consumer) checkFact(in inbound) (*batchFact, error) {
	if err := checkBody(in.d, c.opts.maxBodySize); err != nil {
		return nil, err
	}
	read := in
	if route, ok := c.routes[in.routingKey]; ok {
		read = route.readAs(in)
	}
	head, h, err := c.decode(read)
	if err != nil {
		return nil, err
	}
	return &batchFact{in: in, h: h, d: Delivery{
		MessageID: head.ID, OccurredAt: head.OccurredAt, RoutingKey: in.routingKey,
		Attempt: in.attempt, Redelivered: in.d.Redelivered, Consumer: c.spec.Name,
		DueAt: in.due, Deferrals: in.deferrals, Headers: read.d.Headers,
	}}, nil
}

// handleBatch calls the handler with facts, through the guard if there
// is one, and leaves each fact's outcome in it.
func (c *Consumer) handleBatch(ctx context.Context, facts []*batchFact) {
	for _, f := range facts {
		f.returned = f.in.sess.handlerStarted(c.spec.Name, f.in.d)
	}
	if c.batch.guard == nil {
		c.callBatch(ctx, facts)
		return
	}
	ids := make([]string, len(facts))
	for i, f := range facts {
		ids[i] = f.d.MessageID
	}
	reached := false
	var fresh []*batchFact
	dups, err := c.batch.guard.RunBatch(ctx, c.spec.Name, ids, func(ctx context.Context, freshIDs []string) ([]string, error) {
		reached = true
		fresh = pick(facts, freshIDs)
		failedAll := c.callBatch(ctx, fresh)
		if failedAll != nil {
			return nil, failedAll
		}
		var failed []string
		for _, f := range fresh {
			if f.err != nil {
				failed = append(failed, f.d.MessageID)
			}
		}
		return failed, nil
	})
	seen := make(map[string]bool, len(dups))
	for _, id := range dups {
		seen[id] = true
	}
	for _, f := range facts {
		switch {
		case seen[f.d.MessageID]:
			f.dup, f.err = true, nil
		case err != nil && (!reached || f.err == nil):
			// The store failed to claim, release or commit: the fact is
			// fine, and its work was rolled back.
			f.err = Unavailable(fmt.Errorf("idempotency store: %w", err))
		case !reached || !slices.Contains(fresh, f):
			f.err = Unavailable(errors.New("idempotency store: the guard neither claimed the fact nor reported it handled"))
		}
	}
}

// pick returns the facts whose ids are in ids, in the order of facts.
func pick(facts []*batchFact, ids []string) []*batchFact {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := make([]*batchFact, 0, len(ids))
	for _, f := range facts {
		if want[f.d.MessageID] {
			out = append(out, f)
		}
	}
	return out
}

// callBatch calls the handler with facts and leaves each fact's outcome in
// it; it returns the error that failed the batch as a whole (the
// handler's one error, or its panic), nil when the facts have outcomes of
// their own.
func (c *Consumer) callBatch(ctx context.Context, facts []*batchFact) (whole error) {
	start := time.Now()
	outcomes, err := safeBatch(ctx, facts, c.batch.call)
	c.metrics.ObserveHandler(c.spec.Name, "", time.Since(start), err)
	if err != nil {
		if p := (*PanicError)(nil); errors.As(err, &p) {
			// Once for the batch: each fact's own line names the panic.
			c.log.Error("batch handler panicked; each fact of the batch fails with the panic", "facts", len(facts), "err", secret.Error(err), "stack", string(p.Stack))
			p.stackLogged = true
		}
		for _, f := range facts {
			f.err = err
		}
		return err
	}
	if outcomes == nil {
		return nil
	}
	ids := make(map[string]bool, len(facts))
	var missing []string
	for _, f := range facts {
		ids[f.d.MessageID] = true
		o, ok := outcomes[f.d.MessageID]
		if !ok {
			missing = append(missing, f.d.MessageID)
		}
		f.err = o
	}
	var unknown []string
	for id := range outcomes {
		if !ids[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		c.log.Error("batch handler returned outcomes for facts not in its batch; they are ignored", "message_ids", strings.Join(unknown, ", "))
	}
	if len(missing) > 0 {
		miss := fmt.Errorf("batch handler returned no outcome for %s; retried", strings.Join(missing, ", "))
		if len(unknown) > 0 {
			miss = fmt.Errorf("%w (it returned outcomes for %s, which are not in the batch)", miss, strings.Join(unknown, ", "))
		}
		for _, f := range facts {
			if _, ok := outcomes[f.d.MessageID]; !ok {
				f.err = miss
			}
		}
	}
	return nil
}

// safeBatch calls call, turning a panic into a *PanicError for the batch.
func safeBatch(ctx context.Context, facts []*batchFact, call func(context.Context, []*batchFact) (Outcomes, error)) (o Outcomes, err error) {
	defer func() {
		if v := recover(); v != nil {
			o, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return call(ctx, facts)
}

// BatchMetrics is implemented by a [Metrics] that also records batches:
// how many facts each batch handed to its handler and how long the batch
// waited from its first fact until it closed.
type BatchMetrics interface {
	ObserveBatch(consumer string, size int, wait time.Duration)
}
