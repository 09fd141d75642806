package main

import (
	"context"
	"time"

	ev "github.com/warrenbus/warren/examples/checkout/checkoutevents"
	"github.com/warrenbus/warren/runtime/saga"
)

// checkout implements the saga: an order waits for payments until they
// cover its total, or until payWithin has passed, when it is cancelled and
// the customer told (order.cancelled). Payments may arrive before the
// order itself: either fact starts the instance.
type checkout struct {
	payWithin time.Duration
}

func (c checkout) HandleOrderPlaced(_ context.Context, in saga.Instance[ev.Checkout], f ev.OrderPlaced) (saga.Step[ev.Checkout], error) {
	st := in.State
	if in.New {
		st.Status = ev.CheckoutStatusAwaitingPayment
	}
	st.TotalCents = &f.TotalCents
	if st.PaidCents >= f.TotalCents {
		st.Status = ev.CheckoutStatusPaid
		return saga.Next(st).Complete(), nil
	}
	return saga.Next(st).Schedule("payment-due", c.payWithin), nil
}

func (c checkout) HandleOrderPaid(_ context.Context, in saga.Instance[ev.Checkout], f ev.OrderPaid) (saga.Step[ev.Checkout], error) {
	st := in.State
	if in.New {
		st.Status = ev.CheckoutStatusAwaitingPayment
	}
	st.PaidCents += f.AmountCents
	if st.TotalCents != nil && st.PaidCents >= *st.TotalCents {
		st.Status = ev.CheckoutStatusPaid
		return saga.Next(st).Complete(), nil // cancels payment-due
	}
	return saga.Next(st), nil
}

func (c checkout) TimeoutPaymentDue(_ context.Context, in saga.Instance[ev.Checkout]) (saga.Step[ev.Checkout], error) {
	st := in.State
	st.Status = ev.CheckoutStatusCancelled
	return saga.Next(st).
		Publish(ev.FactOrderCancelled, ev.OrderCancelled{OrderID: in.ID, Reason: ev.OrderCancelledReasonUnpaid}).
		Complete(), nil
}
