package runtime

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Bytes a consumer must not decode are poisoned on the first attempt with
// a failure a person can read, and the consumer carries on: bodies that
// are not UTF-8 (encoding/json would turn them into U+FFFD), a present
// content_type that is not JSON, a content_encoding the runtime does not
// decode, and a body over the size limit. An absent content_type, a JSON
// one with or without charset, and a content_encoding naming UTF-8 are
// accepted.
func TestBytesAConsumerMustNotAccept(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "bytes", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var handled atomic.Int32
	var skus atomic.Value
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		handled.Add(1)
		skus.Store(v.SKU)
		return nil
	})}, WithMaxBodySize(200))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)

	env := func(sku string) []byte {
		return []byte(`{"id":"b-` + sku + `","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"` + sku + `"}}`)
	}
	bad := []struct {
		name    string
		msg     amqp.Publishing
		failure string
	}{
		{"latin-1 body", amqp.Publishing{Body: append(env("caf"), []byte("\xe9")...)}, "body is not valid UTF-8: invalid byte 0xe9 at offset"},
		{"invalid byte inside a string", amqp.Publishing{Body: []byte(`{"id":"b-x","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a` + "\xff" + `"}}`)}, "invalid byte 0xff at offset 68"},
		{"text/plain", amqp.Publishing{ContentType: "text/plain", Body: env("t")}, `content_type "text/plain": expected application/json (or none)`},
		{"application/xml", amqp.Publishing{ContentType: "application/xml", Body: env("x")}, `content_type "application/xml"`},
		{"JSON in latin-1", amqp.Publishing{ContentType: "application/json; charset=iso-8859-1", Body: env("l")}, `charset "iso-8859-1", expected utf-8`},
		{"gzip", amqp.Publishing{ContentType: "application/json", ContentEncoding: "gzip", Body: env("g")}, `content_encoding "gzip": the consumer decodes no content encoding`},
		{"over the size limit", amqp.Publishing{Body: env(strings.Repeat("s", 200))}, "over the consumer's limit of 200 bytes"},
	}
	for _, tc := range bad {
		b.publish(t, "item.added", tc.msg)
		d := b.get(spec.PoisonQueue)
		if string(d.Body) != string(tc.msg.Body) {
			t.Errorf("%s: poison body %q, want the original %q", tc.name, d.Body, tc.msg.Body)
		}
		checkPoison(t, d, spec, b.events(), "item.added", 1, tc.failure)
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for bytes it must not see", n)
	}

	good := []amqp.Publishing{
		{Body: env("none")},
		{ContentType: "application/json", Body: env("json")},
		{ContentType: "application/json; charset=UTF-8", Body: env("charset")},
		{ContentType: "application/cloudevents+json", ContentEncoding: "UTF-8", Body: env("suffix")},
		{Body: env("caf\u00e9")},
	}
	for i, m := range good {
		b.publish(t, "item.added", m)
		testenv.Eventually(t, "a good message handled", func() bool { return handled.Load() == int32(i+1) })
	}
	if got := skus.Load(); got != "caf\u00e9" {
		t.Errorf("last sku %q, want the UTF-8 text as sent", got)
	}
	if n := conn.Counts(spec.Name).Get(Poisoned); n != uint64(len(bad)) {
		t.Errorf("poisoned %d, want %d", n, len(bad))
	}
}

func TestMaxBodySizeIsBounded(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "limits", Bindings: []string{"item.#"}})
	conn := b.dial(Config{})
	route := Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })
	for _, n := range []int{0, MaxBodySizeCeiling + 1} {
		if _, err := NewConsumer(conn, b.consumer(0), []Route{route}, WithMaxBodySize(n)); err == nil || !strings.Contains(err.Error(), "WithMaxBodySize") {
			t.Errorf("WithMaxBodySize(%d): %v", n, err)
		}
	}
}

// publish publishes msg as is to the test's events exchange, persistent,
// and waits for the confirm.
func (b *broker) publish(t testing.TB, key string, msg amqp.Publishing) {
	t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	msg.DeliveryMode = amqp.Persistent
	dc, err := ch.PublishWithDeferredConfirm(b.events(), key, true, false, msg)
	if err != nil || !dc.Wait() {
		t.Fatalf("publish: %v", err)
	}
}
