package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// A consumer of a super stream (topology.Consumer.Partitions) is a member
// of the consumer group of its name on every partition, over the stream
// protocol: the broker makes one member active per partition, spreads the
// partitions over the members (instances), and when a member leaves or
// its connection drops, makes another member active on its partitions.
// It runs on the one engine with two feeds: the group's facts, and its own
// work queue (retries, deferrals, held facts) over AMQP.
//
//   - Each partition keeps its own offset under the consumer's name, the
//     highest below which every fact is settled, as a plain stream
//     consumer's. A member made active reads from that offset plus one
//     (or the declared start), so a takeover neither skips a fact nor,
//     after a clean handover, handles one twice.
//   - Handing a partition over: the broker asks the active member to let
//     go and waits for its answer before activating the next. The member
//     answers only once the partition's facts in hand are settled and
//     their offset stored (bounded by the shutdown timeout), so the next
//     member starts after them: a key's facts are handled in partition
//     order across the handover.
//   - A failure goes to the consumer's retry ladder and poison queue as
//     for a stream consumer, and the partition reads on: the retried fact
//     is handled after later facts of its key. A fact that cannot be
//     settled (its copy not confirmed) is handled again after a pause
//     (groupKind.again), its offset holding the partition's back.

// groupFeed holds a member's facts between the stream client and the
// engine: the client's deliveries, and facts the engine gave back at
// shutdown, read first by the next channel.
type groupFeed struct {
	in   chan streamJob
	mu   sync.Mutex
	back []streamJob
	// wake tells a source waiting for a fact that one was given back.
	wake chan struct{}
}

func (g *groupFeed) giveBack(j streamJob) {
	g.mu.Lock()
	g.back = append([]streamJob{j}, g.back...)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *groupFeed) takeBack() (streamJob, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.back) == 0 {
		return streamJob{}, false
	}
	j := g.back[0]
	g.back = g.back[1:]
	return j, true
}

// groupKind reads a consumer group's facts and the consumer's work queue.
type groupKind struct {
	c    *Consumer
	feed *groupFeed
}

func (k groupKind) queues() []string { return []string{k.c.spec.Queue} }

func (k groupKind) source(_ *channelRun, feeds []<-chan amqp.Delivery) source[streamJob] {
	return &groupSource{feed: k.feed, work: feeds[0]}
}

func (k groupKind) work(r *channelRun, j streamJob) {
	if !j.stream {
		k.c.process(r.hctx, r.s, j.d)
		return
	}
	k.workStream(r, j, nil)
}

// workStream handles a fact read over the stream protocol: dropped when
// its subscription has ended, passed over when skip (if set) says so,
// acked unhandled when the consumer has no route for it, and handed back
// to be handled again when it could not be settled.
func (k groupKind) workStream(r *channelRun, j streamJob, skip func() bool) {
	if a, ok := j.d.Acknowledger.(partitionAck); ok {
		if !a.t.begin(a.gen) {
			// Its subscription ended: dropped unhandled, and read again
			// from the stored offset by the stream's next reader.
			return
		}
		defer a.t.finish()
	}
	if skip != nil && skip() {
		return
	}
	if !k.c.handlesStreamFact(j.d.RoutingKey) {
		// Another consumer's fact on the same stream.
		_ = j.d.Ack(false)
		return
	}
	if !k.c.processStream(r.hctx, r.s, j.d, nil) {
		k.again(j)
	}
}

// again hands a fact that could not be settled (its retry or poison copy
// not confirmed; with maxAttempts 1, a dependency [Unavailable]) back to
// the member after a pause, to be handled again; the partition's offset
// stays before it meanwhile. The pause grows each time the same fact
// comes back, from the Conn's ReconnectMin to its ReconnectMax. If the
// member loses the partition meanwhile, the partition's next reader reads
// the fact from the stored offset.
func (k groupKind) again(j streamJob) {
	j.givenBack++
	cfg := k.c.conn.cfg
	time.AfterFunc(backoff(j.givenBack-1, cfg.ReconnectMin, cfg.ReconnectMax), func() { k.feed.giveBack(j) })
}

// begin notes that a fact of subscription gen of the partition goes to a
// handler, unless that subscription has ended (false).
func (t *offsetTracker) begin(gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return false
	}
	t.busy++
	return true
}

