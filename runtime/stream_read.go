package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A plain stream consumer whose offset store reads streams (a
// StreamReader, as runtime/streamoffset's is) reads its stream over the
// stream protocol, on a connection of its own, and its work queue over
// AMQP, as two feeds of the one engine, as a consumer group's member
// does. What it guarantees is a stream consumer's over AMQP (stream.go):
//
//   - The first subscription starts from the stored offset plus one, or
//     the declared start; after a loss (the connection dropped, the node
//     went down), the next starts from the stored offset plus one, once
//     the facts in a handler have finished (up to the shutdown timeout)
//     and the mark is stored. Facts settled behind an unsettled one are
//     read again and skipped.
//   - A fact that cannot be settled (its retry or poison copy not
//     confirmed) is handed back after a pause and handled again
//     (groupKind.again); the stored offset stays before it meanwhile.
//     Over AMQP the channel was closed and the stream read again instead.
//   - A replay's reading ends at its bound: the subscription is closed,
//     and nothing past the bound is handled or stored.
//
// Why: the broker sends a stream-protocol reader the stored chunks as
// they are, where it turns each fact into a delivery for an AMQP reader.
// Measured here (docs/BENCHMARKS.md), the broker spent 20 to 31 µs of CPU
// per fact on an AMQP reader of a stream and 2 to 8 on a stream-protocol
// reader, on the same two cores as the consumer, which read a backlog 1.3
// to 2.2 times as fast so; a lone fact arrives about 1 ms later
// (WithStreamReadOverAMQP).

// readKind reads a plain stream over the stream protocol and the
// consumer's work queue over AMQP, as a consumer group's member reads its
// partitions (groupKind), with one offset tracker.
type readKind struct {
	groupKind
	t *offsetTracker
}

// subscriptionEnd tells a delivery waiting for room in the feed that its
// subscription ended: it is dropped, and read again by the next.
type subscriptionEnd struct {
	mu    sync.Mutex
	ended chan struct{} // closed when the current subscription ended
}

// begin starts a subscription's watch.
func (s *subscriptionEnd) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = make(chan struct{})
}

// end tells the current subscription's deliveries that it ended.
func (s *subscriptionEnd) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		return // no subscription begun
	}
	select {
	case <-s.ended:
	default:
		close(s.ended)
	}
}

func (s *subscriptionEnd) current() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

func (k readKind) work(r *channelRun, j streamJob) {
	if !j.stream {
		k.c.process(r.hctx, r.s, j.d)
		return
	}
	k.workStream(r, j, func() bool {
		// Past a replay's bound (not delivered, see runRead), or settled
		// by an earlier subscription and read again from the stored
		// offset, which an unsettled fact before it held back.
		past, handled := k.t.take(j.offset)
		return past || handled
	})
}

// position is where a subscription starts: after the stored offset,
// once the facts of the subscription before are settled or dropped, or
// the declared start the first time.
func (k readKind) position() (StreamPosition, error) {
	t := k.t
	t.waitHandlers()
	t.mu.Lock()
	// The facts settled behind one that was not stay known: the new
	// subscription reads them again from the stored offset, and they are
	// skipped rather than handled twice (take).
	t.order = nil
	for off := range t.done {
		if off <= t.mark {
			delete(t.done, off)
		}
	}
	t.lost, t.base = false, t.gen
	t.mu.Unlock()
	t.sub.begin()
	arg, err := t.position()
	if err != nil {
		return StreamPosition{}, err
	}
	switch v := arg.(type) {
	case int64:
		return StreamPosition{Offset: v}, nil
	case time.Time:
		return StreamPosition{Offset: -1, Start: "time", Time: v}, nil
	case string:
		return StreamPosition{Offset: -1, Start: v}, nil
	}
	return StreamPosition{}, fmt.Errorf("stream %q: a start of type %T", t.stream, arg)
}

