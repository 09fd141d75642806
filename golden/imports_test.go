package golden_test

import (
	"encoding/json"
	"slices"
	"testing"

	imports "github.com/warrenbus/warren/golden/imports/want"
)

// The consumer-only package of golden/imports generates the imported fact
// types itself: they validate against the imported schemas (the $ref to
// the producer's shared file included) and round-trip.
func TestImportedFactTypesValidateAndRoundTrip(t *testing.T) {
	ok := imports.ItemCreated{Sku: "AB-12", Name: "kettle", Tags: []string{"kitchen"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid item: %v", err)
	}
	if err := (&imports.ItemCreated{Sku: "ab", Name: "kettle"}).Validate(); err == nil {
		t.Error("a sku that breaks the imported shared schema validated")
	}
	data, err := json.Marshal(ok)
	if err != nil {
		t.Fatal(err)
	}
	var back imports.ItemCreated
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Sku != ok.Sku || back.Name != ok.Name || !slices.Equal(back.Tags, ok.Tags) {
		t.Errorf("round trip: %+v, want %+v", back, ok)
	}
}

// Its topology is the consumer's part only, on the producer's exchanges.
func TestImportedTopologyIsTheConsumersPart(t *testing.T) {
	var exchanges, queues []string
	for _, e := range imports.Topology.Exchanges {
		exchanges = append(exchanges, e.Name)
	}
	for _, q := range imports.Topology.Queues {
		queues = append(queues, q.Name)
	}
	if want := []string{"catalogue.events", "catalogue.retry", "catalogue.dead"}; !slices.Equal(exchanges, want) {
		t.Errorf("exchanges %q, want the producer's %q", exchanges, want)
	}
	slices.Sort(queues)
	if want := []string{"search-indexer", "search-indexer.poison", "search-indexer.retry.20ms", "search-indexer.retry.40ms"}; !slices.Equal(queues, want) {
		t.Errorf("queues %q, want the consumer's %q", queues, want)
	}
	for _, b := range imports.Topology.Bindings {
		if b.Exchange == "catalogue.events" && b.Key != imports.ItemCreatedRoutingKey {
			t.Errorf("binding %+v: the consumer binds catalogue.item.created only", b)
		}
	}
}