// finish notes that a fact begun has been handled and settled.
func (t *offsetTracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busy--
}

func (k groupKind) giveBack(j streamJob, why string) {
	if j.stream {
		// Read first by the next channel, or, once the member leaves, by
		// the partition's next active member from the stored offset.
		k.feed.giveBack(j)
		return
	}
	k.c.giveBack(j.d, why)
}

func (groupKind) traits() traits { return traits{queueNoun: "work queue", finishesOnLoss: true} }

// groupSource is one channel's line of jobs: the group's facts and the
// work queue's deliveries. It ends when the work queue's feed ends (the
// channel is gone, or its consumer was cancelled at shutdown); the
// group's facts wait for the next channel.
type groupSource struct {
	feed  *groupFeed
	work  <-chan amqp.Delivery
	ended atomic.Bool
}

func (s *groupSource) next(stop <-chan struct{}) (streamJob, bool) {
	if s.ended.Load() {
		return streamJob{}, false
	}
	// At shutdown the engine drains with a nil stop what the broker sent
	// on the work queue; the group's facts are not taken then.
	var in chan streamJob
	if stop != nil {
		if j, ok := s.feed.takeBack(); ok {
			return j, true
		}
		in = s.feed.in
	}
	var wake chan struct{}
	if in != nil {
		wake = s.feed.wake
	}
	select {
	case <-stop:
		return streamJob{}, false
	case j := <-in:
		return j, true
	case <-wake:
		return s.next(stop)
	case d, ok := <-s.work:
		if !ok {
			s.ended.Store(true)
			return streamJob{}, false
		}
		return streamJob{d: d}, true
	}
}

func (*groupSource) done(streamJob)      {}
func (*groupSource) lost() <-chan string { return nil }

// partitionTrackers are a member's offset trackers, one per partition.
type partitionTrackers struct {
	c  *Consumer
	mu sync.Mutex
	by map[string]*offsetTracker
}

func (p *partitionTrackers) of(partition string) *offsetTracker {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.by[partition]
	if !ok {
		t = newTrackerOf(p.c, partition)
		p.by[partition] = t
	}
	return t
}

func (p *partitionTrackers) all() []*offsetTracker {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*offsetTracker, 0, len(p.by))
	for _, t := range p.by {
		out = append(out, t)
	}
	return out
}

// partitionAck settles a fact of a partition: acked, it counts towards
// the partition's offset; given back, it stays before it, and is read
// again by the partition's next active member.
type partitionAck struct {
	t      *offsetTracker
	gen    uint64 // the member's subscription to the partition it came from
	offset int64
}

func (a partitionAck) Ack(uint64, bool) error {
	// A fact in a handler when its subscription ended still counts, up
	// to the partition's next activation, which waited for it.
	a.t.mu.Lock()
	current := a.gen >= a.t.base
	a.t.mu.Unlock()
	if current {
		a.t.settled(a.offset)
	}
	return nil
}

func (a partitionAck) Nack(uint64, bool, bool) error   { return nil }
func (a partitionAck) Reject(tag uint64, _ bool) error { return nil }

// delivery turns a fact of t's stream, read over the stream protocol by
// its current subscription, into the delivery that every consumer
// handles, in hand from here.
func (t *offsetTracker) delivery(m StreamMessage) streamJob {
	t.mu.Lock()
	gen := t.gen
	t.order = append(t.order, m.Offset)
	t.mu.Unlock()
	if m.Headers == nil {
		m.Headers = map[string]any{}
	}
	// As RabbitMQ gives a plain stream's reader over AMQP; the message's
	// own map, which nothing else holds.
	m.Headers["x-stream-offset"] = m.Offset
	d := amqp.Delivery{
		Acknowledger: partitionAck{t: t, gen: gen, offset: m.Offset},
		Headers:      amqp.Table(m.Headers),
		ContentType:  m.ContentType,
		DeliveryMode: amqp.Persistent,
		MessageId:    m.MessageID,
		Timestamp:    m.Timestamp,
		Type:         m.Type,
		Exchange:     m.Exchange,
		RoutingKey:   m.RoutingKey,
		Body:         m.Body,
		DeliveryTag:  uint64(m.Offset),
	}
	return streamJob{d: d, stream: true, offset: m.Offset}
}

