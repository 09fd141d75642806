package lint

import "testing"

func TestRequestVerbIsPast(t *testing.T) {
	for key, want := range map[string]bool{
		"pricing.quote":        false,
		"stock.check":          false,
		"stock.reserve-batch":  false,
		"stock.reserved":       true,
		"payment.sent":         true,
		"user.signed_up":       true,
		"invoice.sent.v2":      true,
		"report.build":         false,
		"ledger.entry.compute": false,
	} {
		if verb, got := requestVerbIsPast(key); got != want {
			t.Errorf("requestVerbIsPast(%q) = %q, %v; want %v", key, verb, got, want)
		}
	}
}
