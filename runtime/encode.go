package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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
	// payload is the envelope's payload within body (or the bytes it was
	// copied from), where a fact's ordering key is read when it could
	// not be read from the Go value.
	payload []byte
	// key is the ordering key read from the Go value (Fact.KeyOf), when
	// keyed.
	key   string
	keyed bool
}

// typedPayload is a generated fact type: it validates itself, and the
// codec writes it ([codec.Encodes]: its EncodeJSON or its CodecFields).
type typedPayload interface {
	codec.Validator
}

// asTyped returns payload as a generated fact type, if it is one.
func asTyped(payload any) (typedPayload, bool) {
	v, ok := payload.(typedPayload)
	return v, ok && codec.Encodes(payload)
}

// schemaError is a payload that does not match its schema, found before
// anything was sent.
type schemaError struct{ err error }

func (e *schemaError) Error() string { return "payload does not match its schema: " + e.err.Error() }
func (e *schemaError) Unwrap() error { return e.err }

// encodeFact validates payload and encodes it in a new envelope for f.
func encodeFact(f Fact, payload any) (outMessage, error) {
	if f.RoutingKey == "" {
		return outMessage{}, errNoRoutingKey
	}
	if v, ok := addressed(payload); ok {
		payload = v // so that KeyOf finds the pointer it asserts
	}
	m, err := encodePayload(payload, f.Validate)
	if err == nil && f.OrderingKey != "" && f.KeyOf != nil {
		m.key, m.keyed = f.KeyOf(payload)
	}
	return m, err
}

// encodePayload validates payload and encodes it in a new envelope. A
// generated fact type is validated as a value and encoded once, the
// envelope written around it; nothing re-reads the bytes it wrote. Any
// other payload goes through [NewEnvelope], and validate checks its bytes.
// A payload that does not match its schema is a *schemaError.
func encodePayload(payload any, validate func([]byte) error) (outMessage, error) {
	v, ok := asTyped(payload)
	if !ok {
		v, ok = addressed(payload)
	}
	if !ok {
		env, err := NewEnvelope(payload)
		if err != nil {
			return outMessage{}, err
		}
		return encodeValidated(env, validate)
	}
	if err := v.Validate(); err != nil {
		return outMessage{}, &schemaError{err}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return outMessage{}, fmt.Errorf("make message id: %w", err)
	}
	m := outMessage{id: id.String(), at: time.Now().UTC()}
	var start, end int
	m.body = writeEnvelope(m.id, m.at, func(e *jx.Encoder) {
		start = len(e.Bytes())
		codec.EncodeValue(e, v)
		end = len(e.Bytes())
	})
	m.payload = m.body[start:end]
	return m, nil
}

// addressed is a pointer to a copy of payload when payload is a value of
// a generated type whose methods take a pointer (a struct written as a
// codec.Shape): the generated code passes &v, a caller may pass v.
func addressed(payload any) (typedPayload, bool) {
	if _, ok := asTyped(payload); ok {
		return nil, false
	}
	t := reflect.TypeOf(payload)
	if t == nil || t.Kind() != reflect.Struct {
		return nil, false
	}
	if p := reflect.PointerTo(t); !p.Implements(typedPayloadType) || !p.Implements(codecStructType) && !p.Implements(codecEncoderType) {
		return nil, false
	}
	p := reflect.New(t)
	p.Elem().Set(reflect.ValueOf(payload))
	return p.Interface().(typedPayload), true
}

var (
	typedPayloadType = reflect.TypeFor[typedPayload]()
	codecStructType  = reflect.TypeFor[codec.Struct]()
	codecEncoderType = reflect.TypeFor[codec.Encoder]()
)

// writeEnvelope writes the envelope {"id", "occurred_at", "payload"} with
// payload written by writePayload, into a new slice.
func writeEnvelope(id string, at time.Time, writePayload func(*jx.Encoder)) []byte {
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	e.ObjStart()
	e.FieldStart("id")
	e.Str(id)
	e.FieldStart("occurred_at")
	codec.WriteTime(e, at)
	e.FieldStart("payload")
	writePayload(e)
	e.ObjEnd()
	return bytes.Clone(e.Bytes())
}

// encodeEnvelope validates env.Payload's bytes against f's schema and
// encodes env: the path of payloads that are bytes already (an outbox
// row, a json.RawMessage).
func encodeEnvelope(f Fact, env Envelope) (outMessage, error) {
	if f.RoutingKey == "" {
		return outMessage{}, errNoRoutingKey
	}
	return encodeValidated(env, f.Validate)
}

func encodeValidated(env Envelope, validate func([]byte) error) (outMessage, error) {
	if validate != nil {
		if err := validate(env.Payload); err != nil {
			return outMessage{}, &schemaError{err}
		}
	}
	body, err := json.Marshal(env)
	if err != nil {
		return outMessage{}, fmt.Errorf("encode envelope: %w", err)
	}
	return outMessage{id: env.ID, at: env.OccurredAt, body: body, payload: env.Payload}, nil
}

// encodeValue writes v, a generated type, as JSON.
func encodeValue(v any) []byte {
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	codec.EncodeValue(e, v)
	return bytes.Clone(e.Bytes())
}

// publishing returns the AMQP message of m as fact f.
func (m outMessage) publishing(f Fact) amqp.Publishing {
	version := f.Version
	if version == 0 {
		version = 1
	}
	msg := amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		Priority:     f.Priority,
		MessageId:    m.id,
		Timestamp:    m.at,
		Type:         f.RoutingKey,
		Headers:      amqp.Table{HeaderFactVersion: int64(version)},
		Body:         m.body,
	}
	if f.versions != "" {
		msg.Headers[HeaderFactVersions] = f.versions
	}
	for _, c := range f.copies {
		msg.Headers[copyHeader(c.version)] = string(c.body)
	}
	return msg
}
