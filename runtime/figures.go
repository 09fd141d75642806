package runtime

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Figures are the four numbers to put on a dashboard for one consumer.
type Figures struct {
	Consumer string
	// WorkDepth is the number of messages ready in the work queue. One that
	// climbs and does not come down is the earliest honest signal.
	WorkDepth int
	// PoisonDepth is the number of messages in the poison queue; alert on
	// anything above zero.
	PoisonDepth int
	// Consumers is the number of consumers attached to the work queue, in
	// every process. Zero with depth is a deploy that half-happened.
	Consumers int
	// RedeliveryRate is Redelivered/Delivered as counted by this process (0
	// before anything was delivered). A rise usually means a dependency is
	// wobbling or consumers are crashing.
	RedeliveryRate float64
	Counts         Counts // everything this process counted for the consumer
}

// Figures reads the dashboard figures of consumer c: queue depths and the
// consumer count from the broker (by passive declare, so no management
// plugin is needed), the redelivery rate from this process's counters.
func (c *Conn) Figures(ctx context.Context, consumer topology.Consumer) (Figures, error) {
	f := Figures{Consumer: consumer.Name, Counts: c.Counts(consumer.Name)}
	if d := f.Counts[Delivered]; d > 0 {
		f.RedeliveryRate = float64(f.Counts[Redelivered]) / float64(d)
	}
	s, err := c.session(ctx)
	if err != nil {
		return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
	}
	work, err := inspectQueue(s.conn, consumer.Queue)
	if err != nil {
		return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
	}
	poison, err := inspectQueue(s.conn, consumer.PoisonQueue)
	if err != nil {
		return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
	}
	f.WorkDepth, f.Consumers, f.PoisonDepth = work.Messages, work.Consumers, poison.Messages
	return f, nil
}

// inspectQueue passively declares name on a channel of its own: a missing
// queue makes the broker close the channel, which must not take a
// publisher's or consumer's channel with it.
func inspectQueue(conn *amqp.Connection, name string) (amqp.Queue, error) {
	ch, err := conn.Channel()
	if err != nil {
		return amqp.Queue{}, fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return q, fmt.Errorf("queue %q does not exist: declare the topology first", name)
	}
	if err != nil {
		return q, fmt.Errorf("inspect queue %q: %w", name, err)
	}
	return q, nil
}
