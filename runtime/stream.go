package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// A stream consumer (topology.Consumer.Stream) reads a stream and its own
// work queue, as two feeds of the one engine: the stream over the stream
// protocol (stream_read.go) or, with WithStreamReadOverAMQP or an offset
// store that does not read streams, both on one AMQP channel (this file):
//
//   - The stream is consumed over AMQP from the consumer's stored offset
//     plus one, or, the first time, from its declared start. Each fact is
//     handled, validated, decoded and guarded as a plain consumer's.
//   - A handler failure never holds the stream: the fact is copied to the
//     consumer's retry ladder (or poison queue) with the same headers as a
//     plain consumer's copy, the copy confirmed, and the consumer reads on.
//     The retry comes back through the consumer's work queue, so a failed
//     fact is handled again after facts written after it: a stream
//     consumer keeps the stream's order only for facts that succeed the
//     first time.
//   - The offset stored on the broker is the highest one below which every
//     fact is settled (acked, or copied and acked): a crash re-reads what
//     was in hand and what was settled since the last store (the guard
//     skips what was done), and never skips a fact. It is stored at most
//     once per WithOffsetStoreInterval (by default
//     DefaultOffsetStoreInterval), one store in flight at a time, and once
//     more when the consumer stops.
//   - Facts on the stream that the consumer's bindings do not match (the
//     stream carries facts of other bindings) are skipped, not poisoned; a
//     fact they match that the consumer has no route for (its code does
//     not know the fact) is poisoned as not handled, as in a work queue.
//   - An outage of a dependency ([Unavailable]) delays the fact in the
//     retry ladder without spending an attempt; the consumer does not
//     pause, since a stream has no basic.get to probe with.

// handlesStreamFact reports whether a fact of the consumer's stream with
// routing key key is the consumer's to handle: it has a route for it, or
// its bindings match it (no route: poisoned as not handled). A consumer
// built from a topology without patterns goes by its routes alone.
func (c *Consumer) handlesStreamFact(key string) bool {
	if _, ok := c.routes[key]; ok {
		return true
	}
	return c.spec.Binds(key)
}

// streamJob is one delivery of a stream consumer's channel.
type streamJob struct {
	d      amqp.Delivery
	stream bool  // from the stream, not the work queue
	offset int64 // its offset in the stream (stream facts only)
	// givenBack counts the times a consumer group's fact was handed back
	// to be handled again (groupKind.again).
	givenBack int
}

// streamKind reads a stream and the consumer's work queue.
type streamKind struct {
	c *Consumer
	t *offsetTracker
}

func (k streamKind) queues() []string { return []string{k.c.spec.Stream, k.c.spec.Queue} }

// consumeArgs starts the stream's consume at the consumer's position.
func (k streamKind) consumeArgs(queue string, args amqp.Table) (amqp.Table, error) {
	if queue != k.c.spec.Stream {
		return args, nil
	}
	pos, err := k.t.position()
	if err != nil {
		return nil, err
	}
	out := amqp.Table{"x-stream-offset": pos}
	for key, v := range args {
		out[key] = v
	}
	return out, nil
}

func (k streamKind) source(r *channelRun, feeds []<-chan amqp.Delivery) source[streamJob] {
	k.t.restart()
	return newStreamSource(k.queues(), feeds, k.t, r.acks, k.c.opts.prefetch, r.stop, &streamAck{run: r})
}

// streamAck acknowledges the facts read from the stream. RabbitMQ before
// 3.13 refuses basic.nack and basic.reject on a stream by closing the
// whole connection (NOT_IMPLEMENTED), with every publisher and consumer
// on it; later releases take either as an ack, and the fact would not be
// read again. So a stream fact that cannot be settled (its retry or
// poison copy not confirmed; with maxAttempts 1, a dependency
// [Unavailable]) is not given back but read again: its offset stays
// unsettled, so the stored offset stays before it, and the consumer's
// channel is closed, so that the engine resumes on a new one (after the
// reconnect backoff) and reads the stream from the stored offset. An ack
// only returns credit.
type streamAck struct {
	amqp.Acknowledger // the channel's
	run               *channelRun
}

