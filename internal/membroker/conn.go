package membroker

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// Conn is a client connection; it satisfies transport.Connection and
// transport.Observer.
type Conn struct {
	b  *Broker
	id int

	// guarded by b.mu
	closed        bool
	nextChannel   int
	channels      map[int]*Channel
	notifyClose   []chan *amqp.Error
	notifyBlocked []chan amqp.Blocking
}

var (
	_ transport.Connection = (*Conn)(nil)
	_ transport.Observer   = (*Conn)(nil)
	_ transport.AcksAtOnce = (*Conn)(nil)
)

// Channel opens a channel.
func (c *Conn) Channel() (transport.Channel, error) {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.closed {
		return nil, amqp.ErrClosed
	}
	c.nextChannel++
	ch := &Channel{
		b: b, conn: c, id: c.nextChannel,
		unacked: map[uint64]*held{}, consumers: map[string]*consumer{},
		events: newMailbox[func() bool](), stop: make(chan struct{}),
	}
	c.channels[ch.id] = ch
	go ch.run()
	return ch, nil
}

// Close closes the connection and its channels, as the client asked.
func (c *Conn) Close() error {
	c.b.mu.Lock()
	closed := c.closed
	c.b.mu.Unlock()
	if closed {
		return amqp.ErrClosed
	}
	c.close(nil)
	return nil
}

// close shuts the connection with err (nil when the client asked): its
// channels close, their unacknowledged deliveries return to their queues,
// and its exclusive queues are deleted.
func (c *Conn) close(err *amqp.Error) {
	b := c.b
	b.mu.Lock()
	if c.closed {
		b.mu.Unlock()
		return
	}
	c.closed = true
	for _, ch := range c.channels {
		ch.shutdown(err)
	}
	for _, q := range b.queues {
		if q.exclusive == c {
			q.delete()
		}
	}
	delete(b.conns, c)
	closes, blocks := c.notifyClose, c.notifyBlocked
	c.notifyClose, c.notifyBlocked = nil, nil
	b.touch()
	b.mu.Unlock()
	// Told from a goroutine of its own, so that a client that reads its
	// close notices late does not hold up whoever closed it.
	go func() {
		for _, n := range closes {
			if err != nil {
				select {
				case n <- err:
				case <-b.done:
				}
			}
			close(n)
		}
		for _, n := range blocks {
			close(n)
		}
	}()
}

// NotifyClose registers n for the error that closes the connection.
func (c *Conn) NotifyClose(n chan *amqp.Error) chan *amqp.Error {
	return register(c.b, &c.closed, &c.notifyClose, n)
}

// NotifyBlocked registers n; the in-process broker raises no resource
// alarms, so n only closes with the connection.
func (c *Conn) NotifyBlocked(n chan amqp.Blocking) chan amqp.Blocking {
	return register(c.b, &c.closed, &c.notifyBlocked, n)
}

// ServerVersion is the version the broker announces.
func (c *Conn) ServerVersion() string { return c.b.opts.Version }

// HandlerStarted tells the broker's observer that a handler took d.
func (c *Conn) HandlerStarted(consumer string, d amqp.Delivery) {
	if o := c.b.opts.Observer; o != nil {
		o.HandlerStarted(consumer, d)
	}
}

// HandlerReturned tells the broker's observer what the handler of d came
// to.
func (c *Conn) HandlerReturned(consumer string, d amqp.Delivery, out transport.Outcome) {
	if o := c.b.opts.Observer; o != nil {
		o.HandlerReturned(consumer, d, out)
	}
}

// AcksAtOnce tells the runtime that an ack here costs no frame: see
// transport.AcksAtOnce.
func (c *Conn) AcksAtOnce() {}
