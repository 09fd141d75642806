// Package membroker is an AMQP 0-9-1 broker in the test process, behind
// the runtime's transport seam: exchanges (topic, direct, fanout, headers and
// x-consistent-hash), queues with the arguments warren declares (message
// TTL, dead-lettering with x-death, length bounds with reject-publish or
// drop-head, priorities, single active consumer, quorum delivery limits),
// streams (an append-only log that each consumer reads from its
// x-stream-offset on, with the offset in each delivery's headers; their
// retention is not applied),
// publisher confirms, mandatory returns, prefetch, acknowledgements and
// direct reply-to, with RabbitMQ's error codes for what it refuses.
//
// It keeps everything in memory under one lock, and each channel and
// consumer hands events to the client from a goroutine of its own, so
// that a client that is slow to read never blocks the broker. All waiting
// is on channels and timers, so the broker runs inside a testing/synctest
// bubble and its TTLs follow the bubble's clock.
//
// What it does not simulate: several nodes, restarts (nothing survives
// Close), flow control and resource alarms, authentication, vhosts (one
// per Broker), internal exchanges (the flag is
// ignored), and message sizes beyond counting body bytes for
// x-max-length-bytes. Nor what a client can see on RabbitMQ but should
// not rely on (the differential test compares everything else):
//
//   - the hash function of x-consistent-hash: which queue a value
//     reaches (that every message with one value reaches one queue is
//     simulated);
//   - the form of direct reply-to addresses;
//   - the timing of confirms: here they follow publish order at once,
//     where RabbitMQ confirms a routed message once its queues have it,
//     so the return of an unroutable message may come before the confirm
//     of an earlier one (a return always comes before its own confirm,
//     here as there);
//   - deliveries in flight when a consumer is cancelled, by the client or
//     by the broker as its queue is deleted: on the network they are in
//     the client library's buffer already and still reach the client;
//     here those the client has not read go back to the queue, or are
//     gone with it;
//   - RabbitMQ 3.10's return of a mandatory reply to a direct reply-to
//     address that it did deliver; here a reply is returned only when its
//     requester has gone.
package membroker

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// Options adjust a Broker.
type Options struct {
	// Version is the server version the broker announces, which decides
	// the queue arguments the runtime declares; "" means "3.13.7".
	Version string
	// Observer, if set, hears when a runtime handler starts and returns
	// on a delivery from this broker.
	Observer Observer
}

// Observer is told about handler calls on the broker's deliveries.
type Observer interface {
	HandlerStarted(consumer string, d amqp.Delivery)
	HandlerReturned(consumer string, d amqp.Delivery, out transport.Outcome)
}

// Broker is one in-process broker with one virtual host.
type Broker struct {
	opts Options

	mu        sync.Mutex
	closed    bool
	done      chan struct{} // closed by Close: every goroutine of the broker exits
	exchanges map[string]*exchange
	queues    map[string]*queue
	conns     map[*Conn]bool
	replyTo   map[string]*consumer // direct reply-to address -> its consumer
	seq       uint64               // message order, across queues
	ids       int                  // names: connections, channels, consumer tags, generated queues
	journal   []Record
	changed   chan struct{} // closed and replaced on every change, for waiters
}

// New returns a running broker with the default exchanges.
func New(opts Options) *Broker {
	if opts.Version == "" {
		opts.Version = "3.13.7"
	}
	b := &Broker{
		opts:      opts,
		done:      make(chan struct{}),
		exchanges: map[string]*exchange{},
		queues:    map[string]*queue{},
		conns:     map[*Conn]bool{},
		replyTo:   map[string]*consumer{},
		changed:   make(chan struct{}),
	}
	for name, kind := range map[string]string{"": "direct", "amq.direct": "direct", "amq.topic": "topic", "amq.fanout": "fanout"} {
		b.exchanges[name] = &exchange{name: name, kind: kind, durable: true, builtin: true}
	}
	return b
}

// Version is the server version the broker announces.
func (b *Broker) Version() string { return b.opts.Version }

// Close closes every connection and stops the broker. What it held is
// gone.
func (b *Broker) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	conns := b.connList()
	b.mu.Unlock()
	for _, c := range conns {
		c.close(nil)
	}
	b.mu.Lock()
	b.closed = true
	for _, q := range b.queues {
		q.stopTimer()
	}
	close(b.done)
	b.mu.Unlock()
}

// DropConnections closes every client connection as a broker does when
// it goes away (CONNECTION_FORCED), keeping exchanges, queues and
// messages: unacknowledged deliveries return to their queues, marked
// redelivered.
func (b *Broker) DropConnections() {
	b.mu.Lock()
	conns := b.connList()
	b.mu.Unlock()
	for _, c := range conns {
		c.close(&amqp.Error{Code: amqp.ConnectionForced, Reason: "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'", Server: true})
	}
}