func (a *streamAck) Nack(tag uint64, _, _ bool) error { return a.reread(tag) }
func (a *streamAck) Reject(tag uint64, _ bool) error  { return a.reread(tag) }

func (a *streamAck) reread(tag uint64) error {
	a.run.closeToReread(fmt.Errorf("a fact of the stream (delivery tag %d) could not be settled: reading the stream again from the stored offset", tag))
	return nil
}

// work handles a job. Its ack, and every other ack of the channel, goes
// through the channel's acker, several deliveries with one multiple ack:
// a stream consumed over AMQP is sent as the acks return credit, and one
// ack per fact cost a frame and a write per fact. A stream fact counts as
// settled once its handling ended in an ack, sent or waiting: the
// stream's position is the stored offset, not the channel's acks.
func (k streamKind) work(r *channelRun, j streamJob) {
	if !j.stream {
		k.c.processAcks(r.hctx, r.s, j.d, r.acks)
		return
	}
	switch past, handled := k.t.take(j.offset); {
	case past:
		// Past a replay's bound: held unsettled (and not ended in the
		// acker, see streamSource.done), so the stored offset stays at
		// the bound and the broker, its credit spent, sends no more.
		return
	case handled:
		r.acks.ack(j.d, uncounted, j.d.RoutingKey)
		return
	}
	if !k.c.handlesStreamFact(j.d.RoutingKey) {
		// Another consumer's fact on the same stream.
		r.acks.ack(j.d, uncounted, j.d.RoutingKey)
		k.t.settled(j.offset)
		return
	}
	if k.c.processStream(r.hctx, r.s, j.d, r.acks) {
		k.t.settled(j.offset)
	}
}

// giveBack returns a work queue's delivery to its queue. A stream fact (at
// shutdown: received, not started) is left unsettled and unacked, without
// a nack (see streamAck): the stored offset stays before it, and the
// consumer's next read of the stream starts there.
func (k streamKind) giveBack(j streamJob, why string) {
	if !j.stream {
		k.c.giveBack(j.d, why)
		return
	}
	k.c.count(Returned, j.d.RoutingKey)
	k.c.log.Debug("left a stream fact unsettled, to be read again", "message_id", j.d.MessageId, "offset", j.offset, "why", why)
}

func (streamKind) traits() traits {
	return traits{queueNoun: "stream or work queue", finishesOnLoss: true, acksTogether: true}
}

// streamSource merges the stream's feed and the work queue's into one
// line of jobs, noting each stream fact's offset as it arrives, and tells
// the channel's acker what is in hand and what ended.
type streamSource struct {
	jobs  chan streamJob
	ended chan string
	acks  *acker
	t     *offsetTracker
}

// Its readers end when their feeds do, or when stop closes (the channel is
// lost: what they still hold is read again from the stored offset), and
// the next channel's source waits for them before it forgets what was in
// hand: a reader of the old channel noting an offset after that would
// hold the mark back for good.
func newStreamSource(queues []string, feeds []<-chan amqp.Delivery, t *offsetTracker, acks *acker, prefetch int, stop <-chan struct{}, streamAcks *streamAck) *streamSource {
	s := &streamSource{jobs: make(chan streamJob, prefetch), ended: make(chan string, 1), acks: acks, t: t}
	var readers sync.WaitGroup
	for i, feed := range feeds {
		readers.Go(func() {
			for d := range feed {
				// In hand from here: a delivery waiting in jobs counts
				// against the prefetch as one in a handler does.
				acks.inHand.Add(1)
				j := streamJob{d: d, stream: i == 0}
				if j.stream {
					j.offset = StreamOffset(d)
					t.arrived(j.offset)
					if streamAcks.Acknowledger == nil {
						streamAcks.Acknowledger = d.Acknowledger
					}
					j.d.Acknowledger = streamAcks
				}
				select {
				case s.jobs <- j:
				case <-stop:
					return
				}
			}
			select {
			case s.ended <- queues[i]:
			default:
			}
		})
	}
	read := make(chan struct{})
	t.readersOf(read)
	go func() { readers.Wait(); close(read); close(s.jobs) }()
	return s
}

