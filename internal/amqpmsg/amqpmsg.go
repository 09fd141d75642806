// Package amqpmsg holds what the runtime and its operations tools both do
// with AMQP: read integer headers written by any client, copy a delivery
// for publishing it again, and inspect a queue.
package amqpmsg

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// HeaderInt reads an integer header whatever integer type the writer's
// client chose; anything else counts as 0.
func HeaderInt(h amqp.Table, key string) int {
	switch v := h[key].(type) {
	case int8:
		return int(v)
	case int16:
		return int(v)
	case int32:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	case uint8:
		return int(v)
	case uint16:
		return int(v)
	case uint32:
		return int(v)
	}
	return 0
}

// CloneHeaders returns a copy of h with room for extra more entries.
func CloneHeaders(h amqp.Table, extra int) amqp.Table {
	c := make(amqp.Table, len(h)+extra)
	for k, v := range h {
		c[k] = v
	}
	return c
}

// Republish returns d as a message to publish again, with headers in place
// of d's. It keeps the body and the properties, and drops what would make
// the copy misbehave: a per-message expiration (a copy waiting in a poison
// or delay queue must not expire) and user_id (the broker rejects one that
// is not the publishing connection's user). Copies are always persistent.
func Republish(d amqp.Delivery, headers amqp.Table) amqp.Publishing {
	return amqp.Publishing{
		Headers:         headers,
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		DeliveryMode:    amqp.Persistent,
		Priority:        d.Priority,
		CorrelationId:   d.CorrelationId,
		ReplyTo:         d.ReplyTo,
		MessageId:       d.MessageId,
		Timestamp:       d.Timestamp,
		Type:            d.Type,
		AppId:           d.AppId,
		Body:            d.Body,
	}
}

// ErrNoQueue is matched by the error of [InspectQueue] for a queue that
// does not exist.
var ErrNoQueue = errors.New("queue does not exist")

// Channels opens channels on a live broker connection. *runtime.Conn is
// one, so the runtime and the CLI reach the broker the same way.
type Channels interface {
	OpenChannel(ctx context.Context) (*amqp.Channel, error)
}

// InspectQueue passively declares a queue on a channel of its own, for its
// depth and consumer count: a missing queue makes the broker close the
// channel, which must not take a publisher's or consumer's channel with it.
func InspectQueue(ctx context.Context, conn Channels, name string) (amqp.Queue, error) {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return amqp.Queue{}, fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return q, fmt.Errorf("%w: %q; declare the topology first", ErrNoQueue, name)
	}
	if err != nil {
		return q, fmt.Errorf("inspect queue %q: %w", name, err)
	}
	return q, nil
}
