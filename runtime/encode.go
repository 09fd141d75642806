package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-faster/jx"
	"github.com/google/uuid"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/codec"
)

// outMessage is a fact encoded for publishing: its envelope's id and time
// and the envelope's bytes.
type outMessage struct {
	id   string
	at   time.Time
	body []byte
}

// typedPayload is a generated fact type: it validates and encodes itself.
type typedPayload interface {
	codec.Encoder
	codec.Validator
}

// encodeFact validates payload and encodes it in a new envelope. A
// generated fact type is validated as a value and encoded once, the
// envelope written around it; nothing re-reads the bytes it wrote. Any
// other payload goes through [NewEnvelope] and [encodeEnvelope].
func encodeFact(f Fact, payload any) (outMessage, error) {
	if f.RoutingKey == "" {
		return outMessage{}, errNoRoutingKey
	}
	v, ok := payload.(typedPayload)
	if !ok {
		env, err := NewEnvelope(payload)
		if err != nil {
			return outMessage{}, err
		}
		return encodeEnvelope(f, env)
	}
	if err := v.Validate(); err != nil {
		return outMessage{}, fmt.Errorf("payload does not match its schema: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return outMessage{}, fmt.Errorf("make message id: %w", err)
	}
	m := outMessage{id: id.String(), at: time.Now().UTC()}
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	var ts [len(time.RFC3339Nano) + 8]byte
	e.ObjStart()
	e.FieldStart("id")
	e.Str(m.id)
	e.FieldStart("occurred_at")
	e.ByteStr(m.at.AppendFormat(ts[:0], time.RFC3339Nano))
	e.FieldStart("payload")
	v.EncodeJSON(e)
	e.ObjEnd()
	m.body = bytes.Clone(e.Bytes())
	return m, nil
}

// encodeEnvelope validates env.Payload's bytes against f's schema and
// encodes env: the path of payloads that are bytes already (an outbox
// row, a json.RawMessage).
func encodeEnvelope(f Fact, env Envelope) (outMessage, error) {
	if f.RoutingKey == "" {
		return outMessage{}, errNoRoutingKey
	}
	if f.Validate != nil {
		if err := f.Validate(env.Payload); err != nil {
			return outMessage{}, fmt.Errorf("payload does not match its schema: %w", err)
		}
	}
	body, err := json.Marshal(env)
	if err != nil {
		return outMessage{}, fmt.Errorf("encode envelope: %w", err)
	}
	return outMessage{id: env.ID, at: env.OccurredAt, body: body}, nil
}

// publishing returns the AMQP message of m as fact f.
func (m outMessage) publishing(f Fact) amqp.Publishing {
	version := f.Version
	if version == 0 {
		version = 1
	}
	return amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		Priority:     f.Priority,
		MessageId:    m.id,
		Timestamp:    m.at,
		Type:         f.RoutingKey,
		Headers:      amqp.Table{HeaderFactVersion: int64(version)},
		Body:         m.body,
	}
}