func (s *streamSource) next(stop <-chan struct{}) (streamJob, bool) {
	select {
	case <-stop:
		return streamJob{}, false
	case j, ok := <-s.jobs:
		return s.took(j, ok)
	default:
	}
	// About to wait: the acks that wait may be what the broker waits for.
	s.acks.idle(false)
	select {
	case <-stop:
		return streamJob{}, false
	case j, ok := <-s.jobs:
		return s.took(j, ok)
	}
}

func (s *streamSource) took(j streamJob, ok bool) (streamJob, bool) {
	if !ok {
		s.acks.idle(true)
	}
	return j, ok
}

// done ends j's tag in the acker unless j is a stream fact past a
// replay's bound, held unacked: a multiple ack above it would ack it, and
// the broker would send on past the bound.
func (s *streamSource) done(j streamJob) {
	s.acks.inHand.Add(-1)
	if j.stream && s.t.pastBound(j.offset) {
		return
	}
	s.acks.ended(j.d.DeliveryTag)
}

func (s *streamSource) lost() <-chan string { return s.ended }

// StreamOffset returns the offset RabbitMQ puts on every delivery from a
// stream (header x-stream-offset), or -1 for a delivery without one.
func StreamOffset(d amqp.Delivery) int64 {
	switch v := d.Headers["x-stream-offset"].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	}
	return -1
}

// offsetTracker keeps a stream consumer's offset: which facts of the
// stream are in hand, the highest offset below which all are settled (the
// mark), and what the broker has stored.
type offsetTracker struct {
	c      *Consumer
	stream string // the stream, or a super stream's partition, it tracks
	name   string // the name the offset is stored under (WithOffsetName)
	until  int64  // a replay's bound: the last offset it reads; -1 for none
	ended  bool   // the bound was reached, stored and logged
	mu     sync.Mutex
	order  []int64        // offsets in hand, in arrival (stream) order
	done   map[int64]bool // settled offsets still behind an unsettled one
	mark   int64          // every fact up to it settled; -1 for none yet
	stored int64          // what the broker holds; -1 for nothing stored
	kick   chan struct{}  // the mark moved
	store  sync.Mutex     // one store at a time
	// readers closes once the readers of the last channel's source have
	// ended (nil before the first): restart waits for it.
	readers <-chan struct{}
	// For a super stream's partition: gen counts the member's
	// subscriptions to it, a fact of an earlier one is dropped unhandled
	// unless a handler had it (see partitionTrackers.lost); base is gen
	// at the last activation, before which a fact's settling no longer
	// counts; busy counts its facts in a handler; lost: the subscription
	// ended, and the offset is not stored until the member is active on
	// the partition again.
	gen, base uint64
	busy      int
	lost      bool
	// sub tells a delivery read over the stream protocol, waiting for
	// room in the feed, that its subscription ended.
	sub subscriptionEnd
}

func newOffsetTracker(c *Consumer) *offsetTracker {
	var stream string
	if c != nil {
		stream = c.spec.Stream
	}
	return newTrackerOf(c, stream)
}

// newTrackerOf is an offset tracker of c in stream (a super stream's
// partition).
func newTrackerOf(c *Consumer, stream string) *offsetTracker {
	t := &offsetTracker{c: c, stream: stream, until: -1, done: map[int64]bool{}, mark: -1, stored: -1, kick: make(chan struct{}, 1)}
	if c != nil {
		t.name = guardName(c.spec.Name, c.opts.offsetName)
	}
	return t
}

