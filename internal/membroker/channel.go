package membroker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// directReplyTo is RabbitMQ's pseudo-queue for direct reply-to.
const directReplyTo = "amq.rabbitmq.reply-to"

// Channel is an AMQP channel on the in-process broker; it satisfies
// transport.Channel and, for its deliveries, amqp.Acknowledger.
type Channel struct {
	b    *Broker
	conn *Conn
	id   int

	// guarded by b.mu
	closed      bool
	prefetch    int
	confirming  bool
	published   uint64 // publishes since confirm mode began
	deliveryTag uint64
	unacked     map[uint64]*held
	consumers   map[string]*consumer
	replyAddr   string // this channel's direct reply-to address, once it consumes it

	// notify lists are guarded by b.mu; the channel's goroutine sends on
	// them, in the order the broker produced the events.
	notifyPublish []chan amqp.Confirmation
	notifyReturn  []chan amqp.Return
	notifyClose   []chan *amqp.Error

	events *mailbox[func() bool] // run in order on the channel's goroutine; true ends it
	stop   chan struct{}         // closed when the channel's goroutine ends
}

// held is a delivery the client has not settled.
type held struct {
	q *queue
	m *message
	c *consumer // nil for basic.get
}

var (
	_ transport.Channel = (*Channel)(nil)
	_ amqp.Acknowledger = (*Channel)(nil)
)

// run sends the channel's events to the client, in order.
func (ch *Channel) run() {
	defer close(ch.stop)
	for {
		for {
			f, ok := ch.events.take()
			if !ok {
				break
			}
			if f() {
				return
			}
		}
		select {
		case <-ch.events.kick:
		case <-ch.b.done:
			return
		}
	}
}

// send delivers v on n unless the broker closes first.
func send[T any](b *Broker, n chan T, v T) {
	select {
	case n <- v:
	case <-b.done:
	}
}

// fail closes the channel with a channel exception and returns it. Called
// with b.mu held.
func (ch *Channel) fail(err *amqp.Error) error {
	ch.shutdown(err)
	return err
}

