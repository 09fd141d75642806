package streamstest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	streams "github.com/warrenbus/warren/golden/streams/want"
	"github.com/warrenbus/warren/golden/streams/want/streamstest"
	"github.com/warrenbus/warren/runtime"
)

// history records the facts consumer order-history handled, and fails
// every OrderPlaced of order "o-2".
type history struct {
	mu   sync.Mutex
	seen []string
}

func (h *history) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, s)
}

// handled returns what was handled so far.
func (h *history) handled() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

func (h *history) HandleOrderPlaced(_ context.Context, _ runtime.Delivery, f streams.OrderPlaced) error {
	if f.OrderID == "o-2" {
		return errors.New("order o-2 is unknown to the history")
	}
	h.add(f.OrderID + " placed")
	return nil
}

func (h *history) HandleOrderShipped(_ context.Context, _ runtime.Delivery, f streams.OrderShipped) error {
	h.add(f.OrderID + " shipped")
	return nil
}

type audit struct{ history }

type stock struct{ history }

func (s *stock) HandleStockCounted(_ context.Context, _ runtime.Delivery, f streams.StockCounted) error {
	s.add("counted")
	return nil
}

// A stream consumer on the generated kit: order-history (start "first")
// reads the facts published before it started, shipping-audit (start at a
// time still to come on the kit's clock) only those after; order-history's
// failing fact is retried along its ladder and poisoned while it reads on,
// and neither the other reader of the stream nor stock, which reads the
// stream its facts are written into directly, sees anything of it.
func TestStreamConsumersOnTheKit(t *testing.T) {
	streamstest.Run(t, func(t *testing.T, k *streamstest.Kit) {
		k.PublishOrderPlaced(streams.OrderPlaced{OrderID: "o-1", Total: 12.5})
		k.PublishOrderShipped(streams.OrderShipped{OrderID: "o-1"})
		hist, aud, st, proj := &history{}, &audit{}, &stock{}, &history{}
		k.StartOrderHistory(hist)
		k.StartOrderProjection(proj)
		k.StartShippingAudit(aud)
		k.StartStock(st)
		k.Idle()
		if want := []string{"o-1 placed", "o-1 shipped"}; !slices.Equal(hist.handled(), want) {
			t.Errorf("order-history read %v from the first, want %v", hist.handled(), want)
		}
		if len(aud.handled()) > 0 {
			t.Errorf("shipping-audit read %v, written before its start", aud.handled())
		}

		k.PublishOrderPlaced(streams.OrderPlaced{OrderID: "o-2", Total: 40})
		k.PublishOrderShipped(streams.OrderShipped{OrderID: "o-2"})
		k.PublishStockCounted(streams.StockCounted{Warehouse: 1, Count: 7})
		k.Idle()

		if want := []string{"o-1 placed", "o-1 shipped", "o-2 shipped"}; !slices.Equal(hist.handled(), want) {
			t.Errorf("order-history handled %v, want %v", hist.handled(), want)
		}
		k.WantPoisoned(streamstest.OrderHistory, 1)
		p := k.Poisoned(streamstest.OrderHistory)[0]
		failed := k.Failed(streamstest.OrderHistory)
		if p.Failure != "order o-2 is unknown to the history" || p.Attempts != len(failed) || len(failed) < 2 {
			t.Errorf("poisoned %q after %d attempts, with %d failed calls; want its failure after every attempt of its ladder", p.Failure, p.Attempts, len(failed))
		}
		// The consumer group reads the super stream's partitions: each
		// order's facts in its partition, in order.
		got := proj.handled()
		slices.Sort(got)
		if want := []string{"o-1 placed", "o-1 shipped", "o-2 shipped"}; !slices.Equal(got, want) {
			t.Errorf("order-projection handled %v, want %v", got, want)
		}
		k.WantPoisoned(streamstest.OrderProjection, 1)
		var settled int64
		for _, off := range k.PartitionOffsets(streamstest.OrderProjection) {
			settled += off + 1
		}
		if settled != 4 {
			t.Errorf("order-projection's stored offsets cover %d facts, want the 4 on its partitions", settled)
		}
		if want := []string{"o-2 shipped"}; !slices.Equal(aud.handled(), want) {
			t.Errorf("shipping-audit handled %v, want %v", aud.handled(), want)
		}
		if want := []string{"counted"}; !slices.Equal(st.handled(), want) {
			t.Errorf("stock handled %v, want %v", st.handled(), want)
		}
		for _, c := range []string{streamstest.ShippingAudit, streamstest.Stock} {
			k.WantPoisoned(c, 0)
			if f := k.Failed(c); len(f) > 0 {
				t.Errorf("%s failed %d calls", c, len(f))
			}
		}
		// The stream holds four order facts (offsets 0 to 3), every one
		// settled by both readers: o-2's placing once its copy went to the
		// ladder, and for shipping-audit, the OrderPlaced it skips.
		for _, c := range []string{streamstest.OrderHistory, streamstest.ShippingAudit} {
			if off, ok := k.StoredOffset(c); !ok || off != 3 {
				t.Errorf("%s stored offset %d (found %t), want 3", c, off, ok)
			}
		}
	})
}
