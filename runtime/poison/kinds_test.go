package poison_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

// placedV1 is version 1 of order.placed's payload: the SKU was "code".
type placedV1 struct {
	Code string `json:"code"`
}

// placedV2 is version 2, which the consumer reads; it checks itself as a
// generated type does.
type placedV2 struct {
	SKU string `json:"sku"`
}

func (p *placedV2) Validate() error {
	if p.SKU == "" {
		return errors.New(`/sku: minLength: got 0, want 1`)
	}
	return nil
}

// requires is a fact's schema: the payload is an object with a string
// property named prop.
func requires(key string, version int, prop string) runtime.Fact {
	return runtime.Fact{RoutingKey: key, Version: version, Validate: func(payload []byte) error {
		var v map[string]any
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		if _, ok := v[prop].(string); !ok {
			return fmt.Errorf("/%s: required property %q", prop, prop)
		}
		return nil
	}}
}

// A real consumer's refusals of a fact in a version it does not read, and
// its upcast's failures, are grouped by what happened: a version
// mismatch (kind version, per fact and version, whatever the payload's
// problems), an upcast that failed (kind upcast, the upcast's error
// masked), not as a handler's error or a refusal of the producer's
// message.
func TestGroupsTellVersionMismatchesAndUpcastsApart(t *testing.T) {
	conn, c := vhostLane(t, "poisonkinds")
	placed := runtime.HandleVersions(requires("order.placed", 2, "sku"), func(context.Context, runtime.Delivery, placedV2) error {
		t.Error("the handler ran")
		return nil
	}, runtime.Upcast(requires("order.placed", 1, "code"), func(v placedV1) (placedV2, error) {
		if strings.HasPrefix(v.Code, "gone-") {
			return placedV2{}, fmt.Errorf("no SKU for code %q (catalogue 17)", v.Code)
		}
		return placedV2{}, nil // fails placedV2's own check
	}))
	paid := runtime.Handle(requires("order.paid", 1, "amount"), func(context.Context, runtime.Delivery, map[string]any) error {
		t.Error("the handler ran")
		return nil
	})
	consumer, err := runtime.NewConsumer(conn, c, []runtime.Route{placed, paid})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = consumer.Run(ctx) })

	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i, m := range []struct {
		key     string
		version int
		payload string
	}{
		{"order.placed", 1, `{"code":"gone-1"}`},
		{"order.placed", 1, `{"code":"gone-2"}`},
		{"order.placed", 1, `{"code":"blank"}`},
		{"order.paid", 2, `{"amount_cents":100}`},
		{"order.paid", 2, `{"total":{"cents":100}}`},
		{"order.paid", 3, `{}`},
	} {
		id := fmt.Sprintf("m%d", i+1)
		dc, err := ch.PublishWithDeferredConfirm("events", m.key, true, false, amqp.Publishing{
			MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body:    fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-05-01T10:00:00Z","payload":%s}`, id, m.payload),
			Headers: amqp.Table{runtime.HeaderFactVersion: int64(m.version)},
		})
		if err != nil || !dc.Wait() {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	testenv.Eventually(t, "six poisoned", func() bool { return readyIn(t, conn, c.PoisonQueue) == 6 })

	groups, err := poison.Groups(ctx, conn, c, poison.FromPoison)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // kind + text -> count and routing keys
	for _, g := range groups {
		got[g.Cause.Kind+": "+g.Cause.Text] = fmt.Sprint(g.Count, " ", g.RoutingKeys)
	}
	want := map[string]string{
		`version: order.paid version 2 cannot be read by a consumer that reads versions 1`:                                                                  "2 [{order.paid 2}]",
		`version: order.paid version 3 cannot be read by a consumer that reads versions 1`:                                                                  "1 [{order.paid 1}]",
		`upcast: upcast of order.placed version 1: no SKU for code "…" (catalogue <n>)`:                                                                     "2 [{order.placed 2}]",
		`upcast: upcast of order.placed version 1: the result does not match the schema of the version the route reads: /sku: minLength: got <n>, want <n>`: "1 [{order.placed 1}]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(lines(got), "\n"), strings.Join(lines(want), "\n"))
	}
	// A poison hook's event is grouped the same way: the same group ids.
	ids := map[string]bool{}
	for _, g := range groups {
		ids[g.ID] = true
	}
	for _, m := range takeAll(t, conn, c.PoisonQueue, 6) {
		failure, _ := m.Headers[runtime.HeaderFailure].(string)
		e := runtime.PoisonEvent{Consumer: c.Name, Failure: failure, Headers: m.Headers}
		if id := poison.CauseOf(poison.Message{Failure: e.Failure, Headers: e.Headers}).ID(); !ids[id] {
			t.Errorf("the event of %s (%q) has group id %s, not one of the lane's", m.MessageId, failure, id)
		}
	}
}

func lines(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+" => "+v)
	}
	return out
}

// takeAll takes n messages of queue (acked: the end of the test).
func takeAll(t *testing.T, conn *runtime.Conn, queue string, n int) []amqp.Delivery {
	t.Helper()
	ch, err := conn.OpenChannel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var out []amqp.Delivery
	for range n {
		d, ok, err := ch.Get(queue, true)
		if err != nil || !ok {
			t.Fatalf("get %s: %v, %v", queue, ok, err)
		}
		out = append(out, d)
	}
	return out
}