// restart forgets what a lost channel had in hand, once its readers have
// ended: it is read again.
func (t *offsetTracker) restart() {
	t.mu.Lock()
	readers := t.readers
	t.mu.Unlock()
	if readers != nil {
		<-readers
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// The facts settled behind one that was not stay known: the new
	// channel reads them again from the stored offset, and they are
	// skipped rather than handled twice (take).
	t.order = nil
	for off := range t.done {
		if off <= t.mark {
			delete(t.done, off)
		}
	}
}

// readersOf notes the channel that closes when the current source's
// readers have ended.
func (t *offsetTracker) readersOf(done <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.readers = done
}

// take is what a worker given the stream fact at off does with it: past
// a replay's bound, it is held (past); settled on an earlier channel, and
// read again only because the stored offset, held back by an unsettled
// fact before it, is where the stream is read from, it is settled again
// here and skipped (handled); else it is handled. That the replay is done
// is logged by flush, once the mark at the bound is stored, not here: a
// fact past the bound may arrive while one before it is still in a
// handler, and a replay that ends at the stream's tail sees none.
func (t *offsetTracker) take(off int64) (past, handled bool) {
	t.mu.Lock()
	moved := false
	switch {
	case t.pastLocked(off):
		past = true
	case off <= t.mark || t.done[off]:
		handled = true
		moved = t.settleLocked(off)
	}
	t.mu.Unlock()
	if moved {
		t.kickStore()
	}
	return past, handled
}

// pastBound reports whether off is past a replay's bound.
func (t *offsetTracker) pastBound(off int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pastLocked(off)
}

func (t *offsetTracker) pastLocked(off int64) bool { return t.until >= 0 && off > t.until }

// atBound reports whether every fact up to a replay's bound is settled.
func (t *offsetTracker) atBound() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.until >= 0 && t.mark >= t.until
}

// replayDone logs, once, that a replay is done when stored, the offset
// the broker holds under its name, has reached its bound: every fact up
// to the bound is settled (handled, skipped, or copied to the retry
// ladder or the poison queue) and its offset stored, whether or not facts
// past the bound exist.
func (t *offsetTracker) replayDone(stored int64) {
	t.mu.Lock()
	done := t.until >= 0 && stored >= t.until && !t.ended
	if done {
		t.ended = true
	}
	until := t.until
	t.mu.Unlock()
	if done {
		t.c.log.Info("replay done: it read the stream up to its bound", "stream", t.stream, "offset_name", t.name, "until", until)
	}
}

func (t *offsetTracker) arrived(off int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.order = append(t.order, off)
}

// settled marks off done and moves the mark past every settled fact at
// the head.
func (t *offsetTracker) settled(off int64) {
	t.mu.Lock()
	moved := t.settleLocked(off)
	t.mu.Unlock()
	if moved {
		t.kickStore()
	}
}

// settleLocked is settled with t.mu held; it reports whether the mark
// moved. The mark never moves back: a fact read again from a stored
// offset below it (a store failed) is passed over.
func (t *offsetTracker) settleLocked(off int64) (moved bool) {
	t.done[off] = true
	for len(t.order) > 0 && t.done[t.order[0]] {
		head := t.order[0]
		delete(t.done, head)
		t.order = t.order[1:]
		if head > t.mark {
			t.mark, moved = head, true
		}
	}
	return moved
}

// kickStore tells the store loop that the mark moved.
func (t *offsetTracker) kickStore() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// storeLoop stores the mark the store interval after it moves, gathering
// the moves meanwhile (with an interval of 0, each time it moves), until
// ctx ends; a store that fails is logged and tried again at the next move
// and at the end.
func (t *offsetTracker) storeLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
			// A replay's bound reached is stored at once: its
			// "replay done" waits for that store.
			if every := t.storeInterval(); every > 0 && !t.atBound() {
				wait := time.NewTimer(every)
				select {
				case <-ctx.Done():
					wait.Stop()
					return // the last store is Run's, at the end
				case <-wait.C:
				}
			}
			if err := t.flush(); err != nil {
				t.c.log.Warn("could not store the stream offset; storing it at the next fact", "stream", t.stream, "err", t.c.conn.redact(err))
			}
		}
	}
}

// storeInterval is how long the store loop gathers the mark's moves
// before it stores: the consumer's WithOffsetStoreInterval, else the
// store's own interval if it has one (IntervalStore), else
// DefaultOffsetStoreInterval. The store is open by the first move: the
// consumer read its offset from it before it read the stream.
func (t *offsetTracker) storeInterval() time.Duration {
	if t.c.opts.given&optOffsetEvery != 0 {
		return t.c.opts.offsetEvery
	}
	if s, ok := t.c.conn.openOffsets().(IntervalStore); ok {
		return s.StoreInterval()
	}
	return DefaultOffsetStoreInterval
}

