package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// errChannelLost is matched by publish errors that say nothing about the
// message except that its channel (or connection) went away before the
// broker confirmed it. Whether the broker kept it is unknown; publishing it
// again, with the same id, is the at-least-once answer.
var errChannelLost = errors.New("channel closed before the broker confirmed")

// notSentError marks a publish error raised before anything of the
// message was written to the broker: waiting for a connection, for a
// resource alarm to lift, or on a channel known dead. A publisher gives
// the number it took for the fact's ordering key back (see ordering.go).
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

func notSent(err error) error {
	if err == nil {
		return nil
	}
	return &notSentError{err}
}

// wasNotSent reports whether err says that nothing was written.
func wasNotSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}

// lane is a confirm-mode channel that follows the connection: it opens a
// fresh channel on each new session. Publishers and consumers each own one,
// so a consumer's retry copies never queue behind a busy publisher.
type lane struct {
	conn *Conn
	// onOpen, when set, prepares each new channel before its first use
	// (a requester consumes its replies on it); an error discards it.
	onOpen func(*confirmChannel) error
	mu     sync.Mutex
	cur    *confirmChannel
	closed bool
}

// channel returns the lane's open channel, opening one on the live session
// (waiting for it up to ctx's deadline) when there is none.
func (l *lane) channel(ctx context.Context) (*confirmChannel, error) {
	for {
		s, err := l.conn.session(ctx)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		if cc := l.cur; cc != nil && cc.sess == s && !cc.isDead() {
			l.mu.Unlock()
			return cc, nil
		}
		cc, err := openConfirmChannel(s)
		if err == nil {
			cc.conn = l.conn
		}
		if err == nil && l.onOpen != nil {
			if err = l.onOpen(cc); err != nil {
				_ = cc.ch.Close()
			}
		}
		if err == nil {
			l.cur = cc
		}
		l.mu.Unlock()
		if err == nil {
			return cc, nil
		}
		// The session is dying or out of channels: wait for it to go (or a
		// moment), then try again on whatever is live.
		select {
		case <-s.lost:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("open channel: %w", err)
		}
	}
}

// close closes the lane's channel for good: later publishes fail with
// ErrClosed.
func (l *lane) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.releaseLocked()
}

// release closes the lane's channel; the next publish opens another.
func (l *lane) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked()
}

func (l *lane) releaseLocked() {
	if l.cur != nil {
		_ = l.cur.ch.Close()
		l.cur = nil
	}
}

// confirmChannel publishes with confirms, pipelined: any number of
// publishes are in flight and each caller waits only for its own confirm.
//
// Confirms and returns are read by one goroutine. The returns channel is
// unbuffered, and the broker sends a message's basic.return before its
// basic.ack, so the reader has recorded the return before it can see the
// ack: a confirmed publish is always known to be routed or not.
type confirmChannel struct {
	sess *session
	conn *Conn // explains nacks by the bounded queues declared on it
	ch   transport.Channel

	pubMu sync.Mutex // makes "take the next tag, send the frame" atomic

	mu      sync.Mutex
	pending map[uint64]*waiter
	dead    chan struct{}
	deadErr error
}

type waiter struct {
	msgID, exchange, key string
	returned             *amqp.Return
	done                 chan error
}

func openConfirmChannel(s *session) (*confirmChannel, error) {
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	cc := &confirmChannel{sess: s, ch: ch, pending: map[uint64]*waiter{}, dead: make(chan struct{})}
	returns := ch.NotifyReturn(make(chan amqp.Return))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1024))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go cc.listen(returns, confirms, closes)
	return cc, nil
}

func (cc *confirmChannel) listen(returns <-chan amqp.Return, confirms <-chan amqp.Confirmation, closes <-chan *amqp.Error) {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			cc.markReturned(r)
		case c, ok := <-confirms:
			if !ok {
				var reason error = errors.New("closed")
				if e := <-closes; e != nil {
					reason = e
				}
				cc.fail(reason)
				return
			}
			cc.resolve(c)
		}
	}
}

// markReturned attaches a return to the earliest unconfirmed publish of
// the same message to the same place.
func (cc *confirmChannel) markReturned(r amqp.Return) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var best uint64
	for tag, w := range cc.pending {
		if w.returned == nil && w.msgID == r.MessageId && w.exchange == r.Exchange && w.key == r.RoutingKey && (best == 0 || tag < best) {
			best = tag
		}
	}
	if best != 0 {
		cc.pending[best].returned = &r
	}
}

