package docgen_test

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The catalogue lists requests with their types and responder, each
// responder with its queue and methods, and draws the requests exchange.
func TestCatalogueCoversRequests(t *testing.T) {
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(`{"responders": {"pricing": {"requests": ["pricing.quote"], "concurrency": 4}}}`)},
		"quote.json": {Data: []byte(`{"x-request": "pricing.quote", "type": "object", "properties": {"sku": {"type": "string"}},
			"x-reply": {"type": "object", "properties": {"cents": {"type": "integer"}}}}`)},
	}
	page := catalogueOf(t, fsys)
	for _, want := range []string{
		"| requests | `app.requests` |",
		"| [`pricing.quote`](#request-pricing.quote) | [`PricingQuote`](#type-PricingQuote) | [`PricingQuoteReply`](#type-PricingQuoteReply) | [pricing](#responder-pricing) | `QuotePricing` |",
		"### `PricingQuoteReply`",
		"| `cents` | `*int64` |",
		"- Requests queue: `pricing.requests`, bound to `app.requests`",
		"- Prefetch 10, concurrency 4",
		`requests -->|"pricing.quote"| rq0`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}
