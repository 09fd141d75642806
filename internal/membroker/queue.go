package membroker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// message is one copy of a message in one queue.
type message struct {
	seq        uint64 // broker-wide arrival order, to restore position on requeue
	exchange   string
	key        string
	pub        amqp.Publishing
	priority   int
	expiresAt  time.Time // zero: never
	returns    int       // times given back without an ack (quorum x-delivery-count)
	redeliver  bool
	byClient   bool // published by a client, not dead-lettered by the broker
	bodyLength int
	offset     int64     // its offset in a stream's log
	at         time.Time // when a stream appended it
}

func (m *message) delivery(queue string) amqp.Delivery {
	p := m.pub
	return amqp.Delivery{
		Headers: copyTable(p.Headers), ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
		DeliveryMode: p.DeliveryMode, Priority: p.Priority, CorrelationId: p.CorrelationId,
		ReplyTo: p.ReplyTo, Expiration: p.Expiration, MessageId: p.MessageId, Timestamp: p.Timestamp,
		Type: p.Type, UserId: p.UserId, AppId: p.AppId,
		Redelivered: m.redeliver, Exchange: m.exchange, RoutingKey: m.key, Body: p.Body,
	}
}

type queue struct {
	b          *Broker
	name       string
	durable    bool
	exclusive  *Conn // the connection that owns an exclusive queue
	autoDelete bool
	args       amqp.Table

	quorum        bool
	stream        bool          // a stream: an append-only log each consumer reads from its own offset
	log           []*message    // a stream's facts, at their offsets; kept, whoever read them
	ttl           time.Duration // -1: none
	dlx           *string
	dlrk          *string
	maxLen        int64 // -1: none
	maxBytes      int64 // -1: none
	rejectPublish bool
	rejectDLX     bool // reject-publish-dlx: the refused message is dead-lettered too
	// rejecting is a quorum queue's reject-publish state: entered once
	// the queue is over its bound, left once it drained to 80% of it.
	rejecting     bool
	maxPriority   int // 0: none
	twoLevels     bool
	sac           bool
	deliveryLimit int // 0: none

	ready     []*message // sorted: priority descending, then seq
	bytes     int64
	unacked   int
	consumers []*consumer
	rr        int
	timer     *time.Timer
	timerAt   time.Time
}

func (b *Broker) newQueue(name string, durable, autoDelete bool, owner *Conn, args amqp.Table) (*queue, *amqp.Error) {
	q := &queue{b: b, name: name, durable: durable, autoDelete: autoDelete, exclusive: owner, args: copyTable(args), ttl: -1, maxLen: -1, maxBytes: -1}
	typ, _ := args["x-queue-type"].(string)
	switch typ {
	case "", "classic":
	case "quorum":
		q.quorum = true
		if !durable || autoDelete || owner != nil {
			return nil, precondition("invalid property 'non-durable, auto-delete or exclusive' for queue '%s' in vhost '/'", name)
		}
		// Classic queue arguments quorum queues refuse (measured on 3.10.8
		// and 4.0.5; RabbitMQ 4's two priority levels take no argument).
		for _, k := range []string{"x-max-priority", "x-queue-mode"} {
			if _, ok := args[k]; ok {
				return nil, precondition("invalid arg '%s' for queue '%s' in vhost '/': unsupported by quorum queues", k, name)
			}
		}
	case "stream":
		q.stream = true
		if !durable || autoDelete || owner != nil {
			return nil, precondition("invalid property 'non-durable, auto-delete or exclusive' for queue '%s' in vhost '/'", name)
		}
		// Retention (x-max-age, x-max-length-bytes) is kept as declared
		// and compared on redeclare, but not applied: nothing in a test
		// lives long enough to be dropped.
		return q, nil
	default:
		return nil, precondition("invalid arg 'x-queue-type' for queue '%s' in vhost '/': unsupported queue type '%s' in the in-process broker", name, typ)
	}
	if v, ok := intArg(args, "x-message-ttl"); ok {
		if v < 0 {
			return nil, precondition("invalid arg 'x-message-ttl' for queue '%s' in vhost '/': %d is negative", name, v)
		}
		q.ttl = time.Duration(v) * time.Millisecond
	}
	if s, ok := args["x-dead-letter-exchange"].(string); ok {
		q.dlx = &s
	}
	if s, ok := args["x-dead-letter-routing-key"].(string); ok {
		q.dlrk = &s
	}
	if v, ok := intArg(args, "x-max-length"); ok {
		q.maxLen = v
	}
	if v, ok := intArg(args, "x-max-length-bytes"); ok {
		q.maxBytes = v
	}
	switch o, _ := args["x-overflow"].(string); o {
	case "", "drop-head":
	case "reject-publish":
		q.rejectPublish = true
	case "reject-publish-dlx":
		// Quorum queues take the argument but fall back to drop-head.
		q.rejectPublish = !q.quorum
		q.rejectDLX = !q.quorum
	default:
		return nil, precondition("invalid arg 'x-overflow' for queue '%s' in vhost '/': %q", name, o)
	}
	if v, ok := intArg(args, "x-max-priority"); ok {
		if v < 0 || v > 255 {
			return nil, precondition("invalid arg 'x-max-priority' for queue '%s' in vhost '/': %d", name, v)
		}
		q.maxPriority = int(v)
	}
	if q.quorum && major(b.opts.Version) >= 4 {
		// RabbitMQ 4 quorum queues have two levels, without an argument:
		// priority 5 and above is high.
		q.twoLevels = true
	}
	if v, ok := args["x-single-active-consumer"].(bool); ok {
		q.sac = v
	}
	if v, ok := intArg(args, "x-delivery-limit"); ok && q.quorum && v > 0 {
		q.deliveryLimit = int(v)
	} else if q.quorum && !ok && major(b.opts.Version) >= 4 {
		q.deliveryLimit = 20 // RabbitMQ 4's default
	}
	return q, nil
}