// offsetCallTimeout bounds one call of the offset store. The stream
// client waits on a lost node (its locator retries the node for seconds)
// rather than fail: past this, the store is dropped and opened again at
// the Conn's current broker, which after a failover is another node.
const offsetCallTimeout = 3 * time.Second

// flush stores the mark on the broker if it moved past what is stored.
func (t *offsetTracker) flush() error {
	t.store.Lock()
	defer t.store.Unlock()
	t.mu.Lock()
	mark, lost := t.mark, t.lost
	t.mu.Unlock()
	if mark <= t.stored || lost {
		return nil
	}
	// The Conn's context, not a Run's: the last store comes after Run's
	// context ended, and the store's connection ends with the Conn.
	ctx, cancel := context.WithTimeout(t.c.conn.ctx, offsetCallTimeout)
	defer cancel()
	store, err := t.c.conn.offsets(ctx, fmt.Sprintf("stream consumer %q", t.c.spec.Name))
	if err != nil {
		return err
	}
	if err := store.StoreOffset(ctx, t.name, t.stream, mark); err != nil {
		t.c.conn.dropOffsets(store)
		return fmt.Errorf("store offset %d of stream %q: %w", mark, t.stream, err)
	}
	t.stored = mark
	t.replayDone(mark)
	return nil
}

// position is where the stream's consume starts: after the stored offset
// (the mark stored first, so a resumed channel does not read again what
// was settled), or the declared start the first time.
func (t *offsetTracker) position() (any, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(t.c.conn.ctx, offsetCallTimeout)
	defer cancel()
	store, err := t.c.conn.offsets(ctx, fmt.Sprintf("stream consumer %q", t.c.spec.Name))
	if err != nil {
		return nil, err
	}
	if t.name != t.c.spec.Name {
		until, bounded, err := store.QueryOffset(ctx, t.name+ReplayUntilSuffix, t.stream)
		if err != nil {
			t.c.conn.dropOffsets(store)
			return nil, fmt.Errorf("query the bound of replay %q of stream %q: %w", t.name, t.stream, err)
		}
		t.mu.Lock()
		if t.until = -1; bounded {
			t.until = until
		}
		t.mu.Unlock()
	}
	off, found, err := store.QueryOffset(ctx, t.name, t.stream)
	switch {
	case err != nil:
		t.c.conn.dropOffsets(store)
		return nil, fmt.Errorf("query the offset of stream %q: %w", t.stream, err)
	case !found && t.name != t.c.spec.Name:
		// A fresh offset name rebuilds: from the first fact kept.
		t.c.log.Info("reading the stream", "stream", t.stream, "offset_name", t.name, "from", string(topology.StartFirst), "stored", "none")
		return string(topology.StartFirst), nil
	case !found:
		start := t.c.spec.Start
		if tr, ok := store.(TailReader); ok && start.Relative() {
			from, err := t.fixStart(store, tr, start)
			if err != nil {
				return nil, err
			}
			return from, nil
		}
		t.c.log.Info("reading the stream", "stream", t.stream, "offset_name", t.name, "from", start.String(), "stored", "none")
		if tr, ok := store.(TailReader); ok && start.Kind == topology.StartOffset {
			// Not waited for: an empty stream's tail takes seconds to
			// tell.
			go t.warnPastTail(tr, start.Offset)
		}
		return start.ConsumeArgument(), nil
	}
	t.store.Lock()
	t.stored = max(t.stored, off)
	t.store.Unlock()
	t.mu.Lock()
	t.mark = max(t.mark, off)
	t.mu.Unlock()
	t.c.log.Info("reading the stream", "stream", t.stream, "offset_name", t.name, "from", off+1, "stored", off)
	// A replay that was done before this start (an earlier run reached
	// its bound) is said done again, once: nothing is left to read.
	t.replayDone(off)
	return off + 1, nil
}

