package streamproto

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"
)

// Reading is one reader of a plain stream: where each of its
// subscriptions starts, each message, and the end of a subscription the
// reader did not end itself.
type Reading struct {
	Stream string
	// Name names the reader's connection on the broker (the consumer's).
	Name string
	// Position is called before each subscription, the first and each
	// one after a loss, and returns where it reads from. An error fails
	// the first subscription, and makes a later one wait and try again.
	Position func() (Position, error)
	// Deliver receives each message, in stream order. Once a
	// subscription has ended, nothing more of it is delivered.
	Deliver func(Message)
	// Lost, when set, is called when a subscription ended without the
	// reader closing it (its connection dropped, its node went down).
	// No Deliver of that subscription starts after it; one under way
	// may still be, and Lost should make it return (a Deliver waiting
	// for room in a line that a handler holds up would otherwise hold
	// the next subscription back). Every one has returned before the
	// next subscription's Position. err says why it ended.
	Lost func(err error)
	// Retrying, when set, is called with each failed try to subscribe
	// again after a loss; the next try follows after a pause.
	Retrying func(err error)
}

// Reader reads a plain stream over the stream protocol, subscribing again
// after each loss from where Position says, until Close. The broker sends
// a subscription's facts as stored chunks (from the segment file, with
// sendfile), which costs it a fraction of what a reader over AMQP costs,
// for which it turns each fact into an AMQP delivery.
type Reader struct {
	s       *Store
	r       Reading
	mu      sync.RWMutex  // Deliver holds the read lock; a subscription's end waits for the write lock
	gen     atomic.Uint64 // the current subscription
	cur     *stream.Consumer
	closing chan struct{}
	done    chan struct{} // closed when the resubscribing loop has returned
	once    sync.Once
}

// Read subscribes to r.Stream from r.Position and delivers its messages
// until the returned Reader is closed.
func (s *Store) Read(ctx context.Context, r Reading) (*Reader, error) {
	if err := s.oneNode(ctx, r.Stream); err != nil {
		return nil, fmt.Errorf("read stream %q: %w", r.Stream, err)
	}
	rd := &Reader{s: s, r: r, closing: make(chan struct{}), done: make(chan struct{})}
	closed, err := rd.subscribe(ctx)
	if err != nil {
		return nil, err
	}
	go func() {
		defer close(rd.done)
		rd.resubscribe(closed)
	}()
	return rd, nil
}

// subscribe opens a subscription at Position and returns its close
// events.
func (rd *Reader) subscribe(ctx context.Context) (stream.ChannelClose, error) {
	pos, err := rd.r.Position()
	if err != nil {
		return nil, err
	}
	env, err := rd.s.environment(ctx)
	if err != nil {
		return nil, err
	}
	gen := rd.gen.Add(1)
	handle := func(cc stream.ConsumerContext, m *samqp.Message) {
		rd.mu.RLock()
		defer rd.mu.RUnlock()
		if rd.gen.Load() != gen {
			// Its subscription ended: the next one reads this again
			// from where Position says.
			return
		}
		rd.r.Deliver(convert(rd.r.Stream, cc.Consumer.GetOffset(), m))
	}
	opts := stream.NewConsumerOptions().SetOffset(offsetSpec(pos)).SetClientProvidedName(rd.r.Name).SetInitialCredits(ReadCredits)
	c, err := call(ctx, func() (*stream.Consumer, error) { return env.NewConsumer(rd.r.Stream, handle, opts) })
	if err != nil {
		return nil, fmt.Errorf("read stream %q: %w", rd.r.Stream, err)
	}
	// The client offers a subscription's close events only once it
	// exists: one that ended before this line is not told (a connection
	// lost within the instant after subscribing).
	closed := c.NotifyClose()
	rd.mu.Lock()
	rd.cur = c
	rd.mu.Unlock()
	return closed, nil
}

// resubscribe waits for the current subscription's end and, unless the
// reader is closing, subscribes again, waiting 100 ms to 5 s between
// tries, until Close.
//
// A subscription in flight is never abandoned (the client's NewConsumer
// takes no context, and one that ended after the Store closed would
// write on a closed connection): Close waits for this loop.
func (rd *Reader) resubscribe(closed stream.ChannelClose) {
	var why error
	for {
		select {
		case <-rd.closing:
			return
		case e, ok := <-closed:
			if !ok || e.Reason == stream.UnSubscribe {
				select {
				case <-rd.closing:
					return
				default:
				}
			}
			why = fmt.Errorf("the subscription to stream %q ended: %s", rd.r.Stream, e.Reason)
			if e.Err != nil {
				why = fmt.Errorf("%w: %w", why, e.Err)
			}
		}
		rd.gen.Add(1) // no Deliver of the ended subscription starts
		if rd.r.Lost != nil {
			rd.r.Lost(why)
		}
		rd.mu.Lock() // waits for the Deliver under way
		rd.cur = nil
		rd.mu.Unlock()
		again := rd.s.subscribeAgain(rd.closing, func() error {
			// No deadline: an abandoned subscription would read on,
			// unseen, until the Store closes.
			next, err := rd.subscribe(context.Background())
			if err == nil {
				closed = next
			}
			return err
		}, rd.r.Retrying)
		if !again {
			return
		}
	}
}

