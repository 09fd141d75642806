package poison

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A scan holds every message it reads until it ends (see the package
// comment), so a second scan of the same queue running at the same time
// would find it empty, or split its messages with the first and see only
// part of them: a listing that says "no messages" while hundreds wait, a
// replay by id that finds no such message, a lane handed back out of
// order. Scans of one queue therefore take turns. Within a process a
// semaphore per connection and queue decides; across processes (two
// operators' terminals, warren console beside warren replay) the broker
// does: a scan holds the exclusive queue <queue>.reading, which the
// broker lets one connection declare at a time and deletes when that
// connection closes, so a scan that dies leaves no turn taken.

// ErrBusy is matched by the error of a reading (List, Groups, Replay,
// Discard, EditMessage, History and the others) that gave up waiting for
// another reading of the same queue to end.
var ErrBusy = errors.New("another reading of the queue holds its messages")

// busyWait bounds how long a scan waits for the other readings of its
// queue to end: longer than any one of them takes on a lane of tens of
// thousands of messages (see BENCHMARKS.md).
const busyWait = 2 * time.Minute

// busyPoll is how often a scan asks the broker whether the other
// reading ended.
const busyPoll = 50 * time.Millisecond

// ReadingQueue is the exclusive queue a reading of queue holds while it
// reads: <queue>.reading. It exists only while a reading runs.
func ReadingQueue(queue string) string { return queue + ".reading" }

// turns are the semaphores of this process, one per connection and
// queue.
var turns sync.Map // turnKey -> chan struct{}

type turnKey struct {
	conn  any
	queue string
}

// turn is a scan's turn at a queue, held until release.
type turn struct {
	conn   Broker
	queue  string
	sem    chan struct{}
	broker bool // the broker's lock is held: ReadingQueue(queue) is ours
}

// takeTurn waits until no other scan reads queue, here or elsewhere, and
// returns the turn to release when the scan has handed every message
// back. A broker that refuses this user the reading queue for any other
// reason than another reading (permissions) leaves the turn to this
// process's scans alone.
func takeTurn(ctx context.Context, conn Broker, queue string) (*turn, error) {
	key := turnKey{queue: queue}
	if conn != nil && reflect.TypeOf(conn).Comparable() {
		key.conn = conn
	}
	s, _ := turns.LoadOrStore(key, make(chan struct{}, 1))
	t := &turn{conn: conn, queue: queue, sem: s.(chan struct{})}
	deadline := time.NewTimer(busyWait)
	defer deadline.Stop()
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-deadline.C:
		return nil, busyError(queue, "in this process")
	}
	for {
		refused, err := t.lock(ctx)
		if err != nil {
			<-t.sem
			return nil, err
		}
		var ae *amqp.Error
		switch {
		case refused == nil:
			t.broker = true
			return t, nil
		case !errors.As(refused, &ae) || ae.Code != amqp.ResourceLocked:
			// Not another reading: the broker refuses this user the
			// queue (permissions, a policy). Read without its turn.
			return t, nil
		}
		select {
		case <-time.After(busyPoll):
		case <-ctx.Done():
			<-t.sem
			return nil, ctx.Err()
		case <-deadline.C:
			<-t.sem
			return nil, busyError(queue, "elsewhere")
		}
	}
}

func busyError(queue, where string) error {
	return fmt.Errorf("%w: %s has been read %s (warren replay, discard, poison or console) for %s; try again once that ends", ErrBusy, queue, where, busyWait)
}

// lock declares the reading queue, exclusive to this connection. refused
// is the broker's refusal of the declaration (RESOURCE_LOCKED while
// another connection holds it); err is a channel the broker did not
// open.
func (t *turn) lock(ctx context.Context) (refused, err error) {
	ch, err := t.conn.OpenChannel(ctx)
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	_, refused = ch.QueueDeclare(ReadingQueue(t.queue), false, false, true, false, amqp.Table{"x-queue-type": "classic"})
	return refused, nil
}

// release ends the turn: the next scan of the queue, here or elsewhere,
// may start. It deletes the reading queue even when ctx is done (the
// connection's end would delete it too).
func (t *turn) release(ctx context.Context) {
	if t == nil {
		return
	}
	if t.broker {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if ch, err := t.conn.OpenChannel(ctx); err == nil {
			_, _ = ch.QueueDelete(ReadingQueue(t.queue), false, false, false)
			_ = ch.Close()
		}
		cancel()
		t.broker = false
	}
	<-t.sem
}