// shutdown closes the channel: unacknowledged deliveries go back to their
// queues, consumers stop, and the client hears err (nil when it asked)
// after every confirm and return before it. Called with b.mu held.
func (ch *Channel) shutdown(err *amqp.Error) {
	if ch.closed {
		return
	}
	ch.closed = true
	for _, c := range ch.consumers {
		ch.dropConsumer(c, false)
	}
	tags := make([]uint64, 0, len(ch.unacked))
	for tag := range ch.unacked {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	touched := map[*queue]bool{}
	for _, tag := range tags {
		h := ch.unacked[tag]
		delete(ch.unacked, tag)
		h.settled()
		if ch.b.queues[h.q.name] == h.q {
			h.q.giveBack(h.m)
			touched[h.q] = true
		}
	}
	delete(ch.conn.channels, ch.id)
	if ch.replyAddr != "" {
		delete(ch.b.replyTo, ch.replyAddr)
	}
	closes, publishes, returns := ch.notifyClose, ch.notifyPublish, ch.notifyReturn
	ch.notifyClose, ch.notifyPublish, ch.notifyReturn = nil, nil, nil
	b := ch.b
	ch.events.put(func() bool {
		for _, n := range closes {
			if err != nil {
				send(b, n, err)
			}
			close(n)
		}
		for _, n := range publishes {
			close(n)
		}
		for _, n := range returns {
			close(n)
		}
		return true
	})
	for q := range touched {
		q.dispatch()
	}
	b.touch()
}

// lock takes the broker lock for an operation on an open channel.
func (ch *Channel) lock() error {
	ch.b.mu.Lock()
	if ch.closed {
		ch.b.mu.Unlock()
		return amqp.ErrClosed
	}
	return nil
}

func (ch *Channel) unlock() {
	ch.b.touch()
	ch.b.mu.Unlock()
}

// Close closes the channel.
func (ch *Channel) Close() error {
	if err := ch.lock(); err != nil {
		return nil
	}
	defer ch.unlock()
	ch.shutdown(nil)
	return nil
}

// NotifyClose registers n for the error that closes the channel.
func (ch *Channel) NotifyClose(n chan *amqp.Error) chan *amqp.Error {
	return register(ch.b, &ch.closed, &ch.notifyClose, n)
}

// NotifyPublish registers n for publisher confirms.
func (ch *Channel) NotifyPublish(n chan amqp.Confirmation) chan amqp.Confirmation {
	return register(ch.b, &ch.closed, &ch.notifyPublish, n)
}

// NotifyReturn registers n for mandatory messages that reached no queue.
func (ch *Channel) NotifyReturn(n chan amqp.Return) chan amqp.Return {
	return register(ch.b, &ch.closed, &ch.notifyReturn, n)
}

// Confirm puts the channel in confirm mode.
func (ch *Channel) Confirm(noWait bool) error {
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	ch.confirming = true
	return nil
}

// GetNextPublishSeqNo returns the delivery tag of the next confirm.
func (ch *Channel) GetNextPublishSeqNo() uint64 {
	ch.b.mu.Lock()
	defer ch.b.mu.Unlock()
	return ch.published + 1
}

// Qos sets the prefetch of consumers started after it.
func (ch *Channel) Qos(prefetchCount, prefetchSize int, global bool) error {
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	if prefetchSize != 0 {
		return &amqp.Error{Code: amqp.NotImplemented, Reason: "NOT_IMPLEMENTED - prefetch_size!=0 (" + strconv.Itoa(prefetchSize) + ")", Server: true}
	}
	ch.prefetch = prefetchCount
	return nil
}

// PublishWithContext routes msg. As on the network, a refusal closes the
// channel rather than failing the call; a confirm channel hears the
// outcome as a confirm, preceded by a return when a mandatory message
// reached no queue.
func (ch *Channel) PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	b := ch.b
	if _, ok := b.exchanges[exchange]; !ok {
		ch.fail(notFound("no exchange '%s' in vhost '/'", exchange))
		return nil
	}
	if msg.ReplyTo == directReplyTo {
		if ch.replyAddr == "" {
			ch.fail(precondition("fast reply consumer does not exist"))
			return nil
		}
		msg.ReplyTo = ch.replyAddr
	}
	msg.Headers = copyTable(msg.Headers)
	msg.Body = slices.Clone(msg.Body)
	r := Record{Exchange: exchange, RoutingKey: key, Msg: msg}
	routed := false
	if exchange == "" && strings.HasPrefix(key, directReplyTo+".") {
		if c, ok := b.replyTo[key]; ok {
			c.deliverDirect(exchange, key, msg)
			r.Queues = append(r.Queues, key)
			routed = true
		}
	} else {
		for _, q := range b.route(exchange, key, msg) {
			if q.push(exchange, key, msg, true) {
				r.Queues = append(r.Queues, q.name)
			} else {
				r.Nacked = true
			}
			routed = true
		}
	}
	if !routed && mandatory {
		r.Returned = true
		ret := amqp.Return{
			ReplyCode: amqp.NoRoute, ReplyText: "NO_ROUTE", Exchange: exchange, RoutingKey: key,
			ContentType: msg.ContentType, ContentEncoding: msg.ContentEncoding, Headers: msg.Headers,
			DeliveryMode: msg.DeliveryMode, Priority: msg.Priority, CorrelationId: msg.CorrelationId,
			ReplyTo: msg.ReplyTo, Expiration: msg.Expiration, MessageId: msg.MessageId, Timestamp: msg.Timestamp,
			Type: msg.Type, UserId: msg.UserId, AppId: msg.AppId, Body: msg.Body,
		}
		returns := slices.Clone(ch.notifyReturn)
		ch.events.put(func() bool {
			for _, n := range returns {
				send(b, n, ret)
			}
			return false
		})
	}
	b.record(r)
	if ch.confirming {
		ch.published++
		c := amqp.Confirmation{DeliveryTag: ch.published, Ack: !r.Nacked}
		publishes := slices.Clone(ch.notifyPublish)
		ch.events.put(func() bool {
			for _, n := range publishes {
				send(b, n, c)
			}
			return false
		})
	}
	return nil
}

