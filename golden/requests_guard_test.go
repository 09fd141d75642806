package golden_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	requests "github.com/warrenbus/warren/golden/requests/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
)

// A request carries its envelope id, so the idempotency guard works on a
// responder: the same request sent twice (as a redelivery would bring it)
// is worked on once; the second answer is an error reply saying so, which
// the caller that got the first answer drops.
func TestRequestsGuardWorksOnResponders(t *testing.T) {
	url := testenv.VHost(t, "warren-golden-requests-guard")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs: []string{url}, Topology: &requests.Topology,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	impl := pricing{ids: make(chan string, 10)}
	responder, err := requests.NewPricingResponder(conn, impl, runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{})))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- responder.Run(rctx) }()
	t.Cleanup(func() { stop(); <-done })

	// A raw requester sends one envelope twice, on the documented wire.
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	replies, err := ch.Consume(runtime.DirectReplyTo, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, err := runtime.NewEnvelope(requests.PricingQuote{Sku: "BOX-1", Quantity: 1})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(env)
	for range 2 {
		if err := ch.PublishWithContext(ctx, requests.RequestsExchange, requests.PricingQuoteRequestKey, true, false, amqp.Publishing{
			ContentType: "application/json", MessageId: env.ID, CorrelationId: env.ID,
			ReplyTo: runtime.DirectReplyTo, Type: requests.PricingQuoteRequestKey, Body: body,
		}); err != nil {
			t.Fatal(err)
		}
	}
	var answers, duplicates int
	for range 2 {
		d := <-replies
		var reply struct {
			ID      string          `json:"id"`
			Payload json.RawMessage `json:"payload"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(d.Body, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.ID != env.ID || d.CorrelationId != env.ID {
			t.Errorf("reply id %q, correlation id %q; want the request's %q", reply.ID, d.CorrelationId, env.ID)
		}
		switch {
		case reply.Error != nil && strings.Contains(reply.Error.Message, "answered already"):
			duplicates++
		case reply.Payload != nil:
			answers++
		}
	}
	if answers != 1 || duplicates != 1 {
		t.Errorf("%d answers and %d duplicate replies, want one of each", answers, duplicates)
	}
	if id := <-impl.ids; id != env.ID {
		t.Errorf("handler saw id %q, want %q", id, env.ID)
	}
	if c := responder.Counts(); c.Answered != 1 || c.Duplicates != 1 {
		t.Errorf("responder counts = %+v, want one answer and one duplicate", c)
	}
}