// fixStart turns a start that depends on when it is read ("next",
// "last") into the offset it means now, the first time the consumer
// reads, and stores it before anything is read: the offset before it as
// the consumer's own, or, when the start is the stream's first offset,
// under the name with [StartSuffix]. Without that, a consumer that
// stopped before it settled a fact would take "next" afresh at its next
// start, and the facts written while it was stopped would be skipped. A
// later start with nothing stored under the name finds the offset stored
// with the suffix.
func (t *offsetTracker) fixStart(store OffsetStore, tr TailReader, start topology.Start) (int64, error) {
	// The tail of an empty stream takes seconds to tell on RabbitMQ
	// before 3.11 (streamoffset's DefaultTailWait): once, at the
	// consumer's first start.
	ctx, cancel := context.WithTimeout(t.c.conn.ctx, offsetCallTimeout+5*time.Second)
	defer cancel()
	from, fixed, err := store.QueryOffset(ctx, t.name+StartSuffix, t.stream)
	if err != nil {
		t.c.conn.dropOffsets(store)
		return 0, fmt.Errorf("query the start of stream %q: %w", t.stream, err)
	}
	if fixed {
		t.c.log.Info("reading the stream", "stream", t.stream, "offset_name", t.name, "from", from, "stored", "none", "start", start.String()+", fixed at the first start")
		return from, nil
	}
	last, found, err := tr.Tail(ctx, t.stream)
	if err != nil {
		t.c.conn.dropOffsets(store)
		return 0, fmt.Errorf("find the start %s of stream %q: %w", start, t.stream, err)
	}
	switch {
	case !found:
		from = 0
	case start.Kind == topology.StartLast:
		from = last
	default:
		from = last + 1
	}
	if from > 0 {
		err = store.StoreOffset(ctx, t.name, t.stream, from-1)
	} else {
		err = store.StoreOffset(ctx, t.name+StartSuffix, t.stream, 0)
	}
	if err != nil {
		t.c.conn.dropOffsets(store)
		return 0, fmt.Errorf("store the start %s of stream %q: %w", start, t.stream, err)
	}
	if from > 0 {
		// Stored as settled: the facts before the start are not the
		// consumer's to read.
		t.store.Lock()
		t.stored = max(t.stored, from-1)
		t.store.Unlock()
		t.mu.Lock()
		t.mark = max(t.mark, from-1)
		t.mu.Unlock()
	}
	t.c.log.Info("reading the stream", "stream", t.stream, "offset_name", t.name, "from", from, "stored", "none", "start", start.String()+", fixed now")
	return from, nil
}

// warnPastTail warns when a consumer's declared start offset lies past
// the stream's last fact: the broker then sends nothing until the stream
// reaches it, which otherwise looks like a consumer that reads nothing.
func (t *offsetTracker) warnPastTail(tr TailReader, start int64) {
	ctx, cancel := context.WithTimeout(t.c.conn.ctx, offsetCallTimeout+5*time.Second)
	defer cancel()
	last, found, err := tr.Tail(ctx, t.stream)
	if err != nil || (found && start <= last+1) || (!found && start == 0) {
		return
	}
	tail := "the stream holds no fact"
	if found {
		tail = fmt.Sprintf("its last fact is at offset %d", last)
	}
	t.c.log.Warn(fmt.Sprintf("the declared start offset %d is past the stream's end (%s): nothing is read until the stream reaches it", start, tail), "stream", t.stream)
}

// runStream runs a stream consumer's engine with its offset store beside
// it, and stores the final mark when the engine stops.
func runStream(c *Consumer, eng *engine[streamJob], t *offsetTracker) func(context.Context) error {
	return func(ctx context.Context) error {
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		wg.Go(func() { t.storeLoop(sctx) })
		err := eng.run(ctx)
		stop()
		wg.Wait()
		if ferr := t.flush(); ferr != nil {
			c.log.Warn("could not store the stream offset at stop; the facts after the last stored one are read again", "stream", c.spec.Stream, "err", c.conn.redact(ferr))
		}
		return err
	}
}