// subscribeAgain calls subscribe after a loss, first after 100 ms and
// then at growing pauses up to 5 s, each time with an answering node
// first in the client's list (preferAnswering), until it succeeds (true)
// or stop closes (false). Each failure goes to retrying, when it is set.
func (s *Store) subscribeAgain(stop <-chan struct{}, subscribe func() error, retrying func(error)) bool {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		select {
		case <-stop:
			return false
		case <-time.After(wait):
		}
		s.preferAnswering()
		err := subscribe()
		if err == nil {
			return true
		}
		if retrying != nil {
			retrying(err)
		}
	}
}

// ReadCredits is how many chunks the broker may send a reader ahead of
// the one it is delivering (the client asks for one more after each):
// the client's default, 10, held a stream written through the exchange,
// whose chunks hold few facts, to 32,000-38,000 facts a second on
// RabbitMQ 3.10 here, where 32 read 39,000-50,000 (docs/BENCHMARKS.md).
// A chunk holds what the stream's writer gathered at once, so a reader
// holds at most this many of them besides the facts in its consumer's
// hands.
const ReadCredits = 32

// CloseWait bounds how long [Reader.Close] waits for a subscription in
// flight (one waits while the client looks for a node that answers).
const CloseWait = 10 * time.Second

// Close ends the reading: nothing more is delivered once it returns,
// unless it returns [ErrClosePending], when a subscription was still in
// flight after [CloseWait]; that one is closed once it has been made.
func (rd *Reader) Close() error {
	rd.once.Do(func() { close(rd.closing) })
	select {
	case <-rd.done:
	case <-time.After(CloseWait):
		go func() { <-rd.done; _ = rd.end() }()
		return ErrClosePending
	}
	return rd.end()
}

// end closes the current subscription, after the Deliver under way.
func (rd *Reader) end() error {
	rd.gen.Add(1)
	rd.mu.Lock()
	c := rd.cur
	rd.cur = nil
	rd.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := c.Close(); err != nil && !errors.Is(err, stream.AlreadyClosed) {
		return fmt.Errorf("close the subscription to stream %q: %w", rd.r.Stream, err)
	}
	return nil
}

// ErrClosePending is returned by [Reader.Close] when a subscription was
// still in flight after [CloseWait]: it is closed once made.
var ErrClosePending = errors.New("a subscription is still in flight: it is closed once made")

// ErrOtherNodes is matched by [Store.Read]'s and [Store.Writer]'s error
// when the Store was opened with one node's address and the stream has
// replicas: the client sends a reader to one of the stream's replicas at
// random, and a writer to its leader, and, with every connection going to
// the one address, tries again for good while it lands elsewhere. Open
// the Store with every node's address ([Endpoint.Cluster]) to read or
// write it.
var ErrOtherNodes = errors.New("the stream has replicas on other nodes, and the stream protocol was given one node's address")

// oneNode refuses, when the Store reaches one address only, a stream
// with replicas (see [ErrOtherNodes]). (When that address is the
// leader's, a writer would have found it: it is refused all the same,
// since nothing tells which node the address is.)
func (s *Store) oneNode(ctx context.Context, streamName string) error {
	s.mu.Lock()
	one := s.opts.AddressResolver != nil
	s.mu.Unlock()
	if !one {
		return nil
	}
	env, err := s.environment(ctx)
	if err != nil {
		return err
	}
	md, err := call(ctx, func() (*stream.StreamMetadata, error) { return env.StreamMetaData(streamName) })
	if refused(err) {
		return err // the stream's own (it does not exist), not its members'
	}
	if err != nil {
		return fmt.Errorf("its members: %w", err)
	}
	replicas := 0
	for _, r := range md.Replicas {
		if r != nil {
			replicas++
		}
	}
	if replicas > 0 {
		return fmt.Errorf("%w (%d replicas besides its leader)", ErrOtherNodes, replicas)
	}
	return nil
}
