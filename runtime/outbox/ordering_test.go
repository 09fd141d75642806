package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// Facts with an ordering key are numbered per key in the business
// transactions that write them, and relayed with that number and one
// source for the table: three transactions writing key k give it 1, 2, 3,
// while key j counts on its own.
func TestOutboxNumbersFactsPerOrderingKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		f := runtime.Fact{RoutingKey: "order.placed", Version: 1, OrderingKey: "/order_id"}
		s.write(f, map[string]string{"order_id": "k"})
		s.write(f, map[string]string{"order_id": "j"}, map[string]string{"order_id": "k"})
		s.write(f, map[string]string{"order_id": "k"})
		s.write(runtime.Fact{RoutingKey: "order.noted"}, map[string]string{"note": "no key"})
		rec := b.receive()
		r := s.relay(b.pub, outbox.RelayConfig{Facts: []runtime.Fact{f}})
		if _, err := r.RelayOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range rec.wait(5) {
			got = append(got, fmt.Sprintf("%v#%v", d.Headers[runtime.HeaderOrderingKey], d.Headers[runtime.HeaderSequence]))
			if src, ok := d.Headers[runtime.HeaderSequenceSource]; ok && src != "outbox:"+s.ob.Table() {
				t.Errorf("source %v, want outbox:%s", src, s.ob.Table())
			}
		}
		if want := "k#1 j#1 k#2 k#3 <nil>#<nil>"; strings.Join(got, " ") != want {
			t.Errorf("relayed %s, want %s", strings.Join(got, " "), want)
		}
	})
}

// A payload without its fact's ordering key is refused by Write.
func TestOutboxWriteNeedsTheOrderingKey(t *testing.T) {
	s := newSQLiteStore(t)
	ctx := context.Background()
	tx := s.begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep
	_, err := s.ob.Write(ctx, execer(tx), runtime.Fact{RoutingKey: "order.placed", OrderingKey: "/order_id"}, map[string]string{"other": "x"})
	if err == nil || !strings.Contains(err.Error(), "ordering key /order_id: missing from the payload") {
		t.Errorf("Write without the key: %v", err)
	}
}
