package bench

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/bench/internal/orders"
)

// The orders of the benchmarks (bench/internal/orders, which
// cmd/streambench shares).
type (
	plainEnvelope = orders.PlainEnvelope
	plainOrder    = orders.PlainOrder
)

func order(i int) benchevents.OrderPlaced { return orders.Order(i) }

func plain(i int) plainOrder { return orders.Plain(i) }

// envelopeBody returns the body warren publishes for the i-th order, and
// its message id, built the way a raw amqp091-go publisher would.
func envelopeBody(i int) ([]byte, string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", err
	}
	body, err := json.Marshal(plainEnvelope{ID: id.String(), OccurredAt: time.Now().UTC(), Payload: plain(i)})
	return body, id.String(), err
}
