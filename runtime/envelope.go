package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-faster/jx"
	"github.com/google/uuid"
)

// Envelope is the JSON body of every message:
// {"id": "...", "occurred_at": "<RFC 3339>", "payload": {...}}.
// The id is made once by the producer and never changes across retries,
// redeliveries, replays or outbox relays; it is the idempotency key.
type Envelope struct {
	ID         string          `json:"id"`
	OccurredAt time.Time       `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload"`
}

// NewEnvelope wraps payload (any value encoding/json accepts, or
// json.RawMessage as is) in an envelope with a fresh time-ordered UUIDv7 id
// and the current time. An outbox writes the result in the business
// transaction and later hands it to [Publisher.PublishEnvelope].
func NewEnvelope(payload any) (Envelope, error) {
	raw, ok := payload.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			return Envelope{}, fmt.Errorf("encode payload: %w", err)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Envelope{}, fmt.Errorf("make message id: %w", err)
	}
	return Envelope{ID: id.String(), OccurredAt: time.Now().UTC(), Payload: raw}, nil
}

// decodeEnvelope parses a message body. Its errors are permanent: the same
// body fails the same way on every attempt. It reads the body in one pass
// ([decodeEnvelopeOnce]), taking the payload's bytes as they stand (a
// slice of body, checked to be one JSON value): encoding/json would check
// the whole body, copy the payload and then be run over it again to decode
// it, twice the work for the same result.
func decodeEnvelope(body []byte) (Envelope, error) {
	head, payload, err := decodeEnvelopeOnce(body, rawPayload)
	if pe := (*payloadError)(nil); err != nil && errors.As(err, &pe) {
		// Only its JSON can be wrong: the envelope's, then.
		err = Permanent(fmt.Errorf("body is not a JSON envelope: %w", pe.err))
	}
	return Envelope{ID: head.ID, OccurredAt: head.OccurredAt, Payload: payload}, err
}

// rawPayload reads the payload's value as it stands in the body.
func rawPayload(d *jx.Decoder) (json.RawMessage, error) {
	raw, err := d.Raw()
	return json.RawMessage(raw), err
}

var errNoRoutingKey = errors.New("fact has no routing key")
