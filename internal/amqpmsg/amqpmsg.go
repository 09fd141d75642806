// Package amqpmsg holds what the runtime and its operations tools both do
// to AMQP messages: read integer headers written by any client, and copy a
// delivery for publishing it again.
package amqpmsg

import amqp "github.com/rabbitmq/amqp091-go"

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
