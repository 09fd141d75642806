package warrentest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
	"github.com/warrenbus/warren/runtime"
)

// The consumer groups of super streams, as the broker runs them over its
// stream protocol: on each partition one member of a group is active and
// reads it, from where Activated says; when it leaves, the next member
// that joined becomes active there. Unlike RabbitMQ, the bus does not
// spread the partitions over the members: the member that joined first
// reads every partition until it leaves. The partitions are the bus's
// stream queues, read over its AMQP.

// groups are the bus's consumer groups, by super stream and consumer.
type groups struct {
	mu sync.Mutex
	by map[[2]string][]*member // the members in the order they joined
}

// member is one joined group: while it is the group's first member it
// reads every partition.
type member struct {
	b          *Bus
	g          runtime.ConsumerGroup
	partitions []string
	mu         sync.Mutex
	conn       *membroker.Conn // while active
	left       bool
}

// Join joins g's group; the first member of a group reads every
// partition of its super stream.
func (o busOffsets) Join(_ context.Context, g runtime.ConsumerGroup) (runtime.GroupMember, error) {
	b := o.b
	var parts []string
	for _, c := range b.top.Consumers {
		if c.Name == g.Consumer && c.Stream == g.SuperStream {
			parts = c.Partitions
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("join the group %q of super stream %q: no consumer of the topology reads it", g.Consumer, g.SuperStream)
	}
	m := &member{b: b, g: g, partitions: parts}
	key := [2]string{g.SuperStream, g.Consumer}
	b.groups.mu.Lock()
	b.groups.by[key] = append(b.groups.by[key], m)
	first := len(b.groups.by[key]) == 1
	b.groups.mu.Unlock()
	if first {
		if err := m.activate(); err != nil {
			_ = m.Leave()
			return nil, err
		}
	}
	b.ready.began(g.Consumer, groupOf(g.SuperStream))
	return m, nil
}

// activate makes m active on every partition: each is read from where
// the member's Activated says, on a connection of its own.
func (m *member) activate() error {
	conn, err := m.b.broker.Dial()
	if err != nil {
		return fmt.Errorf("consumer group %q: %w", m.g.Consumer, err)
	}
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		_ = conn.Close()
		return nil
	}
	m.conn = conn
	m.mu.Unlock()
	for _, p := range m.partitions {
		pos := m.g.Activated(p)
		ch, err := conn.Channel()
		if err == nil {
			err = ch.Qos(100, 0, false)
		}
		var ds <-chan amqp.Delivery
		if err == nil {
			ds, err = ch.Consume(p, "", false, false, false, false, amqp.Table{"x-stream-offset": position(pos)})
		}
		if err != nil {
			return fmt.Errorf("consumer group %q: read partition %q: %w", m.g.Consumer, p, err)
		}
		go m.read(p, ds)
	}
	return nil
}

// position is a StreamPosition as the x-stream-offset of a basic.consume.
func position(pos runtime.StreamPosition) any {
	switch {
	case pos.Offset >= 0:
		return pos.Offset
	case pos.Start == "time":
		return pos.Time
	case pos.Start == "" || pos.Start == "offset":
		return "next"
	}
	return pos.Start
}

// read hands the partition's facts to the member in partition order. The
// broker's credit is freed at once: the member settles each fact in its
// own offset, and the partition keeps it.
func (m *member) read(partition string, ds <-chan amqp.Delivery) {
	for d := range ds {
		m.g.Deliver(streamMessage(partition, d))
		_ = d.Ack(false)
	}
}

// streamMessage is a fact of a stream of the bus, read over its AMQP, as
// the stream protocol gives it.
func streamMessage(stream string, d amqp.Delivery) runtime.StreamMessage {
	off, _ := d.Headers["x-stream-offset"].(int64)
	h := map[string]any{}
	for k, v := range d.Headers {
		if k != "x-stream-offset" {
			h[k] = v
		}
	}
	return runtime.StreamMessage{
		Partition: stream, Offset: off, Body: d.Body, Exchange: d.Exchange, RoutingKey: d.RoutingKey,
		MessageID: d.MessageId, Type: d.Type, ContentType: d.ContentType, Timestamp: d.Timestamp, Headers: h,
	}
}