func (cc *confirmChannel) resolve(c amqp.Confirmation) {
	cc.mu.Lock()
	w, ok := cc.pending[c.DeliveryTag]
	delete(cc.pending, c.DeliveryTag)
	cc.mu.Unlock()
	if !ok {
		return // its publisher gave up waiting
	}
	switch {
	case !c.Ack:
		w.done <- fmt.Errorf("exchange %q, routing key %q: %w", w.exchange, w.key, ErrNacked)
	case w.returned != nil:
		w.done <- &UnroutableError{Exchange: w.exchange, RoutingKey: w.key, Reason: w.returned.ReplyText}
	default:
		w.done <- nil
	}
}

func (cc *confirmChannel) fail(reason error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.deadErr = reason
	close(cc.dead)
	for tag, w := range cc.pending {
		w.done <- cc.lostError()
		delete(cc.pending, tag)
	}
}

func (cc *confirmChannel) isDead() bool {
	select {
	case <-cc.dead:
		return true
	default:
		return false
	}
}

// lostError says why the channel died. A channel-level refusal (an exchange
// that does not exist, no permission) is the publisher's problem and is
// returned as such; anything else is errChannelLost, worth a republish.
// Called with cc.mu held or after dead is closed.
func (cc *confirmChannel) lostError() error {
	var ae *amqp.Error
	if errors.As(cc.deadErr, &ae) && (ae.Code == amqp.NotFound || ae.Code == amqp.AccessRefused || ae.Code == amqp.PreconditionFailed) {
		return fmt.Errorf("broker closed the channel: %w", ae)
	}
	return fmt.Errorf("%w: %w", errChannelLost, cc.deadErr)
}

// publish sends msg and waits for the broker's confirm. With mandatory set,
// a message that reaches no queue fails with an [*UnroutableError].
func (cc *confirmChannel) publish(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) error {
	c, err := cc.send(ctx, exchange, key, mandatory, msg)
	if err != nil {
		return err
	}
	return c.wait(ctx)
}

// inFlight is a message sent on a confirm channel, its confirm pending.
type inFlight struct {
	cc  *confirmChannel
	tag uint64
	w   *waiter
	// direct, for a fact written into a stream directly (cc nil), gets
	// its confirm.
	direct chan error
}

// send writes msg to the channel and returns without waiting for the
// confirm. While the broker blocks the connection (a resource alarm) it
// waits, bounded by ctx, before writing: a frame written then would sit in
// the socket and a later write could block where no ctx reaches it.
func (cc *confirmChannel) send(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) (inFlight, error) {
	if err := cc.sess.waitUnblocked(ctx); err != nil {
		return inFlight{}, notSent(err)
	}
	w := &waiter{msgID: msg.MessageId, exchange: exchange, key: key, done: make(chan error, 1)}
	cc.pubMu.Lock()
	tag := cc.ch.GetNextPublishSeqNo()
	cc.mu.Lock()
	if cc.isDead() {
		err := cc.lostError()
		cc.mu.Unlock()
		cc.pubMu.Unlock()
		return inFlight{}, notSent(err)
	}
	cc.pending[tag] = w
	cc.mu.Unlock()
	err := cc.ch.PublishWithContext(ctx, exchange, key, mandatory, false, msg)
	cc.pubMu.Unlock()
	if err != nil {
		cc.forget(tag)
		if ctx.Err() != nil {
			return inFlight{}, fmt.Errorf("publish: %w", context.Cause(ctx))
		}
		// The frame could not be written: the connection is closed or
		// failing (a write error makes amqp091 shut the connection down
		// in the background). Wait until the channel is known dead, so the
		// caller's republish lands on the next session instead of
		// spinning on this one.
		select {
		case <-cc.dead:
		case <-cc.sess.lost:
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return inFlight{}, fmt.Errorf("%w: %w", errChannelLost, err)
	}
	return inFlight{cc: cc, tag: tag, w: w}, nil
}

// wait waits for the broker's confirm of a sent message.
func (f inFlight) wait(ctx context.Context) error {
	if f.cc == nil {
		select {
		case err := <-f.direct:
			return err
		case <-ctx.Done():
			return fmt.Errorf("waiting for the broker's confirm: %w", context.Cause(ctx))
		}
	}
	select {
	case err := <-f.w.done:
		if errors.Is(err, ErrNacked) && f.cc.conn != nil {
			err = f.cc.conn.explainNack(ctx, f.w.exchange, f.w.key, err)
		}
		return err
	case <-ctx.Done():
		f.cc.forget(f.tag)
		return fmt.Errorf("waiting for the broker's confirm: %w", context.Cause(ctx))
	}
}

func (cc *confirmChannel) forget(tag uint64) {
	cc.mu.Lock()
	delete(cc.pending, tag)
	cc.mu.Unlock()
}