// Consume starts a consumer on queue, or on direct reply-to.
func (ch *Channel) Consume(queueName, tag string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error) {
	if err := ch.lock(); err != nil {
		return nil, err
	}
	if _, ok := ch.consumers[tag]; ok && tag != "" {
		// NOT_ALLOWED is a connection error: RabbitMQ closes the whole
		// connection over it.
		ch.b.mu.Unlock()
		err := &amqp.Error{Code: amqp.NotAllowed, Reason: fmt.Sprintf("NOT_ALLOWED - attempt to reuse consumer tag '%s'", tag), Server: true}
		ch.conn.close(err)
		return nil, err
	}
	defer ch.unlock()
	b := ch.b
	if tag == "" {
		b.ids++
		tag = fmt.Sprintf("amq.ctag-%d", b.ids)
	}
	c := &consumer{ch: ch, tag: tag, autoAck: autoAck, exclusive: exclusive, prefetch: ch.prefetch,
		deliveries: make(chan amqp.Delivery), out: newMailbox[amqp.Delivery](), stop: make(chan struct{})}
	if queueName == directReplyTo {
		if !autoAck {
			return nil, ch.fail(precondition("reply consumer cannot acknowledge"))
		}
		if ch.replyAddr != "" {
			return nil, ch.fail(precondition("reply consumer already set"))
		}
		b.ids++
		ch.replyAddr = fmt.Sprintf("%s.g1h2AA5yZXBseUAx.%d.%d", directReplyTo, ch.conn.id, b.ids)
		b.replyTo[ch.replyAddr] = c
		ch.consumers[tag] = c
		go c.run()
		return c.deliveries, nil
	}
	q, ok := b.queues[queueName]
	if !ok {
		return nil, ch.fail(notFound("no queue '%s' in vhost '/'", queueName))
	}
	if q.exclusive != nil && q.exclusive != ch.conn {
		return nil, ch.fail(lockedQueue(queueName))
	}
	for _, other := range q.consumers {
		if !other.cancelled && (other.exclusive || exclusive) {
			return nil, ch.fail(&amqp.Error{Code: amqp.AccessRefused, Reason: fmt.Sprintf("ACCESS_REFUSED - queue '%s' in vhost '/' in exclusive use", queueName), Server: true})
		}
	}
	if q.stream {
		if autoAck || c.prefetch == 0 {
			return nil, ch.fail(precondition("consumer on stream '%s' in vhost '/' needs manual acknowledgements and a prefetch count (basic.qos)", queueName))
		}
		start, err := q.streamStart(args["x-stream-offset"])
		if err != nil {
			return nil, ch.fail(err)
		}
		c.cursor = start
	}
	c.q = q
	ch.consumers[tag] = c
	q.consumers = append(q.consumers, c)
	go c.run()
	q.dispatch()
	return c.deliveries, nil
}

func lockedQueue(name string) *amqp.Error {
	return &amqp.Error{Code: amqp.ResourceLocked, Reason: fmt.Sprintf("RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '%s' in vhost '/'", name), Server: true}
}

// Cancel stops a consumer; its delivery channel closes. Deliveries it had
// received stay unacknowledged until settled.
func (ch *Channel) Cancel(tag string, noWait bool) error {
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	if c, ok := ch.consumers[tag]; ok {
		ch.dropConsumer(c, false)
	}
	return nil
}