// Read reads a plain stream of the bus as runtime/streamoffset's store
// reads one of RabbitMQ's over the stream protocol: from where
// r.Position says, each fact in stream order, until the reading is
// closed; when its connection drops ([Bus.DropConnections]), r.Lost is
// called and it reads again from where r.Position then says. The stream
// is the bus's stream queue, read over its AMQP on a connection of its
// own.
func (o busOffsets) Read(_ context.Context, r runtime.StreamRead) (runtime.StreamReading, error) {
	rd := &reading{b: o.b, r: r, closing: make(chan struct{}), done: make(chan struct{})}
	ds, err := rd.subscribe()
	if err != nil {
		return nil, err
	}
	go func() {
		defer close(rd.done)
		for {
			for d := range ds {
				r.Deliver(streamMessage(r.Stream, d))
				_ = d.Ack(false)
			}
			select {
			case <-rd.closing:
				return
			default:
			}
			if r.Lost != nil {
				r.Lost(fmt.Errorf("the reading of stream %q ended: its connection to the bus was dropped", r.Stream))
			}
			for {
				select {
				case <-rd.closing:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if ds, err = rd.subscribe(); err == nil {
					break
				}
				if r.Retrying != nil {
					r.Retrying(err)
				}
			}
		}
	}()
	return rd, nil
}

// reading is a plain stream's reading on the bus.
type reading struct {
	b       *Bus
	r       runtime.StreamRead
	mu      sync.Mutex
	conn    *membroker.Conn // the current subscription's
	closing chan struct{}
	done    chan struct{} // closed when nothing more is delivered
	once    sync.Once
}

// subscribe reads the stream from where Position says, on a new
// connection.
func (rd *reading) subscribe() (<-chan amqp.Delivery, error) {
	pos, err := rd.r.Position()
	if err != nil {
		return nil, err
	}
	conn, err := rd.b.broker.Dial()
	if err != nil {
		return nil, fmt.Errorf("read stream %q: %w", rd.r.Stream, err)
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Qos(100, 0, false)
	}
	var ds <-chan amqp.Delivery
	if err == nil {
		ds, err = ch.Consume(rd.r.Stream, "", false, false, false, false, amqp.Table{"x-stream-offset": position(pos)})
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("read stream %q: %w", rd.r.Stream, err)
	}
	rd.mu.Lock()
	rd.conn = conn
	rd.mu.Unlock()
	// Positioned: a fact written from now on is read.
	rd.b.ready.began(rd.r.Consumer, rd.r.Stream)
	return ds, nil
}

// Close ends the reading once the fact being delivered has been.
func (rd *reading) Close() error {
	rd.once.Do(func() { close(rd.closing) })
	rd.mu.Lock()
	conn := rd.conn
	rd.mu.Unlock()
	err := conn.Close()
	<-rd.done
	return err
}

// Leave stops m's reading and makes the group's next member active.
func (m *member) Leave() error {
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return nil
	}
	m.left = true
	conn := m.conn
	m.conn = nil
	m.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
	key := [2]string{m.g.SuperStream, m.g.Consumer}
	gs := &m.b.groups
	gs.mu.Lock()
	members := gs.by[key]
	wasFirst := len(members) > 0 && members[0] == m
	gs.by[key] = slices.DeleteFunc(members, func(o *member) bool { return o == m })
	var next *member
	if wasFirst && len(gs.by[key]) > 0 {
		next = gs.by[key][0]
	}
	gs.mu.Unlock()
	if next != nil && conn != nil {
		if err := next.activate(); err != nil {
			return err
		}
	}
	return nil
}
