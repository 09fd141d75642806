package golden_test

import (
	"testing"

	versions "github.com/warrenbus/warren/golden/versions/want"
	"github.com/warrenbus/warren/golden/versions/want/versionstest"
	"github.com/warrenbus/warren/runtime"
)

// The generated kit publishes a fact of several versions as the generated
// Publisher does, in every version warren.json lists, as one message: the
// ledger (built for version 3) handles its version-3 copy once; the legacy
// mailer (built for version 1) reads neither, takes the oldest copy and
// poisons it naming both versions; Published returns the fact once, in the
// newest version.
func TestKitPublishesTheVersionsTheManifestLists(t *testing.T) {
	versionstest.Run(t, downcaster{}, func(t *testing.T, k *versionstest.Kit) {
		led, old := &ledger{}, &legacyMailer{}
		k.StartLedger(led)
		k.StartLegacyMailer(old)
		id := k.PublishOrderPlaced(versions.OrderPlaced{OrderID: "ORD-1", Amount: versions.OrderPlacedAmount{Cents: 300, Currency: "USD"}})
		k.PublishOrderShipped(versions.OrderShipped{OrderID: "ORD-1"})
		k.Idle()

		if got := led.placed.get(id); len(got) != 1 || got[0].Amount.Currency != "USD" {
			t.Errorf("ledger handled %+v; want the version-3 copy once", got)
		}
		if n := k.Conn().Counts(versionstest.Ledger).Get(runtime.Delivered); n != 2 {
			t.Errorf("ledger received %d messages; want 2, one per fact", n)
		}
		if p := k.Poisoned(versionstest.Ledger); len(p) != 0 {
			t.Errorf("ledger poisoned %+v", p)
		}
		p := k.Poisoned(versionstest.LegacyMailer)
		if len(p) != 1 || p[0].MessageID != id || p[0].Headers[runtime.HeaderVersionMismatch] != "fact version 2, consumer reads versions 1" {
			t.Errorf("legacy mailer poisoned %+v; want %s once, with both versions named", p, id)
		}
		if n := old.placed.len(); n != 0 {
			t.Errorf("legacy mailer handled %d facts it cannot read", n)
		}
		if ms := k.Published(); len(ms) != 2 {
			t.Errorf("published %d messages, want 2: two facts, each one message in two versions", len(ms))
		}
		if got := versionstest.Published[versions.OrderPlaced](k); len(got) != 1 || got[0].Amount.Currency != "USD" {
			t.Errorf("Published[OrderPlaced] = %+v; want the fact once, as version 3", got)
		}
		if got := versionstest.Published[versions.OrderShipped](k); len(got) != 1 || got[0].OrderID != "ORD-1" {
			t.Errorf("Published[OrderShipped] = %+v; want the fact once", got)
		}
	})
}