// dropConsumer cancels c. Deliveries that had not reached the client go
// back to the queue. Called with b.mu held.
func (ch *Channel) dropConsumer(c *consumer, byBroker bool) {
	if c.cancelled {
		return
	}
	c.cancelled = true
	delete(ch.consumers, c.tag)
	if c.q == nil {
		if ch.replyAddr != "" {
			delete(ch.b.replyTo, ch.replyAddr)
			ch.replyAddr = ""
		}
	} else {
		q := c.q
		q.consumers = slices.DeleteFunc(q.consumers, func(o *consumer) bool { return o == c })
		if q.autoDelete && len(q.consumers) == 0 && !byBroker {
			defer q.delete()
		} else {
			defer q.dispatch()
		}
	}
	for _, d := range c.out.drain() {
		if h, ok := ch.unacked[d.DeliveryTag]; ok && h.c == c {
			delete(ch.unacked, d.DeliveryTag)
			h.settled()
			if h.q.stream {
				continue // the stream keeps it
			}
			h.m.redeliver = d.Redelivered // it never reached the client
			h.q.insert(h.m)
		}
	}
	close(c.stop)
}

// Get takes one message off queue, if there is one.
func (ch *Channel) Get(queueName string, autoAck bool) (amqp.Delivery, bool, error) {
	if err := ch.lock(); err != nil {
		return amqp.Delivery{}, false, err
	}
	if q, ok := ch.b.queues[queueName]; ok && q.stream {
		// NOT_IMPLEMENTED is a connection error: RabbitMQ closes the
		// whole connection over it.
		ch.b.mu.Unlock()
		err := &amqp.Error{Code: amqp.NotImplemented, Reason: fmt.Sprintf("NOT_IMPLEMENTED - basic.get not supported by stream queues queue '%s' in vhost '/'", queueName), Server: true}
		ch.conn.close(err)
		return amqp.Delivery{}, false, err
	}
	defer ch.unlock()
	q, ok := ch.b.queues[queueName]
	if !ok {
		return amqp.Delivery{}, false, ch.fail(notFound("no queue '%s' in vhost '/'", queueName))
	}
	q.dispatch() // expire what is due first
	if len(q.ready) == 0 {
		return amqp.Delivery{}, false, nil
	}
	m := q.ready[0]
	q.remove(0)
	ch.deliveryTag++
	d := m.delivery(q.name)
	d.Acknowledger = ch
	d.DeliveryTag = ch.deliveryTag
	d.MessageCount = uint32(len(q.ready))
	if q.quorum && before(ch.b.opts.Version, 3, 13) {
		// RabbitMQ 3.10 counts deliveries on basic.get from the first:
		// x-delivery-count is 0 before any return, where a consumer's
		// first delivery has no header.
		if d.Headers == nil {
			d.Headers = amqp.Table{}
		}
		d.Headers["x-delivery-count"] = int64(m.returns)
	}
	if !autoAck {
		ch.unacked[d.DeliveryTag] = &held{q: q, m: m}
		q.unacked++
	}
	q.armTimer()
	return d, true, nil
}

// Ack acknowledges delivery tag, and every earlier one with multiple.
func (ch *Channel) Ack(tag uint64, multiple bool) error {
	return ch.settle(tag, multiple, func(h *held) { h.q.dispatch() })
}

// Nack gives up on delivery tag (and earlier ones with multiple):
// requeued, or dead-lettered as rejected.
func (ch *Channel) Nack(tag uint64, multiple, requeue bool) error {
	if err := ch.lock(); err != nil {
		return err
	}
	for t, h := range ch.unacked {
		if h.q.stream && (t == tag || multiple && t <= tag) && before(ch.b.opts.Version, 3, 13) {
			// Before 3.13 a stream refuses basic.nack and basic.reject
			// with NOT_IMPLEMENTED, a connection error: RabbitMQ closes
			// the whole connection. As on the network, the call itself
			// succeeds. (From 3.13 either settles as an ack does.)
			ch.b.mu.Unlock()
			ch.conn.close(&amqp.Error{Code: amqp.NotImplemented, Reason: fmt.Sprintf("NOT_IMPLEMENTED - basic.nack and basic.reject not supported by stream queues queue '%s' in vhost '/'", h.q.name), Server: true})
			return nil
		}
	}
	ch.b.mu.Unlock()
	return ch.settle(tag, multiple, func(h *held) {
		switch {
		case h.q.stream:
			// The fact stays in the stream, and the credit is freed.
		case requeue:
			h.q.giveBack(h.m)
		default:
			h.q.deadLetter(h.m, "rejected")
		}
		h.q.dispatch()
	})
}