func (b *Broker) connList() []*Conn {
	var cs []*Conn
	for c := range b.conns {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	return cs
}

// Dial opens a client connection.
func (b *Broker) Dial() (*Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("in-process broker: %w", amqp.ErrClosed)
	}
	b.ids++
	c := &Conn{b: b, id: b.ids, channels: map[int]*Channel{}}
	b.conns[c] = true
	b.touch()
	return c, nil
}

// touch wakes whoever waits for a change. Called with b.mu held.
func (b *Broker) touch() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Changed returns a channel closed at the broker's next change: a
// publish, a delivery, a settlement, an expiry, a declaration.
func (b *Broker) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Done is closed when the broker is closed.
func (b *Broker) Done() <-chan struct{} { return b.done }

// QueueState is what one queue holds at a moment.
type QueueState struct {
	Name string
	// Ready is what waits to be delivered; of a stream, what its
	// furthest-behind consumer has still to read, or with none, all of it.
	Ready     int
	Unacked   int // delivered, not yet settled
	Consumers int
	// Appended is how many facts a stream holds: the offset of its next
	// fact. 0 for a queue.
	Appended int
	// Due is when the earliest waiting message expires (by message or
	// queue TTL); zero when none will.
	Due time.Time
	// Args are the arguments it was declared with.
	Args amqp.Table
}

// Queues returns the state of every queue, by name.
func (b *Broker) Queues() []QueueState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []QueueState
	for _, q := range b.queues {
		out = append(out, q.state())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Queue returns the state of the named queue.
func (b *Broker) Queue(name string) (QueueState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, ok := b.queues[name]
	if !ok {
		return QueueState{}, false
	}
	return q.state(), true
}

// Messages returns copies of the messages waiting in queue, in delivery
// order, without taking them off it; of a stream, every message it keeps,
// each with its x-stream-offset header.
func (b *Broker) Messages(queue string) []amqp.Delivery {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, ok := b.queues[queue]
	if !ok {
		return nil
	}
	if q.stream {
		out := make([]amqp.Delivery, 0, len(q.log))
		for _, m := range q.log {
			d := m.delivery(queue)
			if d.Headers == nil {
				d.Headers = amqp.Table{}
			}
			d.Headers["x-stream-offset"] = m.offset
			out = append(out, d)
		}
		return out
	}
	out := make([]amqp.Delivery, 0, len(q.ready))
	for _, m := range q.ready {
		out = append(out, m.delivery(queue))
	}
	return out
}

// Pending reports what the broker still has to hand to clients: confirms
// and returns not yet read, and deliveries taken off a queue but not yet
// received by the consumer. A test waits for none before it looks.
func (b *Broker) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for c := range b.conns {
		for _, ch := range c.channels {
			n += ch.events.len()
			for _, cs := range ch.consumers {
				n += cs.out.len()
			}
		}
	}
	return n
}

// Record is one message the broker routed: published by a client, or
// dead-lettered by the broker itself.
type Record struct {
	Seq          int
	At           time.Time
	DeadLettered string // the queue it was dead-lettered from, with Reason; "" for a client's publish
	Reason       string // "rejected", "expired", "maxlen" or "delivery_limit"
	Exchange     string
	RoutingKey   string
	Msg          amqp.Publishing
	Queues       []string // where it was routed
	Returned     bool     // mandatory and unroutable: returned to the publisher
	Nacked       bool     // a bounded queue refused it
}

// Journal returns every message routed since the broker started, or since
// the record numbered from (as returned in Record.Seq, counting from 1).
func (b *Broker) Journal(from int) []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	if from < 1 {
		from = 1
	}
	if from > len(b.journal) {
		return nil
	}
	return slices.Clone(b.journal[from-1:])
}

func (b *Broker) record(r Record) {
	r.Seq = len(b.journal) + 1
	r.At = time.Now()
	r.Msg.Headers = copyTable(r.Msg.Headers)
	b.journal = append(b.journal, r)
}

func copyTable(t amqp.Table) amqp.Table {
	if t == nil {
		return nil
	}
	out := make(amqp.Table, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}

// WriteStream appends msg to the stream named stream as a client of the
// stream protocol writes it (RabbitMQ's "publish direct"): no exchange
// routes it, and it keeps the exchange and routing key it names, as the
// AMQP 1.0 message's annotations do. It is journaled like a publish, with
// the stream as its one queue. A stream that does not exist is an error,
// as the stream protocol's is when a producer is declared on it.
func (b *Broker) WriteStream(stream, exchange, key string, msg amqp.Publishing) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, ok := b.queues[stream]
	if !ok || !q.stream {
		return fmt.Errorf("stream %q does not exist", stream)
	}
	msg.Headers = copyTable(msg.Headers)
	msg.Body = slices.Clone(msg.Body)
	q.push(exchange, key, msg, true)
	b.record(Record{Exchange: exchange, RoutingKey: key, Msg: msg, Queues: []string{stream}})
	b.touch()
	return nil
}
