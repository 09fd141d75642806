package golden_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	ordering "github.com/warrenbus/warren/golden/ordering/want"
	"github.com/warrenbus/warren/golden/ordering/want/orderingtest"
	requests "github.com/warrenbus/warren/golden/requests/want"
	"github.com/warrenbus/warren/golden/requests/want/requeststest"
	"github.com/warrenbus/warren/runtime"
)

// audit implements requests.AuditHandler: an order without an id is
// refused for good.
type audit struct{}

func (audit) HandleOrderPlaced(_ context.Context, _ runtime.Delivery, o requests.OrderPlaced) error {
	if o.OrderID == "" {
		return runtime.Permanent(errors.New("no order id"))
	}
	return nil
}

// TestKitDrivesTheGeneratedCode runs golden/requests through its generated
// kit: a consumer started by the kit handles what the kit publishes, a
// refused fact reaches the consumer's poison queue, Published decodes the
// facts, and the kit's requester reaches the responder it started.
func TestKitDrivesTheGeneratedCode(t *testing.T) {
	requeststest.Run(t, func(t *testing.T, k *requeststest.Kit) {
		k.StartAudit(audit{})
		k.StartPricingResponder(pricing{ids: make(chan string, 1)})
		k.PublishOrderPlaced(requests.OrderPlaced{OrderID: "A-1"})
		k.PublishOrderPlaced(requests.OrderPlaced{})
		k.Idle()
		if n := len(k.Handled(requeststest.Audit)); n != 1 {
			t.Errorf("audit handled %d facts, want 1", n)
		}
		if n := len(k.Poisoned(requeststest.Audit)); n != 1 {
			t.Errorf("%d facts reached audit's poison queue, want 1", n)
		}
		if got := requeststest.Published[requests.OrderPlaced](k); len(got) != 2 || got[0].OrderID != "A-1" {
			t.Errorf("Published[OrderPlaced] = %+v", got)
		}
		rep, err := k.Requester().QuotePricing(k.Context(), requests.PricingQuote{Sku: "BOX-1", Quantity: 4})
		if err != nil || rep.Total.Amount != 1000 {
			t.Errorf("QuotePricing = %+v, %v", rep, err)
		}
		if n := len(k.Calls(requeststest.PricingResponder)); n != 1 {
			t.Errorf("pricing answered %d requests, want 1", n)
		}
	})
}

// fulfilment implements ordering.FulfilmentHandler, recording the order
// ids in the order it sees them.
type fulfilment struct {
	mu   sync.Mutex
	seen []string
}

func (f *fulfilment) record(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, id)
	return nil
}

func (f *fulfilment) HandleOrderPlaced(_ context.Context, _ runtime.Delivery, o ordering.OrderPlaced) error {
	return f.record("placed " + o.OrderID)
}

func (f *fulfilment) HandleOrderShipped(_ context.Context, _ runtime.Delivery, o ordering.OrderShipped) error {
	return f.record("shipped")
}

func (f *fulfilment) HandlePaymentReceived(_ context.Context, _ runtime.Delivery, p ordering.PaymentReceived) error {
	return f.record("paid " + p.Order.ID)
}

// TestKitStartsAnOrderedConsumer: the kit's Start method of an ordered
// consumer runs it over its shards, in the order of publishing.
func TestKitStartsAnOrderedConsumer(t *testing.T) {
	orderingtest.Run(t, func(t *testing.T, k *orderingtest.Kit) {
		f := &fulfilment{}
		k.StartFulfilment(f)
		k.PublishOrderPlaced(ordering.OrderPlaced{OrderID: "A-1", Total: 10})
		k.PublishPaymentReceived(ordering.PaymentReceived{Order: ordering.PaymentReceivedOrder{ID: "A-1"}})
		k.Idle()
		if len(f.seen) != 2 || f.seen[0] != "placed A-1" || f.seen[1] != "paid A-1" {
			t.Errorf("fulfilment saw %q", f.seen)
		}
	})
}
