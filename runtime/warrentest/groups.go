package warrentest

import (
	"context"
	"fmt"
	"slices"
	"sync"

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
		off, _ := d.Headers["x-stream-offset"].(int64)
		h := map[string]any{}
		for k, v := range d.Headers {
			if k != "x-stream-offset" {
				h[k] = v
			}
		}
		m.g.Deliver(runtime.StreamMessage{
			Partition: partition, Offset: off, Body: d.Body, Exchange: d.Exchange, RoutingKey: d.RoutingKey,
			MessageID: d.MessageId, Type: d.Type, ContentType: d.ContentType, Timestamp: d.Timestamp, Headers: h,
		})
		_ = d.Ack(false)
	}
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