// lost notes that the member's subscription to a partition ended: its
// facts not yet in a handler are dropped (whoever reads the partition next
// reads them again from the stored offset), and the offset is not stored
// meanwhile, since another member may already be storing it.
func (p *partitionTrackers) lost(partition string) {
	t := p.of(partition)
	t.sub.end()
	busy := t.subscriptionLost()
	p.c.log.Info("lost a partition's subscription; subscribing again", "partition", partition, "in_hand", busy)
}

// subscriptionLost notes that the subscription to t's stream ended: its
// facts not yet in a handler are dropped, and the offset is not stored
// until the next subscription's position is known. It returns how many
// facts are in a handler.
func (t *offsetTracker) subscriptionLost() (busy int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	t.lost = true
	return t.busy
}

// waitHandlers ends the facts of the subscriptions before this one
// (those not yet in a handler are dropped) and waits, up to the
// consumer's shutdown timeout, for those in a handler: reading again
// from the stored offset while they run would handle them twice, and out
// of order.
func (t *offsetTracker) waitHandlers() {
	t.mu.Lock()
	t.gen++
	t.mu.Unlock()
	for deadline := time.Now().Add(t.c.opts.shutdownTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		t.mu.Lock()
		busy := t.busy
		t.mu.Unlock()
		if busy == 0 {
			return
		}
	}
}

// activated returns where to read a partition from once the member is
// made its active consumer: after the highest of the offset stored on the
// broker and the mark of what this member settled, or the declared start.
// It first drops the facts of an earlier subscription still waiting and
// waits (up to the shutdown timeout) for those in a handler: reading again
// from the stored offset while they ran would handle them twice, and out
// of order.
func (p *partitionTrackers) activated(partition string) StreamPosition {
	t := p.of(partition)
	c := p.c
	t.waitHandlers()
	t.sub.begin()
	var off int64
	found := false
	var err error
	// A node just lost can fail the first query: the Conn's store is then
	// opened again, at its current broker, for the next.
	for try := 0; try < 3; try++ {
		var store OffsetStore
		ctx, cancel := context.WithTimeout(c.conn.ctx, offsetCallTimeout)
		store, err = c.conn.offsets(ctx, fmt.Sprintf("stream consumer %q", c.spec.Name))
		if err == nil {
			off, found, err = store.QueryOffset(ctx, c.spec.Name, partition)
			if err != nil {
				c.conn.dropOffsets(store)
			}
		}
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		// Reading from the start would handle again what was done: the
		// guard skips those, and nothing is skipped.
		c.log.Warn("could not read a partition's stored offset; reading it from the declared start", "partition", partition, "err", c.conn.redact(err))
	}
	t.mu.Lock()
	t.order, t.done, t.lost, t.base = nil, map[int64]bool{}, false, t.gen
	stored := int64(-1)
	if found {
		stored = off
	}
	// This member's mark is ahead of the stored offset when it settled
	// facts after its last store (the subscription ended meanwhile):
	// they are not read again, and the mark is stored below. Behind it,
	// another member read on from the stored offset: the mark follows.
	mark := max(t.mark, stored)
	t.mark = mark
	t.mu.Unlock()
	t.store.Lock()
	t.stored = stored
	t.store.Unlock()
	if mark > stored {
		if err := t.flush(); err != nil {
			c.log.Warn("could not store a partition's offset", "partition", partition, "err", c.conn.redact(err))
		}
	}
	// Worded as a plain stream consumer's "reading the stream".
	shownStored := any("none")
	if found {
		shownStored = off
	}
	if mark >= 0 {
		c.log.Info("active on a partition", "partition", partition, "stored", shownStored, "from", mark+1)
		return StreamPosition{Offset: mark + 1}
	}
	start := c.spec.Start
	if err == nil && start.Relative() {
		if from, ok := p.fixStart(t, start); ok {
			c.log.Info("active on a partition", "partition", partition, "stored", "none", "from", from)
			return StreamPosition{Offset: from}
		}
	}
	c.log.Info("active on a partition", "partition", partition, "stored", "none", "from", start.String())
	return StreamPosition{Offset: -1, Start: string(start.Kind), Time: start.Time}
}

