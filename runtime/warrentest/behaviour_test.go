package warrentest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// TestBehaviour runs every scenario of the runtime's semantics against the
// real broker and the in-process bus: TestBehaviour/<scenario>/<target>.
func TestBehaviour(t *testing.T) {
	runScenarios(t, []behaviourScenario{
		routingScenario,
		validationScenario,
		retryScenario,
		poisonScenario,
		unavailableScenario,
		deferralScenario,
		guardScenario("GuardMemory", func(t *testing.T) runtime.Guard {
			return idempotency.NewMemoryGuard(idempotency.MemoryConfig{})
		}),
		guardScenario("GuardSQLite", sqliteGuard),
		orderedScenario,
		orderedParkScenario(false),
		orderedParkScenario(true),
		priorityScenario,
		boundedScenario(topology.Classic, 2),
		boundedScenario(topology.Quorum, 3),
		requestScenario,
	})
}

// TestDisruptiveBehaviour runs the scenarios that cut connections: on the
// broker they close the connections of their own vhost, so they run after
// the main suite, one package at a time, as make test arranges.
func TestDisruptiveBehaviour(t *testing.T) {
	testenv.Disruptive(t)
	runScenarios(t, []behaviourScenario{
		connectionLossScenario,
		deliveryLimitScenario,
	})
}

const ms = time.Millisecond

// item is the payload of the catalogue facts.
type item struct {
	SKU string `json:"sku"`
}

// validItem is the schema of item facts: a non-empty sku.
func validItem(payload []byte) error {
	var v item
	if err := json.Unmarshal(payload, &v); err != nil {
		return fmt.Errorf("not an item: %w", err)
	}
	if v.SKU == "" {
		return errors.New("/sku: expected a non-empty string")
	}
	return nil
}

var (
	itemUpdatedFact  = runtime.Fact{RoutingKey: "catalogue.item.updated", Version: 1, Validate: validItem}
	priceChangedFact = runtime.Fact{RoutingKey: "catalogue.price.changed", Version: 1, Validate: validItem}
	itemReservedFact = runtime.Fact{RoutingKey: "stock.item.reserved", Version: 1, Validate: validItem}
	invoiceSentFact  = runtime.Fact{RoutingKey: "billing.invoice.sent", Version: 1, Validate: validItem}
	catalogueFact    = runtime.Fact{RoutingKey: "catalogue", Version: 1, Validate: validItem}
	itemUpdatedV2    = runtime.Fact{RoutingKey: "catalogue.item.updated.v2", Version: 2, Validate: validItem}
	cartLostFact     = runtime.Fact{RoutingKey: "orders.cart.abandoned", Version: 1}
	itemRetiredFact  = runtime.Fact{RoutingKey: "catalogue.item.retired", Version: 1, Validate: validItem}
)

func publish(t *testing.T, e env, f runtime.Fact, v any) string {
	t.Helper()
	id, err := e.Publisher().Publish(e.Context(), f, v)
	if err != nil {
		t.Fatalf("publish %s: %v", f.RoutingKey, err)
	}
	return id
}

func skus(calls []call) []string {
	var out []string
	for _, c := range calls {
		switch v := c.Payload.(type) {
		case item:
			out = append(out, c.RoutingKey+":"+v.SKU)
		case order:
			out = append(out, v.OrderID+"/"+v.Step)
		default:
			out = append(out, fmt.Sprintf("%s:%v", c.RoutingKey, v))
		}
	}
	return out
}

func wantPoisonEmpty(t *testing.T, e env, consumer string) {
	t.Helper()
	if p := e.Poisoned(consumer); len(p) != 0 {
		t.Errorf("%s poison queue holds %d messages, want none: %+v", consumer, len(p), p)
	}
}

