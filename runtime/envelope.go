package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
// body fails the same way on every attempt.
func decodeEnvelope(body []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return env, Permanent(fmt.Errorf("body is not a JSON envelope: %w", err))
	}
	var missing []string
	if env.ID == "" {
		missing = append(missing, "id")
	}
	if env.OccurredAt.IsZero() {
		missing = append(missing, "occurred_at")
	}
	if len(env.Payload) == 0 || bytes.Equal(env.Payload, []byte("null")) {
		missing = append(missing, "payload")
	}
	if missing != nil {
		return env, Permanent(fmt.Errorf("envelope incomplete: missing %q", missing))
	}
	return env, nil
}

var errNoRoutingKey = errors.New("fact has no routing key")
