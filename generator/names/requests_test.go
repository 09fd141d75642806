package names

import "testing"

func TestRequestMethod(t *testing.T) {
	for key, want := range map[string]string{
		"pricing.quote":            "QuotePricing",
		"stock.reserve-batch":      "ReserveBatchStock",
		"ping":                     "Ping",
		"catalogue.item.price_get": "PriceGetCatalogueItem",
	} {
		if got := RequestMethod(key); got != want {
			t.Errorf("RequestMethod(%q) = %q, want %q", key, got, want)
		}
	}
}
