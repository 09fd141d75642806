package golden_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	importsversions "github.com/warrenbus/warren/golden/imports-versions/want"
	"github.com/warrenbus/warren/golden/imports-versions/want/importsversionstest"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// indexer reads every version of the imported facts as the newest:
// version 1 of catalogue.item.priced through its own upcast.
type indexer struct {
	mu      sync.Mutex
	created []importsversions.ItemCreated
	priced  []importsversions.ItemPriced
}

func (h *indexer) HandleItemCreated(_ context.Context, _ runtime.Delivery, f importsversions.ItemCreated) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.created = append(h.created, f)
	return nil
}

func (h *indexer) HandleItemPriced(_ context.Context, _ runtime.Delivery, f importsversions.ItemPriced) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.priced = append(h.priced, f)
	return nil
}

// UpcastItemPricedV1: version 1 prices were in euro cents.
func (h *indexer) UpcastItemPricedV1(v importsversions.ItemPricedV1) (importsversions.ItemPriced, error) {
	return importsversions.ItemPriced{Sku: v.Sku, Price: importsversions.ItemPricedPrice{Cents: v.Price, Currency: "EUR"}}, nil
}

// feed is pinned to version 1 of both imported facts.
type feed struct {
	mu      sync.Mutex
	created []importsversions.ItemCreatedV1
	priced  []importsversions.ItemPricedV1
}

func (h *feed) HandleItemCreatedV1(_ context.Context, _ runtime.Delivery, f importsversions.ItemCreatedV1) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.created = append(h.created, f)
	return nil
}

func (h *feed) HandleItemPricedV1(_ context.Context, _ runtime.Delivery, f importsversions.ItemPricedV1) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.priced = append(h.priced, f)
	return nil
}

// A consumer of imported facts in several versions reads them as the
// package generated from the importing directory says: search-indexer
// reads versions 1 and 2 of each as version 2 (one upcast generated, one
// its own), legacy-feed, pinned to version 1, reads version 1 and poisons
// a version-2 price it cannot read, naming both versions.
func TestImportedFactsOfSeveralVersionsArePinnedAndUpcast(t *testing.T) {
	importsversionstest.Run(t, func(t *testing.T, k *importsversionstest.Kit) {
		idx, old := &indexer{}, &feed{}
		k.StartSearchIndexer(idx)
		k.StartLegacyFeed(old)
		// The producer, before and after its upgrade.
		warrentest.Publish(k.Bus, importsversions.FactItemCreatedV1, importsversions.ItemCreatedV1{Sku: "KETTLE", Name: "kettle"})
		warrentest.Publish(k.Bus, importsversions.FactItemPricedV1, importsversions.ItemPricedV1{Sku: "KETTLE", Price: 2500})
		k.PublishItemCreated(importsversions.ItemCreated{Sku: "MUG", Name: "mug", Tags: []string{"kitchen"}})
		newPrice := k.PublishItemPriced(importsversions.ItemPriced{Sku: "MUG", Price: importsversions.ItemPricedPrice{Cents: 800, Currency: "USD"}})
		k.Idle()

		if len(idx.created) != 2 || idx.created[0].Sku != "KETTLE" || idx.created[1].Sku != "MUG" || !slices.Equal(idx.created[1].Tags, []string{"kitchen"}) {
			t.Errorf("search-indexer created: %+v; want both, version 1 upcast", idx.created)
		}
		if len(idx.priced) != 2 || idx.priced[0].Price.Cents != 2500 || idx.priced[0].Price.Currency != "EUR" || idx.priced[1].Price.Currency != "USD" {
			t.Errorf("search-indexer priced: %+v; want both, version 1 through its upcast", idx.priced)
		}
		if p := k.Poisoned(importsversionstest.SearchIndexer); len(p) != 0 {
			t.Errorf("search-indexer poisoned %+v", p)
		}
		// Version 2 of item.created only adds an optional property: the
		// pinned consumer's open version-1 schema reads both.
		if len(old.created) != 2 || len(old.priced) != 1 || old.priced[0].Price != 2500 {
			t.Errorf("legacy-feed: created %+v, priced %+v; want both created and the version-1 price", old.created, old.priced)
		}
		p := k.Poisoned(importsversionstest.LegacyFeed)
		if len(p) != 1 || p[0].MessageID != newPrice || p[0].Headers[runtime.HeaderVersionMismatch] != "fact version 2, consumer reads versions 1" {
			t.Errorf("legacy-feed poisoned %+v; want the version-2 price, naming both versions", p)
		}
	})
}
