package golden_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	consumers "github.com/warrenbus/warren/golden/consumers/want"
	"github.com/warrenbus/warren/golden/consumers/want/consumerstest"
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