// fixStart is the plain stream consumer's fixStart on a partition the
// member is the first to read: the offset its "next" or "last" means now,
// stored, so that a member that stops before it settles a fact leaves no
// gap. ok is false when the store cannot tell a stream's tail, or the
// offset could not be found or stored (logged): the declared start is
// then read as it stands.
func (p *partitionTrackers) fixStart(t *offsetTracker, start topology.Start) (from int64, ok bool) {
	c := p.c
	ctx, cancel := context.WithTimeout(c.conn.ctx, offsetCallTimeout)
	store, err := c.conn.offsets(ctx, fmt.Sprintf("stream consumer %q", c.spec.Name))
	cancel()
	if err != nil {
		c.log.Warn("could not fix a partition's start; reading from the declared start", "partition", t.stream, "err", c.conn.redact(err))
		return 0, false
	}
	tr, isTail := store.(TailReader)
	if !isTail {
		return 0, false
	}
	if from, err = t.fixStart(store, tr, start); err != nil {
		c.log.Warn("could not fix a partition's start; reading from the declared start", "partition", t.stream, "err", c.conn.redact(err))
		return 0, false
	}
	return from, true
}

// deactivated waits until the partition's facts in hand are settled, then
// stores its offset: the next member reads on from there.
func (p *partitionTrackers) deactivated(partition string) {
	t := p.of(partition)
	deadline := time.Now().Add(p.c.opts.shutdownTimeout)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		n := len(t.order)
		t.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := t.flush(); err != nil {
		p.c.log.Warn("could not store a partition's offset when handing it over; its next reader reads again from the last stored one", "partition", partition, "err", p.c.conn.redact(err))
	}
	p.c.log.Info("handed a partition over", "partition", partition)
}

// runGroup joins the consumer group, runs the engine, and on the way out
// stores each partition's offset before leaving the group.
func runGroup(c *Consumer, eng *engine[streamJob], feed *groupFeed, p *partitionTrackers) func(context.Context) error {
	return func(ctx context.Context) error {
		need := fmt.Sprintf("stream consumer %q", c.spec.Name)
		// The member's own connection: the Conn's shared store is closed
		// and opened again at another node after a failed store, which
		// must not end the membership. The member's own connection
		// follows each partition to its nodes, and re-subscribes a
		// partition whose node was lost.
		store, err := c.conn.ownOffsets(ctx, need)
		if err != nil {
			return fmt.Errorf("consumer %q: %w", c.spec.Name, err)
		}
		defer store.Close()
		gs, ok := store.(GroupStore)
		if !ok {
			return fmt.Errorf("consumer %q reads super stream %q: its offset store does not join consumer groups; use runtime/streamoffset", c.spec.Name, c.spec.Stream)
		}
		leaving := make(chan struct{})
		member, err := gs.Join(ctx, ConsumerGroup{
			SuperStream: c.spec.Stream,
			Consumer:    c.spec.Name,
			Activated:   p.activated,
			Deactivated: p.deactivated,
			Lost:        p.lost,
			Retrying: func(partition string, err error) {
				c.log.Warn("could not subscribe to a partition again; trying again", "partition", partition, "err", c.conn.redact(err))
				c.noteError(err)
			},
			Deliver: func(m StreamMessage) {
				t := p.of(m.Partition)
				ended := t.sub.current()
				select {
				case feed.in <- t.delivery(m):
				case <-leaving:
					// Not settled: read again by the partition's next reader.
				case <-ended:
					// Read again by the partition's next reader.
				}
			},
		})
		if err != nil {
			return fmt.Errorf("consumer %q: %w", c.spec.Name, c.conn.redact(err))
		}
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		for _, t := range p.all() {
			wg.Go(func() { t.storeLoop(sctx) })
		}
		err = eng.run(ctx)
		stop()
		wg.Wait()
		var ferrs []error
		for _, t := range p.all() {
			ferrs = append(ferrs, t.flush())
		}
		if ferr := errors.Join(ferrs...); ferr != nil {
			c.log.Warn("could not store a partition's offset at stop; the facts after the last stored one are read again", "err", c.conn.redact(ferr))
		}
		close(leaving)
		if lerr := member.Leave(); lerr != nil {
			c.log.Debug("leave the consumer group", "err", c.conn.redact(lerr))
		}
		return err
	}
}