func major(version string) int {
	n, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	return n
}

// before reports whether version is older than major.minor.
func before(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	ma, _ := strconv.Atoi(parts[0])
	mi := 0
	if len(parts) > 1 {
		mi, _ = strconv.Atoi(parts[1])
	}
	return ma < major || (ma == major && mi < minor)
}

// intArg reads an integer argument of any AMQP integer type.
func intArg(t amqp.Table, k string) (int64, bool) { return toInt64(t[k]) }

func toInt64(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// equivalenceArgs are the arguments RabbitMQ compares when a queue is
// declared again.
var equivalenceArgs = []string{
	"x-queue-type", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
	"x-max-length", "x-max-length-bytes", "x-overflow", "x-max-priority",
	"x-single-active-consumer", "x-delivery-limit", "x-dead-letter-strategy", "x-expires",
	"x-max-age",
}

func (q *queue) equivalent(durable, autoDelete bool, args amqp.Table) *amqp.Error {
	if q.durable != durable {
		return precondition("inequivalent arg 'durable' for queue '%s' in vhost '/': received '%t' but current is '%t'", q.name, durable, q.durable)
	}
	if q.autoDelete != autoDelete {
		return precondition("inequivalent arg 'auto_delete' for queue '%s' in vhost '/': received '%t' but current is '%t'", q.name, autoDelete, q.autoDelete)
	}
	for _, k := range equivalenceArgs {
		have, hadIt := q.args[k]
		got, gotIt := args[k]
		if k == "x-queue-type" {
			if !hadIt {
				have, hadIt = "classic", true
			}
			if !gotIt && !q.quorum && !q.stream {
				// A declaration without a type accepts an existing classic
				// queue; RabbitMQ refuses it for a quorum queue (3.10.8 and
				// 4.0.5 alike).
				continue
			}
		}
		if hadIt != gotIt || norm(have) != norm(got) {
			cur := "none"
			if hadIt {
				cur = fmt.Sprintf("the value '%v'", have)
			}
			recv := "none"
			if gotIt {
				recv = fmt.Sprintf("the value '%v'", got)
			}
			return precondition("inequivalent arg '%s' for queue '%s' in vhost '/': received %s but current is %s", k, q.name, recv, cur)
		}
	}
	return nil
}

func norm(v any) string {
	if n, ok := toInt64(v); ok {
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprint(v)
}

func (q *queue) state() QueueState {
	s := QueueState{Name: q.name, Ready: len(q.ready), Unacked: q.unacked, Args: copyTable(q.args), Appended: len(q.log)}
	for _, c := range q.consumers {
		if !c.cancelled {
			s.Consumers++
			if q.stream {
				// What its furthest-behind reader has still to read.
				s.Ready = max(s.Ready, len(q.log)-int(c.cursor))
			}
		}
	}
	if q.stream && s.Consumers == 0 {
		// No reader attached: all of it is there for the next to read.
		s.Ready = len(q.log)
	}
	if len(q.ready) > 0 {
		s.Due = q.ready[0].expiresAt
	}
	return s
}

// push adds a message from exchange with key. It reports false when the
// queue is full and refuses new messages.
func (q *queue) push(exchange, key string, pub amqp.Publishing, byClient bool) bool {
	m := &message{exchange: exchange, key: key, pub: pub, bodyLength: len(pub.Body), byClient: byClient}
	m.pub.Headers = copyTable(pub.Headers)
	if q.stream {
		m.offset, m.at = int64(len(q.log)), time.Now()
		q.log = append(q.log, m)
		q.dispatch()
		return true
	}
	if q.quorum && q.rejectPublish {
		// A quorum queue checks its bound after each enqueue, as
		// RabbitMQ's rabbit_fifo does: the message that takes it over
		// the bound is taken, and from then on publishes are refused
		// until it drained to 80% of the bound. x-max-length N holds
		// N+1 messages.
		if q.rejecting {
			return false
		}
	} else if q.full(m) {
		if q.rejectPublish {
			if q.rejectDLX {
				q.deadLetter(m, "maxlen")
			}
			return false
		}
		for len(q.ready) > 0 && q.full(m) {
			head := q.ready[0]
			q.remove(0)
			q.deadLetter(head, "maxlen")
		}
	}
	q.b.seq++
	m.seq = q.b.seq
	switch {
	case q.twoLevels && pub.Priority >= 5:
		m.priority = 1
	case q.maxPriority > 0:
		m.priority = min(int(pub.Priority), q.maxPriority)
	}
	ttl := q.ttl
	if pub.Expiration != "" {
		if ms, err := strconv.ParseInt(pub.Expiration, 10, 64); err == nil && ms >= 0 {
			if d := time.Duration(ms) * time.Millisecond; ttl < 0 || d < ttl {
				ttl = d
			}
		}
	}
	if ttl >= 0 {
		m.expiresAt = time.Now().Add(ttl)
	}
	q.insert(m)
	if q.quorum && q.rejectPublish && q.over() {
		q.rejecting = true
	}
	q.dispatch()
	return true
}

// over reports whether the queue holds more than its bound.
func (q *queue) over() bool {
	return q.maxLen >= 0 && int64(len(q.ready)) > q.maxLen || q.maxBytes >= 0 && q.bytes > q.maxBytes
}

// relieve ends a quorum queue's reject-publish state once it holds no
// more than 80% of its bound.
func (q *queue) relieve() {
	if !q.rejecting {
		return
	}
	below := func(limit, n int64) bool { return limit < 0 || n <= limit*8/10 }
	if below(q.maxLen, int64(len(q.ready))) && below(q.maxBytes, q.bytes) {
		q.rejecting = false
	}
}

func (q *queue) full(m *message) bool {
	if q.maxLen >= 0 && int64(len(q.ready))+1 > q.maxLen {
		return true
	}
	return q.maxBytes >= 0 && q.bytes+int64(m.bodyLength) > q.maxBytes
}

// insert places m by priority, then by arrival, so that a message given
// back takes its old place.
func (q *queue) insert(m *message) {
	i := sort.Search(len(q.ready), func(i int) bool {
		r := q.ready[i]
		return r.priority < m.priority || (r.priority == m.priority && r.seq > m.seq)
	})
	q.ready = append(q.ready, nil)
	copy(q.ready[i+1:], q.ready[i:])
	q.ready[i] = m
	q.bytes += int64(m.bodyLength)
}

func (q *queue) remove(i int) {
	q.bytes -= int64(q.ready[i].bodyLength)
	q.ready = append(q.ready[:i], q.ready[i+1:]...)
	q.relieve()
}

// dispatch hands waiting messages to consumers with credit, expiring
// those at the head whose time has come, and arms the timer for the next
// expiry.
func (q *queue) dispatch() {
	if q.stream {
		q.feed()
		return
	}
	for len(q.ready) > 0 {
		head := q.ready[0]
		if !head.expiresAt.IsZero() && !time.Now().Before(head.expiresAt) {
			q.remove(0)
			q.deadLetter(head, "expired")
			continue
		}
		c := q.pick()
		if c == nil {
			break
		}
		q.remove(0)
		c.deliver(q, head)
	}
	q.armTimer()
}

// pick returns the consumer the next message goes to, or nil when none
// has credit. A single-active-consumer queue delivers only to its first
// consumer.
func (q *queue) pick() *consumer {
	var live []*consumer
	for _, c := range q.consumers {
		if !c.cancelled {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	if q.sac {
		if live[0].hasCredit() {
			return live[0]
		}
		return nil
	}
	for i := range live {
		c := live[(q.rr+i)%len(live)]
		if c.hasCredit() {
			q.rr = (q.rr + i + 1) % len(live)
			return c
		}
	}
	return nil
}

func (q *queue) armTimer() {
	if q.b.closed || len(q.ready) == 0 || q.ready[0].expiresAt.IsZero() {
		q.stopTimer()
		return
	}
	at := q.ready[0].expiresAt
	if q.timer != nil && q.timerAt.Equal(at) {
		return
	}
	q.stopTimer()
	q.timerAt = at
	q.timer = time.AfterFunc(time.Until(at), func() {
		q.b.mu.Lock()
		defer q.b.mu.Unlock()
		if q.b.closed || q.b.queues[q.name] != q {
			return
		}
		q.timer = nil
		q.dispatch()
		q.b.touch()
	})
}

func (q *queue) stopTimer() {
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}

// giveBack returns a delivered message to its place (before 3.13, to
// the back of a quorum queue), counting the return; a quorum queue
// dead-letters it past its delivery limit.
func (q *queue) giveBack(m *message) {
	if q.stream {
		return // a stream keeps it; its reader reads it again from its offset
	}
	m.redeliver = true
	if q.quorum {
		m.returns++
		if m.pub.Headers == nil {
			m.pub.Headers = amqp.Table{}
		}
		m.pub.Headers["x-delivery-count"] = int64(m.returns)
		if q.deliveryLimit > 0 && m.returns > q.deliveryLimit {
			q.deadLetter(m, "delivery_limit")
			return
		}
		if before(q.b.opts.Version, 3, 13) {
			// RabbitMQ 3.10's quorum queues put a returned message behind
			// those waiting, where classic queues restore its place.
			q.b.seq++
			m.seq = q.b.seq
		}
	}
	q.insert(m)
}

// deadLetter republishes m to the queue's dead-letter exchange, recording
// why in x-death as RabbitMQ does; without one the message is dropped.
func (q *queue) deadLetter(m *message, reason string) {
	b := q.b
	if q.dlx == nil {
		return
	}
	if _, ok := b.exchanges[*q.dlx]; !ok {
		return
	}
	pub := m.pub
	h := copyTable(pub.Headers)
	if h == nil {
		h = amqp.Table{}
	}
	delete(h, "x-delivery-count")
	now := time.Now()
	entry := amqp.Table{
		"count": int64(1), "reason": reason, "queue": q.name, "time": now,
		"exchange": m.exchange, "routing-keys": []any{m.key},
	}
	if pub.Expiration != "" {
		entry["original-expiration"] = pub.Expiration
		pub.Expiration = ""
	}
	if m.byClient && !before(b.opts.Version, 3, 13) {
		// From 3.13 the broker keeps its dead-letter history beside the
		// message, not in the headers a client can write: a message a
		// client published starts with none, whatever x-death it carries
		// (a runtime's retry copy carries the x-death of its earlier hops).
		for _, k := range []string{"x-death", "x-first-death-queue", "x-first-death-reason", "x-first-death-exchange"} {
			delete(h, k)
		}
	}
	deaths, _ := h["x-death"].([]any)
	var kept []any
	for _, d := range deaths {
		t, ok := d.(amqp.Table)
		if ok && t["queue"] == q.name && t["reason"] == reason {
			n, _ := intArg(t, "count")
			entry["count"] = n + 1
			continue
		}
		kept = append(kept, d)
	}
	h["x-death"] = append([]any{entry}, kept...)
	if _, ok := h["x-first-death-queue"]; !ok {
		h["x-first-death-queue"] = q.name
		h["x-first-death-reason"] = reason
		h["x-first-death-exchange"] = m.exchange
	}
	if !before(b.opts.Version, 3, 13) {
		// RabbitMQ writes the x-last-death-* headers from 3.13 on.
		h["x-last-death-queue"] = q.name
		h["x-last-death-reason"] = reason
		h["x-last-death-exchange"] = m.exchange
	}
	pub.Headers = h
	key := m.key
	if q.dlrk != nil {
		key = *q.dlrk
	}
	targets := b.route(*q.dlx, key, pub)
	r := Record{DeadLettered: q.name, Reason: reason, Exchange: *q.dlx, RoutingKey: key, Msg: pub}
	for _, t := range targets {
		if reason != "rejected" && isCycle(t.name, h["x-death"].([]any)) {
			continue
		}
		if t.push(*q.dlx, key, pub, false) {
			r.Queues = append(r.Queues, t.name)
		}
	}
	b.record(r)
}

// isCycle reports whether dead-lettering to queue would close a cycle
// that no client broke, as RabbitMQ decides: queue is in deaths (most
// recent first), and no death up to and including it was a rejection.
// Such a message is dropped rather than dead-lettered for ever.
func isCycle(queue string, deaths []any) bool {
	for _, d := range deaths {
		t, _ := d.(amqp.Table)
		if t["reason"] == "rejected" {
			return false
		}
		if t["queue"] == queue {
			return true
		}
	}
	return false
}

// delete removes the queue: its consumers are cancelled by the broker,
// its messages dropped.
func (q *queue) delete() int {
	b := q.b
	n := len(q.ready)
	q.stopTimer()
	delete(b.queues, q.name)
	for _, x := range b.exchanges {
		kept := x.bindings[:0]
		for _, bd := range x.bindings {
			if bd.queue != q.name {
				kept = append(kept, bd)
			}
		}
		x.bindings = kept
	}
	for _, c := range q.consumers {
		c.ch.dropConsumer(c, true)
	}
	q.consumers = nil
	q.ready = nil
	if q.stream {
		n, q.log = len(q.log), nil
	}
	return n
}

// feed hands each of a stream's consumers, as far as its credit goes, the
// facts from its offset on: every consumer reads the whole log, and a
// settled fact stays in it. Called with b.mu held.
func (q *queue) feed() {
	for _, c := range q.consumers {
		for !c.cancelled && c.cursor < int64(len(q.log)) && c.hasCredit() {
			m := q.log[c.cursor]
			c.cursor++
			c.deliver(q, m)
		}
	}
}

// streamStart is the offset a consumer of a stream starts at, from its
// x-stream-offset argument, as RabbitMQ reads it: "first", "last" (the
// last fact: the broker's last chunk, a chunk being one fact here),
// "next" (the default), an offset, or a time (the first fact appended at
// or after it).
func (q *queue) streamStart(arg any) (int64, *amqp.Error) {
	n := int64(len(q.log))
	switch v := arg.(type) {
	case nil:
		return n, nil
	case string:
		switch v {
		case "first":
			return 0, nil
		case "last":
			return max(n-1, 0), nil
		case "next":
			return n, nil
		}
	case time.Time:
		i := sort.Search(len(q.log), func(i int) bool { return !q.log[i].at.Before(v) })
		return int64(i), nil
	default:
		if off, ok := toInt64(v); ok {
			return min(max(off, 0), n), nil
		}
	}
	return 0, precondition("invalid arg 'x-stream-offset' for queue '%s' in vhost '/': %v", q.name, arg)
}
