package golden_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	consumers "github.com/warrenbus/warren/golden/consumers/want"
	"github.com/warrenbus/warren/golden/consumers/want/consumerstest"
	ordering "github.com/warrenbus/warren/golden/ordering/want"
	"github.com/warrenbus/warren/golden/ordering/want/orderingtest"
	"github.com/warrenbus/warren/runtime"
)

// loader implements consumers.WarehouseLoaderHandler: an order without an
// id is refused for good, the others are done.
type loader struct {
	mu    sync.Mutex
	sizes []int
}

func (l *loader) HandleBatch(_ context.Context, b consumers.WarehouseLoaderBatch) (runtime.Outcomes, error) {
	l.mu.Lock()
	l.sizes = append(l.sizes, len(b.OrderPlaced)+len(b.CatalogueImportCompleted))
	l.mu.Unlock()
	out := runtime.Outcomes{}
	for _, it := range b.OrderPlaced {
		if it.Fact.OrderID == nil {
			out.Fail(it.Delivery.MessageID, runtime.Permanent(errors.New("no order id")))
			continue
		}
		out.Done(it.Delivery.MessageID)
	}
	for _, it := range b.CatalogueImportCompleted {
		out.Done(it.Delivery.MessageID)
	}
	return out, nil
}

// TestKitDrivesABatchConsumer runs the generated batch consumer through
// the kit: each fact of a batch is settled by its own outcome, and the kit
// sees every call.
func TestKitDrivesABatchConsumer(t *testing.T) {
	consumerstest.Run(t, func(t *testing.T, k *consumerstest.Kit) {
		l := &loader{}
		k.StartWarehouseLoader(l)
		id := "A-1"
		k.PublishOrderPlaced(consumers.OrderPlaced{OrderID: &id})
		k.PublishOrderPlaced(consumers.OrderPlaced{})
		k.PublishOrderPlaced(consumers.OrderPlaced{OrderID: &id})
		k.Idle()
		if n := len(k.Handled(consumerstest.WarehouseLoader)); n != 2 {
			t.Errorf("warehouse-loader handled %d facts, want 2", n)
		}
		if n := len(k.Poisoned(consumerstest.WarehouseLoader)); n != 1 {
			t.Errorf("%d facts reached warehouse-loader's poison queue, want 1", n)
		}
		total := 0
		for _, n := range l.sizes {
			total += n
		}
		if total != 3 {
			t.Errorf("batches %v hold %d facts, want 3", l.sizes, total)
		}
	})
}

// orderLedger implements ordering.LedgerHandler: it records each batch's order
// ids and fails the first shipping of order A-1 once.
type orderLedger struct {
	mu      sync.Mutex
	batches [][]string // each batch's facts, as kind:order
	failed  bool
}

func (l *orderLedger) HandleBatch(_ context.Context, b ordering.LedgerBatch) (runtime.Outcomes, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := runtime.Outcomes{}
	var facts []string
	for _, it := range b.OrderPlaced {
		facts = append(facts, "placed:"+it.Fact.OrderID)
		out.Done(it.Delivery.MessageID)
	}
	for _, it := range b.OrderShipped {
		facts = append(facts, "shipped:"+it.Fact.OrderID)
		if it.Fact.OrderID == "A-1" && !l.failed {
			l.failed = true
			out.Fail(it.Delivery.MessageID, errors.New("carrier unreachable"))
			continue
		}
		out.Done(it.Delivery.MessageID)
	}
	l.batches = append(l.batches, facts)
	return out, nil
}

// TestKitDrivesAnOrderedBatchConsumer runs the generated ordered batch
// consumer through the kit: a batch holds one fact per order, and an
// order's shipping that fails is retried in place before the order's next
// fact reaches a batch.
func TestKitDrivesAnOrderedBatchConsumer(t *testing.T) {
	orderingtest.Run(t, func(t *testing.T, k *orderingtest.Kit) {
		l := &orderLedger{}
		k.StartLedger(l)
		k.PublishOrderPlaced(ordering.OrderPlaced{OrderID: "A-1"})
		k.PublishOrderPlaced(ordering.OrderPlaced{OrderID: "B-2"})
		k.PublishOrderShipped(ordering.OrderShipped{OrderID: "A-1"})
		k.PublishOrderShipped(ordering.OrderShipped{OrderID: "B-2"})
		k.PublishOrderPlaced(ordering.OrderPlaced{OrderID: "A-1"})
		k.Idle()
		if n := len(k.Handled(orderingtest.Ledger)); n != 5 {
			t.Errorf("ledger handled %d facts, want 5", n)
		}
		if n := len(k.Retried(orderingtest.Ledger)); n != 1 {
			t.Errorf("ledger retried %d facts, want 1", n)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		var a []string
		for _, batch := range l.batches {
			orders := map[string]bool{}
			for _, f := range batch {
				order := f[strings.Index(f, ":")+1:]
				if orders[order] {
					t.Errorf("batch %v holds two facts of order %s", batch, order)
				}
				orders[order] = true
				if order == "A-1" {
					a = append(a, f)
				}
			}
		}
		if want := []string{"placed:A-1", "shipped:A-1", "shipped:A-1", "placed:A-1"}; !slices.Equal(a, want) {
			t.Errorf("order A-1's facts reached batches as %v, want %v", a, want)
		}
	})
}