// 1. Topic routing: overlapping patterns each get their copy, a consumer
// whose patterns do not match gets nothing, and a fact nobody binds is an
// error.
var routingScenario = behaviourScenario{
	name: "Routing",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "catalogue-all", Bindings: []string{"catalogue.#"}, MaxAttempts: 1},
		{Name: "any-item", Bindings: []string{"*.item.*"}, MaxAttempts: 1},
		{Name: "billing", Bindings: []string{"billing.#"}, MaxAttempts: 1},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		top := e.Topology()
		all, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, top, "catalogue-all"), []runtime.Route{
			route(rec, "catalogue-all", itemUpdatedFact, succeed[item]),
			route(rec, "catalogue-all", priceChangedFact, succeed[item]),
			route(rec, "catalogue-all", catalogueFact, succeed[item]),
			route(rec, "catalogue-all", itemUpdatedV2, succeed[item]),
		})
		e.Start("catalogue-all", all, err)
		anyItem, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, top, "any-item"), []runtime.Route{
			route(rec, "any-item", itemUpdatedFact, succeed[item]),
			route(rec, "any-item", itemReservedFact, succeed[item]),
		})
		e.Start("any-item", anyItem, err)
		billing, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, top, "billing"), []runtime.Route{
			route(rec, "billing", invoiceSentFact, succeed[item]),
		})
		e.Start("billing", billing, err)

		publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})  // catalogue.# and *.item.*
		publish(t, e, priceChangedFact, item{SKU: "BOOK-2"}) // catalogue.# only
		publish(t, e, itemReservedFact, item{SKU: "BOOK-3"}) // *.item.* only
		publish(t, e, catalogueFact, item{SKU: "BOOK-4"})    // catalogue.#: '#' matches zero words
		publish(t, e, itemUpdatedV2, item{SKU: "BOOK-5"})    // catalogue.#; '*' is one word, so not *.item.*

		_, err = e.Publisher().Publish(e.Context(), cartLostFact, map[string]string{"cart": "c-1"})
		var ue *runtime.UnroutableError
		if !errors.Is(err, runtime.ErrUnroutable) || !errors.As(err, &ue) || ue.RoutingKey != cartLostFact.RoutingKey {
			t.Errorf("publishing a fact no queue binds: %v, want an *UnroutableError for %s matching ErrUnroutable", err, cartLostFact.RoutingKey)
		}
		e.Idle()

		sorted := func(c []call) []string { s := skus(c); slices.Sort(s); return s }
		if got, want := sorted(rec.handled("catalogue-all")), []string{"catalogue.item.updated.v2:BOOK-5", "catalogue.item.updated:BOOK-1", "catalogue.price.changed:BOOK-2", "catalogue:BOOK-4"}; !slices.Equal(got, want) {
			t.Errorf("catalogue-all handled %v, want %v", got, want)
		}
		if got, want := sorted(rec.handled("any-item")), []string{"catalogue.item.updated:BOOK-1", "stock.item.reserved:BOOK-3"}; !slices.Equal(got, want) {
			t.Errorf("any-item handled %v, want %v", got, want)
		}
		if got := rec.all("billing"); len(got) != 0 {
			t.Errorf("billing was called %v, want never", skus(got))
		}
		// The two copies of one fact carry one message id.
		a, b := rec.handled("catalogue-all"), rec.handled("any-item")
		idOf := func(cs []call, key string) string {
			for _, c := range cs {
				if c.RoutingKey == key {
					return c.MessageID
				}
			}
			return ""
		}
		if x, y := idOf(a, itemUpdatedFact.RoutingKey), idOf(b, itemUpdatedFact.RoutingKey); x == "" || x != y {
			t.Errorf("the copies of %s have message ids %q and %q, want one id", itemUpdatedFact.RoutingKey, x, y)
		}
		for _, c := range []string{"catalogue-all", "any-item", "billing"} {
			wantPoisonEmpty(t, e, c)
		}
	},
}

