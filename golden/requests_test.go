package golden_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	requests "github.com/warrenbus/warren/golden/requests/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
)

// pricing implements the generated PricingResponder.
type pricing struct{ ids chan string }

func (p pricing) QuotePricing(_ context.Context, d runtime.Delivery, req requests.PricingQuote) (requests.PricingQuoteReply, error) {
	p.ids <- d.MessageID
	switch req.Sku {
	case "DISCONTINUED":
		return requests.PricingQuoteReply{}, runtime.Permanent(errors.New("sku DISCONTINUED is no longer sold"))
	case "BAD-CURRENCY":
		// Breaks the reply's schema (currency is three capitals).
		return requests.PricingQuoteReply{Total: requests.Money{Amount: 1, Currency: "euro"}, ValidUntil: time.Now()}, nil
	}
	return requests.PricingQuoteReply{
		Total:      requests.Money{Amount: 250 * req.Quantity, Currency: "EUR"},
		ValidUntil: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}, nil
}

// TestRequestsWiring drives the generated request code of golden/requests
// on the real broker: the topology with the requests exchange and the
// responder queues, the typed Requester, and a responder built by its
// generated constructor.
func TestRequestsWiring(t *testing.T) {
	url := testenv.VHost(t, "warren-golden-requests")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs:     []string{url},
		Topology: &requests.Topology,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	impl := pricing{ids: make(chan string, 10)}
	responder, err := requests.NewPricingResponder(conn, impl)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- responder.Run(rctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("responder Run: %v", err)
		}
	})
	r, err := requests.NewRequester(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })

	t.Run("typed round trip", func(t *testing.T) {
		rep, err := r.QuotePricing(ctx, requests.PricingQuote{Sku: "BOX-1", Quantity: 4})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Total.Amount != 1000 || rep.Total.Currency != "EUR" || !rep.ValidUntil.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("reply = %+v", rep)
		}
		if id := <-impl.ids; id == "" {
			t.Error("the responder saw no envelope id")
		}
	})

	t.Run("an invalid request never leaves", func(t *testing.T) {
		_, err := r.QuotePricing(ctx, requests.PricingQuote{Sku: "", Quantity: 1})
		if err == nil || !strings.Contains(err.Error(), "request does not match its schema") || !strings.Contains(err.Error(), "sku") {
			t.Fatalf("err = %v, want a schema error naming sku", err)
		}
		if c := responder.Counts(); c.Answered != 1 || c.Failed != 0 {
			t.Errorf("responder counts = %+v, want only the first request", c)
		}
	})

	t.Run("an invalid reply is an error to the caller", func(t *testing.T) {
		_, err := r.QuotePricing(ctx, requests.PricingQuote{Sku: "BAD-CURRENCY", Quantity: 1})
		var re *runtime.ReplyError
		if !errors.As(err, &re) || !re.Permanent || !strings.Contains(re.Message, "currency") {
			t.Fatalf("err = %v, want a permanent *runtime.ReplyError naming currency", err)
		}
		<-impl.ids
	})

	t.Run("a permanent error travels back typed", func(t *testing.T) {
		_, err := r.QuotePricing(ctx, requests.PricingQuote{Sku: "DISCONTINUED", Quantity: 1})
		var re *runtime.ReplyError
		if !errors.As(err, &re) || !re.Permanent || !runtime.IsPermanent(err) || re.Message != "sku DISCONTINUED is no longer sold" {
			t.Fatalf("err = %v, want a permanent *runtime.ReplyError", err)
		}
		<-impl.ids
	})

	t.Run("a request no responder queue receives fails at once", func(t *testing.T) {
		// The stock responder's queue exists; unbind it to leave its
		// request with nowhere to go.
		ch, err := conn.OpenChannel(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if err := ch.QueueUnbind("stock.requests", requests.StockQueryRequestKey, requests.RequestsExchange, nil); err != nil {
			t.Fatal(err)
		}
		_, err = r.CheckStock(context.Background(), requests.StockQuery{Sku: "BOX-1"})
		if !errors.Is(err, runtime.ErrNoResponder) {
			t.Fatalf("err = %v, want runtime.ErrNoResponder", err)
		}
	})
}