// Reject is Nack of one delivery.
func (ch *Channel) Reject(tag uint64, requeue bool) error { return ch.Nack(tag, false, requeue) }

func (ch *Channel) settle(tag uint64, multiple bool, then func(*held)) error {
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	var tags []uint64
	if multiple {
		for t := range ch.unacked {
			if t <= tag {
				tags = append(tags, t)
			}
		}
		slices.Sort(tags)
	} else if _, ok := ch.unacked[tag]; ok {
		tags = []uint64{tag}
	}
	if len(tags) == 0 && !(multiple && tag == 0) {
		// As on the network, the call itself succeeds: basic.ack has no
		// reply, and the client hears of the refusal as the channel's
		// close.
		ch.fail(precondition("unknown delivery tag %d", tag))
		return nil
	}
	for _, t := range tags {
		h := ch.unacked[t]
		delete(ch.unacked, t)
		h.settled()
		if ch.b.queues[h.q.name] != h.q {
			continue // the queue was deleted
		}
		then(h)
	}
	return nil
}

func (h *held) settled() {
	h.q.unacked--
	if h.c != nil {
		h.c.unacked--
	}
}

// ExchangeDeclare declares an exchange.
func (ch *Channel) ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error {
	return ch.exchangeDeclare(name, kind, durable, false, args)
}