// 2. Validation: a payload the schema refuses is refused at publish; one
// that reaches a consumer anyway (a producer without the schema) is
// poisoned without calling the handler, the header saying why.
var validationScenario = behaviourScenario{
	name: "Validation",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 3, Backoff: []time.Duration{20 * ms, 40 * ms}},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
			route(rec, "search-indexer", itemUpdatedFact, succeed[item]),
		})
		e.Start("search-indexer", c, err)

		_, err = e.Publisher().Publish(e.Context(), itemUpdatedFact, item{SKU: ""})
		if err == nil || !strings.Contains(err.Error(), "does not match its schema") || !strings.Contains(err.Error(), "/sku") {
			t.Errorf("publishing an invalid payload: %v, want the schema's refusal", err)
		}
		env0, err := runtime.NewEnvelope(item{SKU: ""})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Publisher().PublishEnvelope(e.Context(), itemUpdatedFact, env0); err == nil || !strings.Contains(err.Error(), "does not match its schema") {
			t.Errorf("publishing an invalid envelope: %v, want the schema's refusal", err)
		}
		e.Idle()
		if got := rec.all(""); len(got) != 0 {
			t.Fatalf("handler called %v after refused publishes, want never", skus(got))
		}
		wantPoisonEmpty(t, e, "search-indexer")

		// A producer that does not validate: the same routing key, no schema.
		loose := runtime.Fact{RoutingKey: itemUpdatedFact.RoutingKey, Version: 1}
		bad, err := runtime.NewEnvelope(json.RawMessage(`{"sku":""}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Publisher().PublishEnvelope(e.Context(), loose, bad); err != nil {
			t.Fatalf("publish without a schema: %v", err)
		}
		e.Idle()
		if got := rec.all(""); len(got) != 0 {
			t.Errorf("handler called %v for an invalid payload, want never", skus(got))
		}
		p := e.Poisoned("search-indexer")
		if len(p) != 1 {
			t.Fatalf("poison queue holds %d messages, want the invalid one", len(p))
		}
		failure, _ := p[0].header(runtime.HeaderFailure).(string)
		if p[0].MessageID != bad.ID || !strings.Contains(failure, "does not match its schema") || !strings.Contains(failure, "/sku: expected a non-empty string") {
			t.Errorf("poisoned %s with x-failure %q, want %s refused by its schema", p[0].MessageID, failure, bad.ID)
		}
		if n := headerInt(p[0].Headers, runtime.HeaderAttempts); n != 1 {
			t.Errorf("x-attempts %d, want 1: an invalid payload is not retried", n)
		}
	},
}

// 3. The retry ladder: a handler that fails twice then succeeds sees
// attempts 1, 2, 3, each copy counting the failures before it.
var retryScenario = behaviourScenario{
	name: "RetryLadder",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 4, Backoff: []time.Duration{20 * ms, 40 * ms, 60 * ms}},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
			route(rec, "search-indexer", itemUpdatedFact, func(_ context.Context, d runtime.Delivery, _ item) error {
				if d.Attempt <= 2 {
					return fmt.Errorf("index busy (attempt %d)", d.Attempt)
				}
				return nil
			}),
		})
		e.Start("search-indexer", c, err)
		id := publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})
		e.Idle()

		calls := rec.all("search-indexer")
		var got []string
		for _, c := range calls {
			got = append(got, fmt.Sprintf("attempt %d x-attempts %d ok %t", c.Attempt, c.Attempts, c.Err == nil))
			if c.MessageID != id {
				t.Errorf("call with message id %s, want %s on every attempt", c.MessageID, id)
			}
		}
		want := []string{"attempt 1 x-attempts -1 ok false", "attempt 2 x-attempts 1 ok false", "attempt 3 x-attempts 2 ok true"}
		if !slices.Equal(got, want) {
			t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if n := len(rec.handled("search-indexer")); n != 1 {
			t.Errorf("handled %d times, want once", n)
		}
		// Each retry came back from its delay queue by expiry, the broker
		// recording the passage in x-death, newest first. From 3.13 the
		// broker keeps that history beside the message rather than in the
		// headers a client writes, so a retry copy (published by the
		// runtime) shows only its own hop.
		if len(calls) == 3 {
			third := []string{`search-indexer.retry.40ms expired 1 via "app.retry" [search-indexer.retry.40ms]`,
				`search-indexer.retry.20ms expired 1 via "app.retry" [search-indexer.retry.20ms]`}
			if versionAtLeast(e.BrokerVersion(), 3, 13) {
				third = third[:1]
			}
			wantDeaths := [][]string{
				nil,
				{`search-indexer.retry.20ms expired 1 via "app.retry" [search-indexer.retry.20ms]`},
				third,
			}
			for i, c := range calls {
				if got := deaths(c.Headers); !slices.Equal(got, wantDeaths[i]) {
					t.Errorf("attempt %d: x-death %q, want %q", i+1, got, wantDeaths[i])
				}
				if c.Headers[runtime.HeaderFailure] != nil {
					t.Errorf("attempt %d carries %s %v: only poison copies do", i+1, runtime.HeaderFailure, c.Headers[runtime.HeaderFailure])
				}
				if i > 0 && c.Headers[runtime.HeaderOriginalRoutingKey] != itemUpdatedFact.RoutingKey {
					t.Errorf("attempt %d: %s %v, want %s", i+1, runtime.HeaderOriginalRoutingKey, c.Headers[runtime.HeaderOriginalRoutingKey], itemUpdatedFact.RoutingKey)
				}
			}
		}
		wantPoisonEmpty(t, e, "search-indexer")
	},
}

// 4. An exhausted ladder and a permanent error both end in poison with
// the failure headers; a permanent error is not retried.
var poisonScenario = behaviourScenario{
	name: "Poison",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 3, Backoff: []time.Duration{20 * ms, 40 * ms}},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
			route(rec, "search-indexer", itemUpdatedFact, func(context.Context, runtime.Delivery, item) error {
				return errors.New("index down")
			}),
			route(rec, "search-indexer", itemRetiredFact, func(context.Context, runtime.Delivery, item) error {
				return runtime.Permanent(errors.New("sku was never listed"))
			}),
		})
		e.Start("search-indexer", c, err)
		exhausted := publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})
		permanent := publish(t, e, itemRetiredFact, item{SKU: "BOOK-2"})
		e.Idle()

		attempts := map[string][]int{}
		for _, c := range rec.all("search-indexer") {
			attempts[c.MessageID] = append(attempts[c.MessageID], c.Attempt)
		}
		if got := attempts[exhausted]; !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("attempts of the always failing fact: %v, want [1 2 3]", got)
		}
		if got := attempts[permanent]; !slices.Equal(got, []int{1}) {
			t.Errorf("attempts of the permanently failing fact: %v, want [1]: not retried", got)
		}
		want := map[string]struct {
			failure, key string
			attempts     int
		}{
			exhausted: {"index down", itemUpdatedFact.RoutingKey, 3},
			permanent: {"sku was never listed", itemRetiredFact.RoutingKey, 1},
		}
		p := e.Poisoned("search-indexer")
		if len(p) != 2 {
			t.Fatalf("poison queue holds %d messages, want 2", len(p))
		}
		for _, m := range p {
			w, ok := want[m.MessageID]
			if !ok {
				t.Errorf("unexpected poison message %s", m.MessageID)
				continue
			}
			h := m.Headers
			if h[runtime.HeaderFailure] != w.failure || h[runtime.HeaderConsumer] != "search-indexer" ||
				headerInt(h, runtime.HeaderAttempts) != w.attempts || h[runtime.HeaderOriginalRoutingKey] != w.key ||
				h[runtime.HeaderOriginalExchange] != e.Topology().Exchanges[0].Name {
				t.Errorf("poison message %s headers: x-failure %v, x-consumer %v, x-attempts %v, x-original-routing-key %v, x-original-exchange %v; want %q, search-indexer, %d, %s, %s",
					m.MessageID, h[runtime.HeaderFailure], h[runtime.HeaderConsumer], h[runtime.HeaderAttempts], h[runtime.HeaderOriginalRoutingKey], h[runtime.HeaderOriginalExchange],
					w.failure, w.attempts, w.key, e.Topology().Exchanges[0].Name)
			}
			if at, _ := h[runtime.HeaderFailedAt].(string); at == "" {
				t.Errorf("poison message %s has no %s", m.MessageID, runtime.HeaderFailedAt)
			} else if _, err := time.Parse(time.RFC3339, at); err != nil {
				t.Errorf("poison message %s: %s %q: %v", m.MessageID, runtime.HeaderFailedAt, at, err)
			}
		}
	},
}

// 5. An unavailable dependency: the fact is held without spending an
// attempt, the consumer pauses after a run of outages, and the fact is
// handled once the dependency is back.
var unavailableScenario = behaviourScenario{
	name: "Unavailable",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 2, Backoff: []time.Duration{20 * ms}},
	}},
	run: func(t *testing.T, e env) {
		const outage = 4 // calls that find the index down; more than MaxAttempts
		var (
			mu     sync.Mutex
			calls  int
			paused []bool
			cons   *runtime.Consumer
		)
		rec := &recorder{}
		cons, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
			route(rec, "search-indexer", itemUpdatedFact, func(context.Context, runtime.Delivery, item) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				paused = append(paused, cons.Health().Paused)
				if calls <= outage {
					return runtime.Unavailable(errors.New("index unreachable"))
				}
				return nil
			}),
		}, runtime.WithOutagePolicy(runtime.OutagePolicy{PauseAfter: 2, ProbeMin: 20 * ms, ProbeMax: 40 * ms}))
		e.Start("search-indexer", cons, err)
		id := publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})
		e.Idle()

		all := rec.all("search-indexer")
		if len(all) != outage+1 {
			t.Fatalf("%d calls, want %d: %d outages, then the fact handled", len(all), outage+1, outage)
		}
		for i, c := range all {
			if c.MessageID != id || c.Attempt != 1 || c.Attempts > 0 {
				t.Errorf("call %d: message %s, attempt %d, x-attempts %d; want %s, attempt 1 and no failed attempt counted every time", i+1, c.MessageID, c.Attempt, c.Attempts, id)
			}
		}
		if n := len(rec.handled("search-indexer")); n != 1 {
			t.Errorf("handled %d times, want once", n)
		}
		mu.Lock()
		want := []bool{false, false, true, true, true} // paused from the second outage on, probing
		if !slices.Equal(paused, want) {
			t.Errorf("paused during calls: %v, want %v", paused, want)
		}
		mu.Unlock()
		if cons.Health().Paused {
			t.Error("still paused after the dependency came back")
		}
		if held := e.Conn().Counts("search-indexer").Get(runtime.Held); held != outage {
			t.Errorf("held %d times, want %d", held, outage)
		}
		wantPoisonEmpty(t, e, "search-indexer")
	},
}

// 6. The idempotency guard: one envelope published twice is handled once;
// the second delivery is a duplicate.
func guardScenario(name string, guard func(t *testing.T) runtime.Guard) behaviourScenario {
	return behaviourScenario{
		name: name,
		spec: topology.Spec{Consumers: []topology.ConsumerSpec{
			{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 2, Backoff: []time.Duration{20 * ms}},
		}},
		run: func(t *testing.T, e env) {
			rec := &recorder{}
			c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
				route(rec, "search-indexer", itemUpdatedFact, succeed[item]),
			}, runtime.WithGuard(guard(t)))
			e.Start("search-indexer", c, err)
			env0, err := runtime.NewEnvelope(item{SKU: "BOOK-1"})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := e.Publisher().PublishEnvelope(e.Context(), itemUpdatedFact, env0); err != nil {
					t.Fatalf("publish: %v", err)
				}
				e.Idle()
			}
			if got := rec.all("search-indexer"); len(got) != 1 || got[0].MessageID != env0.ID {
				t.Errorf("handler calls %+v, want one, for %s", got, env0.ID)
			}
			counts := e.Conn().Counts("search-indexer")
			if d, a := counts.Get(runtime.DuplicateSkipped), counts.Get(runtime.Acked); d != 1 || a != 1 {
				t.Errorf("acked %d and skipped %d as duplicates, want 1 and 1", a, d)
			}
			wantPoisonEmpty(t, e, "search-indexer")
		},
	}
}

// sqliteGuard is an SQL guard on an SQLite file of the test's own.
func sqliteGuard(t *testing.T) runtime.Guard {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "claims.db"))
	g, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}

// order is the payload of the ordered facts.
type order struct {
	OrderID string `json:"order_id"`
	Step    string `json:"step"`
}

var orderStepFact = runtime.Fact{
	RoutingKey: "orders.order.step", Version: 1, OrderingKey: "/order_id",
	KeyOf: func(p any) (string, bool) {
		o, ok := p.(order)
		return o.OrderID, ok
	},
}

// 7. An ordered consumer: the facts of one key are handled in publish
// order, also when one fails once and waits for its retry, while other
// keys go on.
var orderedScenario = behaviourScenario{
	name: "Ordered",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "fulfilment", Bindings: []string{"orders.#"}, Ordered: true, Shards: 4, Concurrency: 4,
			MaxAttempts: 3, Backoff: []time.Duration{20 * ms, 40 * ms}},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		otherDone := make(chan struct{}) // closed once a fact of another key was handled
		var once sync.Once
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "fulfilment"), []runtime.Route{
			route(rec, "fulfilment", orderStepFact, func(ctx context.Context, d runtime.Delivery, o order) error {
				if o.OrderID != "A" {
					once.Do(func() { close(otherDone) })
					return nil
				}
				if o.Step == "2" && d.Attempt == 1 {
					// Wait, holding key A, until another key made progress.
					select {
					case <-otherDone:
					case <-time.After(10 * time.Second):
						return errors.New("no other key was handled while A/2 was in hand")
					}
					return errors.New("warehouse busy")
				}
				return nil
			}),
		})
		for _, step := range []string{"1", "2", "3"} {
			for _, key := range []string{"A", "B", "C"} {
				publish(t, e, orderStepFact, order{OrderID: key, Step: step})
			}
		}
		e.Start("fulfilment", c, err)
		e.Idle()

		perKey := map[string][]string{}
		for _, s := range skus(rec.handled("fulfilment")) {
			k, _, _ := strings.Cut(s, "/")
			perKey[k] = append(perKey[k], s)
		}
		for _, k := range []string{"A", "B", "C"} {
			want := []string{k + "/1", k + "/2", k + "/3"}
			if !slices.Equal(perKey[k], want) {
				t.Errorf("key %s handled %v, want %v", k, perKey[k], want)
			}
		}
		var a2 []string
		for _, c := range rec.all("fulfilment") {
			if o := c.Payload.(order); o.OrderID == "A" && o.Step == "2" {
				a2 = append(a2, fmt.Sprintf("attempt %d ok %t", c.Attempt, c.Err == nil))
			}
		}
		if want := []string{"attempt 1 ok false", "attempt 2 ok true"}; !slices.Equal(a2, want) {
			t.Errorf("A/2: %v, want %v", a2, want)
		}
		// Other keys went on while A/2 was in hand: its first attempt
		// waited for a fact of another key to be handled.
		select {
		case <-otherDone:
		default:
			t.Error("no fact of another key was handled")
		}
		wantPoisonEmpty(t, e, "fulfilment")
	},
}

// 8. Priorities: with a backlog waiting, high-priority facts are handled
// first.
var priorityScenario = behaviourScenario{
	name: "Priority",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"catalogue.#"}, QueueType: topology.Classic, MaxPriority: 9,
			Concurrency: 1, Prefetch: 1, MaxAttempts: 1},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "mailer"), []runtime.Route{
			route(rec, "mailer", itemUpdatedFact, succeed[item]),
		})
		for _, s := range []string{"low-1", "low-2", "low-3"} {
			publish(t, e, itemUpdatedFact, item{SKU: s})
		}
		for _, s := range []string{"high-1", "high-2"} {
			publish(t, e, itemUpdatedFact.WithPriority(9), item{SKU: s})
		}
		e.Start("mailer", c, err)
		e.Idle()
		k := itemUpdatedFact.RoutingKey + ":"
		want := []string{k + "high-1", k + "high-2", k + "low-1", k + "low-2", k + "low-3"}
		if got := skus(rec.handled("mailer")); !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
	},
}

// 9. A bounded work queue refuses what it has no room for, and the
// publisher says which queue is full. A classic queue holds exactly its
// bound; a quorum queue checks its bound after each enqueue, so it takes
// one message more (RabbitMQ's quorum queues document the overshoot), and
// refuses from then on until it drained.
func boundedScenario(qt topology.QueueType, fits int) behaviourScenario {
	return behaviourScenario{
		name: "Bounded" + strings.ToUpper(string(qt[:1])) + string(qt[1:]),
		spec: topology.Spec{Consumers: []topology.ConsumerSpec{
			{Name: "thumbnailer", Bindings: []string{"catalogue.#"}, QueueType: qt, MaxLength: 2, MaxAttempts: 1},
		}},
		run: func(t *testing.T, e env) {
			rec := &recorder{}
			c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "thumbnailer"), []runtime.Route{
				route(rec, "thumbnailer", itemUpdatedFact, succeed[item]),
			})
			k := itemUpdatedFact.RoutingKey + ":"
			var accepted []string
			for i := range fits + 2 {
				sku := fmt.Sprintf("BOOK-%d", i+1)
				_, err := e.Publisher().Publish(e.Context(), itemUpdatedFact, item{SKU: sku})
				var re *runtime.RejectedError
				switch {
				case i < fits && err != nil:
					t.Errorf("publish %d of %d within the bound: %v", i+1, fits, err)
				case i < fits:
					accepted = append(accepted, k+sku)
				case !errors.Is(err, runtime.ErrRejected) || !errors.Is(err, runtime.ErrNacked):
					t.Errorf("publish %d, past the bound: %v, want an error matching ErrRejected and ErrNacked", i+1, err)
				case !errors.As(err, &re) || !slices.Equal(re.Queues, []string{"thumbnailer"}) || re.RoutingKey != itemUpdatedFact.RoutingKey:
					t.Errorf("publish %d, past the bound: %#v, want a *RejectedError naming queue thumbnailer", i+1, re)
				}
			}
			e.Start("thumbnailer", c, err)
			e.Idle()
			if got := skus(rec.handled("thumbnailer")); !slices.Equal(got, accepted) {
				t.Errorf("handled %v, want the %d that fitted", got, fits)
			}
			// Room again once the consumer drained the queue.
			publish(t, e, itemUpdatedFact, item{SKU: "BOOK-LATER"})
			e.Idle()
			if n := len(rec.handled("thumbnailer")); n != fits+1 {
				t.Errorf("handled %d, want %d once there was room again", n, fits+1)
			}
		},
	}
}

// quote is the request of the requests scenario, quoteReply its reply.
type quote struct {
	SKU string `json:"sku"`
}

type quoteReply struct {
	Cents int `json:"cents"`
}

var quoteRequest = runtime.Request{
	Key:      "pricing.quote",
	Validate: validItem,
	ValidateReply: func(p []byte) error {
		var r quoteReply
		if err := json.Unmarshal(p, &r); err != nil {
			return err
		}
		if r.Cents < 0 {
			return errors.New("/cents: expected at least 0")
		}
		return nil
	},
}

// 10. Requests: an answer, an error reply, and a deadline that passes
// first.
var requestScenario = behaviourScenario{
	name: "Requests",
	spec: topology.Spec{Responders: []topology.ResponderSpec{
		{Name: "pricing", Requests: []string{"pricing.quote"}, Concurrency: 2},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		spec, _ := e.Topology().Responder("pricing")
		resp, err := runtime.NewResponder(e.Conn(), spec, []runtime.Answer{
			runtime.Respond(quoteRequest, func(ctx context.Context, d runtime.Delivery, q quote) (quoteReply, error) {
				var rep quoteReply
				var err error
				switch q.SKU {
				case "BOOK-1":
					rep = quoteReply{Cents: 1250}
				case "RETIRED":
					err = runtime.Permanent(errors.New("sku retired"))
				case "FLAKY":
					err = errors.New("price list loading")
				case "SLOW":
					<-ctx.Done() // the caller's deadline, which the responder's ctx carries
					err = ctx.Err()
				}
				rec.add(call{Consumer: "pricing", MessageID: d.MessageID, RoutingKey: d.RoutingKey, Attempt: d.Attempt, Payload: item{SKU: q.SKU}, Err: err})
				return rep, err
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		req, err := runtime.NewRequester(e.Conn(), spec.Exchange)
		if err != nil {
			t.Fatal(err)
		}
		defer req.Close()
		ask := func(sku string, within time.Duration) (quoteReply, error) {
			ctx, cancel := context.WithTimeout(e.Context(), within)
			defer cancel()
			return runtime.Call[quoteReply](ctx, req, quoteRequest, quote{SKU: sku})
		}
		// Asked before any responder runs: the request waits in the
		// queue past its deadline, and is never worked on.
		if _, err := ask("LATE", 50*ms); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("quote LATE with no responder running: %v, want context.DeadlineExceeded", err)
		}
		e.Start("pricing", resp, err)

		if rep, err := ask("BOOK-1", 10*time.Second); err != nil || rep.Cents != 1250 {
			t.Errorf("quote BOOK-1: %+v, %v; want 1250 cents", rep, err)
		}
		_, err = ask("RETIRED", 10*time.Second)
		var re *runtime.ReplyError
		if !errors.As(err, &re) || !re.Permanent || re.Message != "sku retired" || !runtime.IsPermanent(err) {
			t.Errorf("quote RETIRED: %v, want a permanent *ReplyError \"sku retired\"", err)
		}
		_, err = ask("FLAKY", 10*time.Second)
		if !errors.As(err, &re) || re.Permanent || re.Message != "price list loading" || runtime.IsPermanent(err) {
			t.Errorf("quote FLAKY: %v, want a *ReplyError \"price list loading\", not permanent", err)
		}
		_, err = ask("", 10*time.Second)
		if err == nil || !strings.Contains(err.Error(), "does not match its schema") {
			t.Errorf("an invalid request: %v, want the schema's refusal", err)
		}
		start := time.Now()
		_, err = ask("SLOW", 50*ms)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("quote SLOW within 50ms: %v, want context.DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited < 50*ms {
			t.Errorf("quote SLOW gave up after %v, before its deadline", waited)
		}
		e.Idle()

		var got []string
		for _, c := range rec.all("pricing") {
			got = append(got, fmt.Sprintf("%s ok %t", c.Payload.(item).SKU, c.Err == nil))
		}
		if want := []string{"BOOK-1 ok true", "RETIRED ok false", "FLAKY ok false", "SLOW ok false"}; !slices.Equal(got, want) {
			t.Errorf("responder calls %v, want %v (an invalid request is refused before it is sent)", got, want)
		}
		counts := resp.Counts()
		if counts.Answered != 1 || counts.Failed != 3 {
			t.Errorf("responder counts %+v, want 1 answered and 3 failed", counts)
		}
		// The broker may drop the expired request before the responder
		// takes it, or hand it over to be acked unworked: the count of
		// expired requests is not part of the contract, the handler's
		// silence is.
		t.Logf("responder counts: %+v", counts)
	},
}

// 11. A lost connection: a delivery whose handler was running when the
// connection went is not lost; the broker delivers it again, marked
// redelivered, on the connection the runtime makes next. Delivery is at
// least once: without a guard the handler runs twice.
var connectionLossScenario = behaviourScenario{
	name: "ConnectionLoss",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 2, Backoff: []time.Duration{20 * ms}},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		started, release := make(chan struct{}), make(chan struct{})
		var first, released sync.Once
		unblock := func() { released.Do(func() { close(release) }) }
		defer unblock() // also when the scenario fails before it releases the handler
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
			route(rec, "search-indexer", itemUpdatedFact, func(_ context.Context, d runtime.Delivery, _ item) error {
				block := false
				first.Do(func() { block = true })
				if block {
					close(started)
					<-release
				}
				return nil
			}),
		})
		e.Start("search-indexer", c, err)
		id := publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})
		select {
		case <-started:
		case <-time.After(testenv.DefaultWait):
			t.Fatal("the handler was never called")
		}
		e.DropConnections()
		unblock() // the handler succeeds, but its ack has no connection to go on
		e.Idle()

		var got []string
		for _, c := range rec.all("search-indexer") {
			got = append(got, fmt.Sprintf("%s attempt %d redelivered %t ok %t", c.MessageID, c.Attempt, c.Redelivered, c.Err == nil))
		}
		want := []string{id + " attempt 1 redelivered false ok true", id + " attempt 1 redelivered true ok true"}
		if !slices.Equal(got, want) {
			t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		wantPoisonEmpty(t, e, "search-indexer")
	},
}

// 7b. An ordered consumer that parks: once a fact of a key went to
// poison, the key's later facts follow it there, marked with its id,
// while other keys go on. With replay, the poisoned fact coming back
// lifts the park and the parked facts follow it, in order.
func orderedParkScenario(replay bool) behaviourScenario {
	sc := behaviourScenario{
		name: "OrderedPark",
		spec: topology.Spec{Consumers: []topology.ConsumerSpec{
			{Name: "fulfilment", Bindings: []string{"orders.#"}, Ordered: true, Shards: 2, Concurrency: 2,
				MaxAttempts: 2, Backoff: []time.Duration{20 * ms}, Park: true},
		}},
	}
	if replay {
		sc.name = "OrderedParkReplay"
		sc.only = "broker"
		sc.why = "replaying a poison queue needs runtime/poison, which works over Conn.OpenChannel, and the in-process transport has no AMQP channel to give it"
	}
	sc.run = func(t *testing.T, e env) {
		rec := &recorder{}
		var mu sync.Mutex
		broken := true // A/2 breaks a rule until the rule is fixed
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "fulfilment"), []runtime.Route{
			route(rec, "fulfilment", orderStepFact, func(_ context.Context, _ runtime.Delivery, o order) error {
				mu.Lock()
				defer mu.Unlock()
				if o.OrderID == "A" && o.Step == "2" && broken {
					return runtime.Permanent(errors.New("order A cannot be packed"))
				}
				return nil
			}),
		})
		ids := map[string]string{}
		for _, step := range []string{"1", "2", "3", "4"} {
			for _, key := range []string{"A", "B"} {
				ids[key+"/"+step] = publish(t, e, orderStepFact, order{OrderID: key, Step: step})
			}
		}
		e.Start("fulfilment", c, err)
		e.Idle()

		if got, want := skus(rec.all("fulfilment")), []string{"A/1", "A/2"}; !slices.Equal(filterKey(got, "A"), want) {
			t.Errorf("calls of key A %v, want %v: the later facts are parked without a call", filterKey(got, "A"), want)
		}
		if got, want := filterKey(skus(rec.handled("fulfilment")), "B"), []string{"B/1", "B/2", "B/3", "B/4"}; !slices.Equal(got, want) {
			t.Errorf("key B handled %v, want %v", got, want)
		}
		p := e.Poisoned("fulfilment")
		var got []string
		for _, m := range p {
			got = append(got, m.MessageID)
		}
		if want := []string{ids["A/2"], ids["A/3"], ids["A/4"]}; !slices.Equal(got, want) {
			t.Fatalf("poison queue holds %v, want A/2, A/3, A/4: %v", got, want)
		}
		if f, _ := p[0].header(runtime.HeaderFailure).(string); f != "order A cannot be packed" {
			t.Errorf("A/2 x-failure %q", f)
		}
		for _, m := range p[1:] {
			if f, _ := m.header(runtime.HeaderFailure).(string); !strings.Contains(f, "parked") || !strings.Contains(f, ids["A/2"]) {
				t.Errorf("parked fact %s: x-failure %q, want it parked behind %s", m.MessageID, f, ids["A/2"])
			}
		}
		if !replay {
			return
		}
		mu.Lock()
		broken = false
		mu.Unlock()
		ctx, cancel := context.WithTimeout(e.Context(), testenv.DefaultWait)
		defer cancel()
		if _, err := poison.Replay(ctx, e.Conn(), mustConsumer(t, e.Topology(), "fulfilment"), poison.Filter{}); err != nil {
			t.Fatalf("replay: %v", err)
		}
		e.Idle()
		if got, want := filterKey(skus(rec.handled("fulfilment")), "A"), []string{"A/1", "A/2", "A/3", "A/4"}; !slices.Equal(got, want) {
			t.Errorf("key A handled %v after the replay, want %v", got, want)
		}
		wantPoisonEmpty(t, e, "fulfilment")
	}
	return sc
}

func filterKey(steps []string, key string) []string {
	var out []string
	for _, s := range steps {
		if strings.HasPrefix(s, key+"/") {
			out = append(out, s)
		}
	}
	return out
}

// 12. A quorum work queue's delivery limit: a fact whose handler never
// gets to settle it (its connection goes every time) is dead-lettered to
// poison by the broker itself once it was returned more often than the
// limit, x-death saying why.
var deliveryLimitScenario = behaviourScenario{
	name: "DeliveryLimit",
	spec: topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, DeliveryLimit: 1, MaxAttempts: 2, Backoff: []time.Duration{20 * ms}},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		started := make(chan struct{}, 1)
		release := make(chan struct{})
		defer close(release) // also when the scenario fails first
		c, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, e.Topology(), "search-indexer"), []runtime.Route{
			route(rec, "search-indexer", itemUpdatedFact, func(context.Context, runtime.Delivery, item) error {
				started <- struct{}{}
				<-release
				return nil
			}),
		})
		e.Start("search-indexer", c, err)
		id := publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})
		for range 2 { // the first delivery and the one redelivery the limit allows
			select {
			case <-started:
			case <-time.After(testenv.DefaultWait):
				t.Fatal("the handler was not called")
			}
			e.DropConnections()
			release <- struct{}{}
		}
		e.Idle()

		if n := len(rec.all("search-indexer")); n != 2 {
			t.Errorf("%d handler calls, want 2: the delivery and one redelivery", n)
		}
		p := e.Poisoned("search-indexer")
		if len(p) != 1 || p[0].MessageID != id {
			t.Fatalf("poison queue holds %+v, want %s", p, id)
		}
		if got, want := deaths(p[0].Headers), []string{`search-indexer delivery_limit 1 via "app.events" [catalogue.item.updated]`}; !slices.Equal(got, want) {
			t.Errorf("x-death %q, want %q", got, want)
		}
		if f := p[0].header(runtime.HeaderFailure); f != nil {
			t.Errorf("x-failure %v on a message the broker dead-lettered, want none", f)
		}
	},
}

// A handler defers a fact: it comes back to that consumer alone, later,
// its attempts unspent and its deferrals counted; a consumer bound to the
// same fact by "#" sees it once. A fact deferred beyond maxDeferrals goes
// to poison saying so.
var deferralScenario = behaviourScenario{
	name: "Deferral",
	spec: topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "partner-sync", Bindings: []string{"catalogue.item.updated"}, MaxAttempts: 2, Backoff: []time.Duration{20 * ms}, MaxDeferrals: 2},
		{Name: "audit", Bindings: []string{"#"}, MaxAttempts: 1},
	}},
	run: func(t *testing.T, e env) {
		rec := &recorder{}
		top := e.Topology()
		partner, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, top, "partner-sync"), []runtime.Route{
			route(rec, "partner-sync", itemUpdatedFact, func(ctx context.Context, d runtime.Delivery, v item) error {
				if v.SKU == "NEVER" || d.Deferrals == 0 {
					return fmt.Errorf("partner closed: %w", runtime.Defer(30*ms))
				}
				return nil
			}),
		})
		e.Start("partner-sync", partner, err)
		audit, err := runtime.NewConsumer(e.Conn(), mustConsumer(t, top, "audit"), []runtime.Route{
			route(rec, "audit", itemUpdatedFact, succeed[item]),
		})
		e.Start("audit", audit, err)

		id := publish(t, e, itemUpdatedFact, item{SKU: "BOOK-1"})
		never := publish(t, e, itemUpdatedFact, item{SKU: "NEVER"})
		e.Idle()

		if got := skus(rec.all("audit")); len(got) != 2 {
			t.Errorf("audit was called for %v, want once for each fact", got)
		}
		var book []call
		for _, c := range rec.all("partner-sync") {
			if c.MessageID == id {
				book = append(book, c)
			}
		}
		if len(book) != 2 || !runtime.IsDeferred(book[0].Err) || book[1].Err != nil {
			t.Fatalf("partner-sync's calls for BOOK-1: %+v, want a deferral, then handled", book)
		}
		back := book[1]
		if back.Attempt != 1 || back.Attempts != -1 || headerInt(back.Headers, runtime.HeaderDeferrals) != 1 || back.RoutingKey != itemUpdatedFact.RoutingKey {
			t.Errorf("back from its deferral: attempt %d, x-attempts %d, x-deferrals %d, key %q; want 1, absent, 1, %s",
				back.Attempt, back.Attempts, headerInt(back.Headers, runtime.HeaderDeferrals), back.RoutingKey, itemUpdatedFact.RoutingKey)
		}
		if _, ok := back.Headers[runtime.HeaderDueAt].(string); !ok {
			t.Errorf("back from its deferral without %s: %v", runtime.HeaderDueAt, back.Headers)
		}
		p := e.Poisoned("partner-sync")
		if len(p) != 1 || p[0].MessageID != never {
			t.Fatalf("partner-sync poison holds %+v, want NEVER alone", p)
		}
		if f, _ := p[0].header(runtime.HeaderFailure).(string); !strings.HasPrefix(f, "deferred 2 times, and maxDeferrals allows 2: partner closed: deferred until ") {
			t.Errorf("x-failure %q: does not say it was deferred beyond maxDeferrals", f)
		}
		if a, d := headerInt(p[0].Headers, runtime.HeaderAttempts), headerInt(p[0].Headers, runtime.HeaderDeferrals); a != 1 || d != 2 {
			t.Errorf("poisoned with x-attempts %d, x-deferrals %d; want 1, 2", a, d)
		}
		c := e.Conn().Counts("partner-sync")
		if c.Get(runtime.Deferred) != 3 || c.Get(runtime.Retried) != 0 || c.Get(runtime.Acked) != 1 || c.Get(runtime.Poisoned) != 1 {
			t.Errorf("partner-sync counted deferred %d, retried %d, acked %d, poisoned %d; want 3, 0, 1, 1",
				c.Get(runtime.Deferred), c.Get(runtime.Retried), c.Get(runtime.Acked), c.Get(runtime.Poisoned))
		}
		wantPoisonEmpty(t, e, "audit")
	},
}