// runRead reads the stream over the stream protocol when the Conn's
// offset store can (StreamReader), and otherwise, or with
// WithStreamReadOverAMQP, runs overAMQP. It runs
// the engine with the offset store loop beside it, stores the final mark
// when the engine stops, and then ends the reading.
func runRead(c *Consumer, eng *engine[streamJob], k readKind, overAMQP func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if c.opts.readOverAMQP {
			return overAMQP(ctx)
		}
		t := k.t
		leaving, bound := make(chan struct{}), make(chan struct{})
		var boundOnce sync.Once
		read := StreamRead{
			Stream:   c.spec.Stream,
			Consumer: c.spec.Name,
			Position: k.position,
			Deliver: func(m StreamMessage) {
				if t.pastBound(m.Offset) {
					// A replay's reading ends at its bound; it is said
					// done once the facts up to it are settled and
					// stored (offsetTracker.replayDone).
					boundOnce.Do(func() { close(bound) })
					return
				}
				ended := t.sub.current()
				select {
				case k.feed.in <- t.delivery(m):
				case <-leaving:
					// Not settled: read again from the stored offset.
				case <-ended:
					// Read again by the next subscription.
				}
			},
			Lost: func(err error) {
				t.sub.end()
				busy := t.subscriptionLost()
				c.log.Info("lost the stream's subscription; subscribing again", "stream", c.spec.Stream, "in_hand", busy, "err", c.conn.redact(err))
				c.noteError(err)
			},
			Retrying: func(err error) {
				c.log.Warn("could not subscribe to the stream again; trying again", "stream", c.spec.Stream, "err", c.conn.redact(err))
				c.noteError(err)
			},
		}
		// Started as a consumer over AMQP starts its channel: a stream
		// protocol that does not answer yet is waited for, with the
		// reconnect backoff, and said.
		var store OffsetStore
		var reading StreamReading
		for round := 0; ; round++ {
			var err error
			store, reading, err = startReading(ctx, c, read)
			switch {
			case errors.Is(err, errNotReader):
				return overAMQP(ctx)
			case errors.Is(err, ErrStreamOnOtherNodes):
				c.log.Info("reading the stream over AMQP: the stream protocol reaches one node, and the stream's replicas are on others; give every node's URL to read it over the stream protocol", "stream", c.spec.Stream)
				return overAMQP(ctx)
			case errors.Is(err, ErrNoOffsetStore):
				return fmt.Errorf("consumer %q: %w", c.spec.Name, err)
			case err != nil:
				c.log.Warn("could not start reading the stream; trying again", "stream", c.spec.Stream, "err", c.conn.redact(err))
				c.noteError(err)
				if !sleepCtx(ctx.Done(), backoff(round, c.conn.cfg.ReconnectMin, c.conn.cfg.ReconnectMax)) {
					return nil
				}
				continue
			}
			break
		}
		defer store.Close()
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		wg.Go(func() { t.storeLoop(sctx) })
		wg.Go(func() {
			select {
			case <-bound:
				if err := reading.Close(); err != nil {
					c.log.Debug("end a replay's reading at its bound", "err", c.conn.redact(err))
				}
			case <-sctx.Done():
			}
		})
		err := eng.run(ctx)
		stop()
		wg.Wait()
		if ferr := t.flush(); ferr != nil {
			c.log.Warn("could not store the stream offset at stop; the facts after the last stored one are read again", "stream", c.spec.Stream, "err", c.conn.redact(ferr))
		}
		close(leaving)
		if cerr := reading.Close(); cerr != nil {
			c.log.Debug("end the stream's reading", "err", c.conn.redact(cerr))
		}
		k.leftUnsettled()
		return err
	}
}

// leftUnsettled counts the facts read and not handled when the consumer
// stopped as returned: unsettled, they are read again from the stored
// offset by the consumer's next run.
func (k readKind) leftUnsettled() {
	for {
		select {
		case j := <-k.feed.in:
			k.c.count(Returned, j.d.RoutingKey)
			continue
		default:
		}
		j, ok := k.feed.takeBack()
		if !ok {
			return
		}
		k.c.count(Returned, j.d.RoutingKey)
	}
}

// noteError keeps err as the consumer's last error, for Health.
func (c *core) noteError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last.set(err)
}

// errNotReader is startReading's answer when the Conn's offset store
// does not read streams: the consumer reads over AMQP.
var errNotReader = errors.New("the offset store does not read streams")

// startReading opens the consumer's own offset store and its reading of
// the stream; on an error, nothing is left open.
func startReading(ctx context.Context, c *Consumer, read StreamRead) (OffsetStore, StreamReading, error) {
	store, err := c.conn.ownOffsets(ctx, fmt.Sprintf("stream consumer %q", c.spec.Name))
	if err != nil {
		return nil, nil, err
	}
	sr, ok := store.(StreamReader)
	if !ok {
		_ = store.Close()
		return nil, nil, errNotReader
	}
	reading, err := sr.Read(ctx, read)
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	return store, reading, nil
}