// ExchangeDeclarePassive checks that an exchange exists.
func (ch *Channel) ExchangeDeclarePassive(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error {
	return ch.exchangeDeclare(name, kind, durable, true, args)
}

func (ch *Channel) exchangeDeclare(name, kind string, durable, passive bool, args amqp.Table) error {
	if err := ch.lock(); err != nil {
		return err
	}
	if !passive && !exchangeKinds[kind] {
		// RabbitMQ closes the whole connection over an unknown type.
		ch.b.mu.Unlock()
		err := &amqp.Error{Code: amqp.CommandInvalid, Reason: fmt.Sprintf("COMMAND_INVALID - unknown exchange type '%s'", kind), Server: true}
		ch.conn.close(err)
		return err
	}
	defer ch.unlock()
	if err := ch.b.declareExchange(name, kind, durable, passive, args); err != nil {
		return ch.fail(err)
	}
	return nil
}

// ExchangeDelete deletes an exchange and its bindings.
func (ch *Channel) ExchangeDelete(name string, ifUnused, noWait bool) error {
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	b := ch.b
	x, ok := b.exchanges[name]
	if !ok {
		return nil
	}
	if x.builtin {
		return ch.fail(&amqp.Error{Code: amqp.AccessRefused, Reason: fmt.Sprintf("ACCESS_REFUSED - operation not permitted on the default exchange '%s'", name), Server: true})
	}
	if ifUnused && len(x.bindings) > 0 {
		return ch.fail(precondition("exchange '%s' in vhost '/' in use", name))
	}
	delete(b.exchanges, name)
	for _, other := range b.exchanges {
		other.bindings = slices.DeleteFunc(other.bindings, func(bd binding) bool { return bd.toExchange == name })
	}
	return nil
}

// ExchangeBind binds destination to source with key.
func (ch *Channel) ExchangeBind(destination, key, source string, noWait bool, args amqp.Table) error {
	return ch.bind(source, binding{key: key, toExchange: destination, args: copyTable(args)}, true)
}

// ExchangeUnbind removes an exchange-to-exchange binding.
func (ch *Channel) ExchangeUnbind(destination, key, source string, noWait bool, args amqp.Table) error {
	return ch.bind(source, binding{key: key, toExchange: destination, args: copyTable(args)}, false)
}

// QueueBind binds a queue to an exchange with key.
func (ch *Channel) QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error {
	return ch.bind(exchange, binding{key: key, queue: name, args: copyTable(args)}, true)
}

// QueueUnbind removes a queue's binding.
func (ch *Channel) QueueUnbind(name, key, exchange string, args amqp.Table) error {
	return ch.bind(exchange, binding{key: key, queue: name, args: copyTable(args)}, false)
}

func (ch *Channel) bind(source string, bd binding, add bool) error {
	if err := ch.lock(); err != nil {
		return err
	}
	defer ch.unlock()
	b := ch.b
	x, ok := b.exchanges[source]
	if !ok && !add {
		return nil // unbinding is idempotent: nothing to remove
	}
	if !ok {
		return ch.fail(notFound("no exchange '%s' in vhost '/'", source))
	}
	if source == "" {
		return ch.fail(&amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED - operation not permitted on the default exchange", Server: true})
	}
	if bd.queue != "" {
		if _, ok := b.queues[bd.queue]; !ok && add {
			return ch.fail(notFound("no queue '%s' in vhost '/'", bd.queue))
		}
	} else if _, ok := b.exchanges[bd.toExchange]; !ok && add {
		return ch.fail(notFound("no exchange '%s' in vhost '/'", bd.toExchange))
	}
	if add {
		x.bind(bd)
	} else {
		x.unbind(bd)
	}
	return nil
}

// QueueDeclare declares a queue, or checks that the existing one is
// declared the same way.
func (ch *Channel) QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error) {
	return ch.queueDeclare(name, durable, autoDelete, exclusive, false, args)
}

// QueueDeclarePassive returns a queue's counts, failing if it does not
// exist.
func (ch *Channel) QueueDeclarePassive(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error) {
	return ch.queueDeclare(name, durable, autoDelete, exclusive, true, args)
}

func (ch *Channel) queueDeclare(name string, durable, autoDelete, exclusive, passive bool, args amqp.Table) (amqp.Queue, error) {
	if err := ch.lock(); err != nil {
		return amqp.Queue{}, err
	}
	defer ch.unlock()
	b := ch.b
	q, ok := b.queues[name]
	switch {
	case ok && q.exclusive != nil && q.exclusive != ch.conn:
		return amqp.Queue{}, ch.fail(lockedQueue(name))
	case ok && !passive:
		if err := q.equivalent(durable, autoDelete, args); err != nil {
			return amqp.Queue{}, ch.fail(err)
		}
	case !ok && passive:
		return amqp.Queue{}, ch.fail(notFound("no queue '%s' in vhost '/'", name))
	case !ok:
		if name == "" {
			b.ids++
			name = fmt.Sprintf("amq.gen-%d", b.ids)
		} else if strings.HasPrefix(name, "amq.") {
			return amqp.Queue{}, ch.fail(&amqp.Error{Code: amqp.AccessRefused, Reason: fmt.Sprintf("ACCESS_REFUSED - queue name '%s' contains reserved prefix 'amq.*'", name), Server: true})
		}
		var owner *Conn
		if exclusive {
			owner = ch.conn
		}
		nq, err := b.newQueue(name, durable, autoDelete, owner, args)
		if err != nil {
			return amqp.Queue{}, ch.fail(err)
		}
		b.queues[name] = nq
		q = nq
	}
	s := q.state()
	return amqp.Queue{Name: q.name, Messages: s.Ready, Consumers: s.Consumers}, nil
}

// QueueDelete deletes a queue and returns how many messages it held.
func (ch *Channel) QueueDelete(name string, ifUnused, ifEmpty, noWait bool) (int, error) {
	if err := ch.lock(); err != nil {
		return 0, err
	}
	defer ch.unlock()
	q, ok := ch.b.queues[name]
	if !ok {
		return 0, nil
	}
	if ifUnused && len(q.consumers) > 0 {
		return 0, ch.fail(precondition("queue '%s' in vhost '/' in use", name))
	}
	if ifEmpty && len(q.ready) > 0 {
		return 0, ch.fail(precondition("queue '%s' in vhost '/' is not empty", name))
	}
	return q.delete(), nil
}

// QueuePurge drops a queue's waiting messages.
func (ch *Channel) QueuePurge(name string, noWait bool) (int, error) {
	if err := ch.lock(); err != nil {
		return 0, err
	}
	defer ch.unlock()
	q, ok := ch.b.queues[name]
	if !ok {
		return 0, ch.fail(notFound("no queue '%s' in vhost '/'", name))
	}
	n := len(q.ready)
	q.ready, q.bytes = nil, 0
	q.relieve()
	q.armTimer()
	return n, nil
}

// consumer is one basic.consume.
type consumer struct {
	ch        *Channel
	q         *queue // nil for direct reply-to
	tag       string
	autoAck   bool
	exclusive bool
	prefetch  int

	// guarded by b.mu
	unacked   int
	cancelled bool
	cursor    int64 // a stream consumer's next offset

	deliveries chan amqp.Delivery
	out        *mailbox[amqp.Delivery]
	stop       chan struct{}
}

func (c *consumer) hasCredit() bool {
	return c.autoAck || c.prefetch == 0 || c.unacked < c.prefetch
}

// deliver hands m from q to the client. Called with b.mu held.
func (c *consumer) deliver(q *queue, m *message) {
	ch := c.ch
	ch.deliveryTag++
	d := m.delivery(q.name)
	d.Acknowledger = ch
	d.ConsumerTag = c.tag
	d.DeliveryTag = ch.deliveryTag
	if q.stream {
		if d.Headers == nil {
			d.Headers = amqp.Table{}
		}
		d.Headers["x-stream-offset"] = m.offset
	}
	if !c.autoAck {
		ch.unacked[d.DeliveryTag] = &held{q: q, m: m, c: c}
		c.unacked++
		q.unacked++
	}
	c.out.put(d)
}

// deliverDirect hands a reply to a direct reply-to consumer. Called with
// b.mu held.
func (c *consumer) deliverDirect(exchange, key string, msg amqp.Publishing) {
	m := &message{exchange: exchange, key: key, pub: msg}
	c.ch.deliveryTag++
	d := m.delivery(key)
	d.Acknowledger = c.ch
	d.ConsumerTag = c.tag
	d.DeliveryTag = c.ch.deliveryTag
	c.out.put(d)
}

// run forwards deliveries to the client until the consumer is cancelled,
// then closes its channel.
func (c *consumer) run() {
	defer close(c.deliveries)
	for {
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			d, ok := c.out.take()
			if !ok {
				break
			}
			select {
			case c.deliveries <- d:
			case <-c.stop:
				c.ch.b.mu.Lock()
				c.ch.requeueUnseen(c, d)
				c.ch.b.mu.Unlock()
				return
			case <-c.ch.b.done:
				return
			}
		}
		select {
		case <-c.out.kick:
		case <-c.stop:
			return
		case <-c.ch.b.done:
			return
		}
	}
}

// requeueUnseen puts back a delivery that was cancelled on its way to the
// client. Called with b.mu held.
func (ch *Channel) requeueUnseen(c *consumer, d amqp.Delivery) {
	h, ok := ch.unacked[d.DeliveryTag]
	if !ok || h.c != c {
		return
	}
	delete(ch.unacked, d.DeliveryTag)
	h.settled()
	if ch.b.queues[h.q.name] == h.q && !h.q.stream {
		h.q.insert(h.m)
		h.q.dispatch()
	}
	ch.b.touch()
}

// register adds n to the notify list of a channel or connection, or, once
// that is closed, closes n at once, as amqp091-go does.
func register[T any](b *Broker, closed *bool, list *[]chan T, n chan T) chan T {
	b.mu.Lock()
	defer b.mu.Unlock()
	if *closed {
		close(n)
		return n
	}
	*list = append(*list, n)
	return n
}
