package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
	"github.com/warrenbus/warren/examples/catalogue/catalogueevents/catalogueeventstest"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
)

// These tests run the service's handlers on the generated test kit: the
// catalogue topology on an in-process bus, in virtual time, so that the
// indexer's one-second retry and the ladders behind it take no time.

func updated(sku string, cents int64) cat.ItemUpdated {
	return cat.ItemUpdated{
		Item:      cat.Item{Sku: cat.SKU(sku), Name: "The Warren Handbook", Price: cat.Money{Amount: cents, Currency: cat.CurrencyEUR}},
		Changed:   []cat.ItemUpdatedChangedItem{cat.ItemUpdatedChangedItemPrice},
		UpdatedAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
	}
}

func placed(email string) cat.OrderPlaced {
	price := cat.Money{Amount: 1999, Currency: cat.CurrencyEUR}
	return cat.OrderPlaced{
		OrderID:  "7d0c7f68-1c1b-4bc4-9e2f-3c7a3c1f8e11",
		Customer: cat.OrderPlacedCustomer{CustomerID: "c-42", Email: email},
		Lines:    []cat.OrderLine{{Sku: "BOOK-123", Quantity: 1, UnitPrice: price}},
		Total:    price,
		Payment:  cat.OrderPlacedPayment{InvoicePayment: &cat.InvoicePayment{Method: cat.InvoicePaymentMethodInvoice, DueDays: cat.InvoicePaymentDueDays30}},
		PlacedAt: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
	}
}

// The indexer fails its first attempt, as a busy search cluster would: the
// fact waits out search-indexer.retry.1s and is indexed on attempt 2.
func TestIndexerRetriesABusySearchCluster(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		k.StartSearchIndexer(&searchIndexer{j: newJournal(io.Discard)})
		id := k.PublishItemUpdated(updated("BOOK-01", 1999))
		k.Idle()
		k.WantRetried(catalogueeventstest.SearchIndexer, 1)
		k.WantHandled(catalogueeventstest.SearchIndexer, 1)
		k.WantPoisoned(catalogueeventstest.SearchIndexer, 0)
		if h := k.Handled(catalogueeventstest.SearchIndexer); len(h) == 1 && (h[0].Attempt != 2 || h[0].MessageID != id) {
			t.Errorf("handled %s on attempt %d, want %s on attempt 2", h[0].MessageID, h[0].Attempt, id)
		}
	})
}

// A producer that breaks the item schema (no name) reaches the indexer's
// queue; the generated code refuses the fact before the handler sees it,
// and the poison queue says why.
func TestIndexerPoisonsAFactThatBreaksItsSchema(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		j := newJournal(io.Discard)
		k.StartSearchIndexer(&searchIndexer{j: j})
		bad, err := json.Marshal(updated("BOOK-02", 500))
		if err != nil {
			t.Fatal(err)
		}
		bad = []byte(strings.Replace(string(bad), `"name":"The Warren Handbook"`, `"name":""`, 1))
		id := k.PublishRaw(cat.ItemUpdatedRoutingKey, bad)
		k.Idle()
		if n := len(j.entries()); n != 0 {
			t.Errorf("the handler ran %d times on a fact its schema refuses", n)
		}
		p := k.Poisoned(catalogueeventstest.SearchIndexer)
		if len(p) != 1 || p[0].MessageID != id {
			t.Fatalf("poisoned %+v, want message %s", p, id)
		}
		if !strings.Contains(p[0].Failure, "/item/name") {
			t.Errorf("failure %q does not name /item/name", p[0].Failure)
		}
	})
}

// An address the mail server refuses is a permanent error: the order goes
// to order-mailer.poison on its first attempt, not round the ladder.
func TestMailerPoisonsAnUndeliverableOrder(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		k.StartOrderMailer(&orderMailer{j: newJournal(io.Discard)})
		k.PublishOrderPlaced(placed("ada@example.invalid"))
		k.Idle()
		k.WantPoisoned(catalogueeventstest.OrderMailer, 1)
		k.WantRetried(catalogueeventstest.OrderMailer, 0)
		p := k.Poisoned(catalogueeventstest.OrderMailer)[0]
		if p.Attempts != 1 || !strings.Contains(p.Failure, errUndeliverable.Error()) {
			t.Errorf("poisoned after %d attempts with %q", p.Attempts, p.Failure)
		}
	})
}

