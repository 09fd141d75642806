package main

import (
	"bytes"
	"slices"
	"testing"

	"github.com/warrenbus/warren/examples/orderlog/orderlogevents"
	"github.com/warrenbus/warren/examples/orderlog/orderlogevents/orderlogeventstest"
)

// The example's consumer on the test kit, without a broker: its first run
// reads the orders published before it ever ran (start "first"), stops,
// and after a restart reads from the offset it stored, only the fact
// written in between.
func TestOrderLogOnTheKit(t *testing.T) {
	orderlogeventstest.Run(t, func(t *testing.T, k *orderlogeventstest.Kit) {
		k.PublishOrderPlaced(orderlogevents.OrderPlaced{OrderID: "o-1", Total: 12.5})
		k.PublishOrderPlaced(orderlogevents.OrderPlaced{OrderID: "o-2", Total: 40})
		var out bytes.Buffer
		first, err := readUntil(k.Context(), k.Conn(), &out, "first run", 2)
		if err != nil {
			t.Fatal(err)
		}
		if off, ok := k.StoredOffset(orderlogeventstest.OrderHistory); !ok || off != 1 {
			t.Errorf("stored offset %d (found %t) after the first run, want 1", off, ok)
		}
		k.PublishOrderShipped(orderlogevents.OrderShipped{OrderID: "o-1"})
		second, err := readUntil(k.Context(), k.Conn(), &out, "after a restart", 1)
		if err != nil {
			t.Fatal(err)
		}
		k.Idle()
		if want := []string{"o-1 placed, total 12.50", "o-2 placed, total 40.00"}; !slices.Equal(first.handled(), want) {
			t.Errorf("first run handled %v, want %v", first.handled(), want)
		}
		if want := []string{"o-1 shipped"}; !slices.Equal(second.handled(), want) {
			t.Errorf("after a restart handled %v, want %v", second.handled(), want)
		}
		if want := []int64{0, 1}; !slices.Equal(first.offsets, want) {
			t.Errorf("first run read the offsets %v, want %v", first.offsets, want)
		}
		if off, ok := k.StoredOffset(orderlogeventstest.OrderHistory); !ok || off != 2 {
			t.Errorf("stored offset %d (found %t) after the restart, want 2", off, ok)
		}
	})
}
