package warrentest_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// Version 1 of item.priced called the price "cents"; version 2 "price".
type pricedV1 struct {
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

type pricedV2 struct {
	SKU   string `json:"sku"`
	Price int    `json:"price"`
}

// requires returns a validator that refuses a payload without key: each
// version's schema.
func requires(key string) func([]byte) error {
	return func(payload []byte) error {
		var v map[string]any
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		if _, ok := v[key]; !ok {
			return errors.New("/" + key + ": required")
		}
		return nil
	}
}

var (
	factPricedV1 = runtime.Fact{RoutingKey: "item.priced", Version: 1, Validate: requires("cents")}
	factPricedV2 = runtime.Fact{RoutingKey: "item.priced", Version: 2, Validate: requires("price")}
)

// A dual publish on the bus is what it is on the broker: one message that
// carries every version, each consumer handling it once in the newest
// version it reads, nothing poisoned; and Published returns the fact once
// per type, in that type's version.
func TestADualPublishIsHandledOnceByConsumersOfEitherVersion(t *testing.T) {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "old", Bindings: []string{"item.#"}, MaxAttempts: 1},
		{Name: "new", Bindings: []string{"item.#"}, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[pricedV1](b, factPricedV1)
		warrentest.Register[pricedV2](b, factPricedV2)
		var mu sync.Mutex
		var old []pricedV1
		var upgraded []pricedV2
		oc, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.Handle(factPricedV1, func(_ context.Context, _ runtime.Delivery, v pricedV1) error {
				mu.Lock()
				defer mu.Unlock()
				old = append(old, v)
				return nil
			}),
		})
		b.Start("old", oc, err)
		nc, err := runtime.NewConsumer(b.Conn(), top.Consumers[1], []runtime.Route{
			runtime.HandleVersions(factPricedV2, func(_ context.Context, _ runtime.Delivery, v pricedV2) error {
				mu.Lock()
				defer mu.Unlock()
				upgraded = append(upgraded, v)
				return nil
			}, runtime.Upcast(factPricedV1, func(v pricedV1) (pricedV2, error) {
				return pricedV2{SKU: v.SKU, Price: v.Cents}, nil
			})),
		})
		b.Start("new", nc, err)

		// The copies differ here, so that the test sees which one each
		// consumer took: the version-2 consumer must take the version-2
		// copy, not upcast the version-1 one.
		id := warrentest.PublishVersions(b,
			runtime.Copy{Fact: factPricedV2, Payload: pricedV2{SKU: "BOOK-1", Price: 1250}},
			runtime.Copy{Fact: factPricedV1, Payload: pricedV1{SKU: "BOOK-1", Cents: 999}})
		b.Idle()

		if len(old) != 1 || old[0] != (pricedV1{SKU: "BOOK-1", Cents: 999}) {
			t.Errorf("the version-1 consumer handled %+v; want the version-1 copy once", old)
		}
		if len(upgraded) != 1 || upgraded[0] != (pricedV2{SKU: "BOOK-1", Price: 1250}) {
			t.Errorf("the version-2 consumer handled %+v; want the fact once", upgraded)
		}
		for _, c := range []string{"old", "new"} {
			if p := b.Poisoned(c); len(p) != 0 {
				t.Errorf("%s poisoned %+v", c, p)
			}
			calls := b.Calls(c)
			if len(calls) != 1 || calls[0].MessageID != id {
				t.Errorf("%s: calls %+v; want one, of message %s", c, calls, id)
			}
		}
		if ms := b.Published(); len(ms) != 1 || ms[0].MessageID != id {
			t.Errorf("published %d messages; want %s alone, carrying both versions", len(ms), id)
		}
		if v1, v2 := warrentest.Published[pricedV1](b), warrentest.Published[pricedV2](b); len(v1) != 1 || len(v2) != 1 || v2[0].Price != 1250 || v1[0].Cents != 999 {
			t.Errorf("Published: version 1 %+v, version 2 %+v; want the fact once in each", v1, v2)
		}
	})
}

// A golden file records a fact published in several versions with every
// version it carries, one entry each, oldest first: the newer versions
// are what the service's code wrote (the older ones its downcasts), and a
// change to either must show in the file's diff. The message's body is the
// oldest version alone.
func TestGoldenRecordsEveryVersionOfADualPublish(t *testing.T) {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "old", Bindings: []string{"item.#"}, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.PublishVersions(b,
			runtime.Copy{Fact: factPricedV1, Payload: pricedV1{SKU: "BOOK-1", Cents: 1999}},
			runtime.Copy{Fact: factPricedV2, Payload: pricedV2{SKU: "BOOK-1", Price: 1999}},
		)
		warrentest.Publish(b, factPricedV2, pricedV2{SKU: "BOOK-2", Price: 500})
		b.Golden("dual-publish")
	})
}