// The mailer runs with an idempotency guard, as the service does: an order
// published twice (a producer that never heard the confirm) is mailed
// once.
func TestMailerMailsAnOrderPublishedTwiceOnce(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		j := newJournal(io.Discard)
		k.StartOrderMailer(&orderMailer{j: j}, runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{})))
		id := k.PublishOrderPlaced(placed("ada@example.com"))
		k.Idle()
		k.PublishAgain(id)
		k.Idle()
		k.WantHandled(catalogueeventstest.OrderMailer, 1)
		k.WantDuplicates(catalogueeventstest.OrderMailer, 1)
		if n := len(j.entries()); n != 1 {
			t.Errorf("mailed %d times, want once", n)
		}
	})
}

// flakyHistory fails the first attempt at each price of BOOK-03, so that the
// ordered consumer must hold the item's later facts until it succeeds.
type flakyHistory struct {
	*priceHistory
	failed map[string]bool
}

func (f *flakyHistory) HandleItemUpdated(ctx context.Context, d runtime.Delivery, v cat.ItemUpdated) error {
	if v.Item.Sku == "BOOK-03" && !f.failed[d.MessageID] {
		f.failed[d.MessageID] = true
		return errors.New("history store busy")
	}
	return f.priceHistory.HandleItemUpdated(ctx, d, v)
}

// The price history is an ordered consumer: one item's prices are recorded
// in the order the catalogue published them, even when each first attempt
// fails and is retried, while another item's go on.
func TestPriceHistoryKeepsEachItemsOrder(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		h := &priceHistory{j: newJournal(io.Discard)}
		k.StartPriceHistory(&flakyHistory{priceHistory: h, failed: map[string]bool{}})
		for i, cents := range []int64{1000, 1200, 1500} {
			k.PublishItemUpdated(updated("BOOK-03", cents))
			k.PublishItemUpdated(updated("BOOK-04", int64(500+i)))
		}
		k.Idle()
		amounts := func(sku cat.SKU) []int64 {
			var out []int64
			for _, m := range h.history(sku) {
				out = append(out, m.Amount)
			}
			return out
		}
		if diff := cmp.Diff([]int64{1000, 1200, 1500}, amounts("BOOK-03")); diff != "" {
			t.Errorf("BOOK-03 prices (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{500, 501, 502}, amounts("BOOK-04")); diff != "" {
			t.Errorf("BOOK-04 prices (-want +got):\n%s", diff)
		}
		k.WantRetried(catalogueeventstest.PriceHistory, 3)
		k.WantHandled(catalogueeventstest.PriceHistory, 6)
	})
}

// The walkthrough's publisher publishes the same facts on every run: its
// golden file is testdata/walkthrough.golden.json (go test
// -warrentest.update rewrites it).
func TestWalkthroughPublishesTheSameFacts(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		pub, err := cat.NewPublisher(k.Conn())
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		if _, err := publishAll(k.Context(), pub, newJournal(io.Discard)); err != nil {
			t.Fatal(err)
		}
		k.Golden("walkthrough")
		if got := catalogueeventstest.Published[cat.ItemUpdated](k); len(got) != 1 || !slices.Contains(got[0].Changed, cat.ItemUpdatedChangedItemPrice) {
			t.Errorf("item updates published: %+v", got)
		}
	})
}

// The sales ledger is a batch consumer: orders published together reach
// it as one batch, and an order it cannot book goes to poison on its own
// while the rest of its batch is booked.
func TestSalesLedgerBooksABatchAndPoisonsWhatItCannotBook(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		j := newJournal(io.Discard)
		k.StartSalesLedger(&salesLedger{j: j}, runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{})))
		free := placed("ada@example.com")
		free.Total.Amount = 0
		k.PublishOrderPlaced(placed("ada@example.com"))
		k.PublishOrderPlaced(free)
		k.PublishOrderPlaced(placed("grace@example.com"))
		k.Idle()
		k.WantHandled(catalogueeventstest.SalesLedger, 2)
		k.WantPoisoned(catalogueeventstest.SalesLedger, 1)
		k.WantRetried(catalogueeventstest.SalesLedger, 0)
		for _, e := range j.entries() {
			if e.Err == nil && !strings.Contains(e.Text, "in a batch of 3") {
				t.Errorf("booked %q: want the three orders in one batch", e.Text)
			}
		}
		if p := k.Poisoned(catalogueeventstest.SalesLedger); len(p) == 1 && !strings.Contains(p[0].Failure, "nothing to book") {
			t.Errorf("poisoned with %q, want the handler's reason", p[0].Failure)
		}
	})
}
