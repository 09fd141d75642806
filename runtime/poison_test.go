package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// checkPoison asserts the headers every poison copy carries.
func checkPoison(t *testing.T, d amqp.Delivery, spec topology.Consumer, exchange, routingKey string, attempts int, failure string) {
	t.Helper()
	if s, _ := d.Headers[HeaderFailure].(string); !strings.Contains(s, failure) || len(s) > maxFailureLen {
		t.Errorf("x-failure = %q, want at most %d bytes containing %q", s, maxFailureLen, failure)
	}
	if n := amqpmsg.HeaderInt(d.Headers, HeaderAttempts); n != attempts {
		t.Errorf("x-attempts = %d, want %d", n, attempts)
	}
	if s, _ := d.Headers[HeaderFailedAt].(string); s == "" {
		t.Error("x-failed-at missing")
	} else if _, err := time.Parse(time.RFC3339, s); err != nil {
		t.Errorf("x-failed-at %q: %v", s, err)
	}
	for h, want := range map[string]string{HeaderConsumer: spec.Name, HeaderOriginalRoutingKey: routingKey, HeaderOriginalExchange: exchange} {
		if got, _ := d.Headers[h].(string); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
}

// A permanent failure goes to poison on the first attempt.
func TestPermanentFailureGoesToPoisonAtOnce(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "strict", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var calls atomic.Int32
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		calls.Add(1)
		return fmt.Errorf("reindex: %w", Permanent(errors.New("catalogue 42 was deleted")))
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, f, item{SKU: "a"})

	d := b.get(spec.PoisonQueue)
	if d.MessageId != id {
		t.Errorf("poison message id %q, want %q", d.MessageId, id)
	}
	checkPoison(t, d, spec, b.events(), "item.added", 1, "reindex: catalogue 42 was deleted")
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	if n := conn.Counts(spec.Name).Get(Retried); n != 0 {
		t.Errorf("retried %d times, want 0", n)
	}
}

// A body that is not JSON and a payload that breaks its
// schema both go to poison with a readable x-failure, and the consumer keeps
// running. So do an incomplete envelope and a fact the consumer has no
// route for.
func TestMalformedMessagesGoToPoison(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "picky", Bindings: []string{"item.#"}, Backoff: testLadder})
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var handled atomic.Int32
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		handled.Add(1)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)

	cases := []struct {
		key, body, failure string
	}{
		{"item.added", `<xml>not json</xml>`, "body is not a JSON envelope"},
		{"item.added", `{"id":"x1","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":""}}`, `payload of item.added does not match its schema: /sku: expected a non-empty string`},
		{"item.added", `{"id":"x2","payload":{"sku":"a"}}`, `envelope incomplete: missing ["occurred_at"]`},
		{"item.removed", `{"id":"x3","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a"}}`, `fact "item.removed" is not handled by consumer`},
		{"item.added", `{"id":"x4","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a","n":"many"}}`, "decode item.added payload"},
	}
	for _, tc := range cases {
		b.publishRaw(tc.key, []byte(tc.body))
		d := b.get(spec.PoisonQueue)
		if string(d.Body) != tc.body {
			t.Errorf("poison body %q, want %q", d.Body, tc.body)
		}
		checkPoison(t, d, spec, b.events(), tc.key, 1, tc.failure)
	}
	// Still running: a good fact is handled.
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "ok"})
	testenv.Eventually(t, "a good fact handled after the bad ones", func() bool { return handled.Load() == 1 })
	if n := conn.Counts(spec.Name).Get(Poisoned); n != uint64(len(cases)) {
		t.Errorf("poisoned %d, want %d", n, len(cases))
	}
	// Published without the message_id property, as any client may: the
	// log names each fact by its envelope's id, where it has one.
	ids := rec.values("gave up on a message; it is in the poison queue", "message_id")
	if want := []string{"", "x1", "x2", "x3", "x4"}; !slices.Equal(ids, want) {
		t.Errorf("the poison lines name the facts %q, want %q", ids, want)
	}
}

// A panicking handler is a transient failure: retried, then successful,
// with the stack in the log.
func TestPanicIsTransient(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "panicky", Bindings: []string{"item.#"}, Backoff: testLadder})
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	f := itemFact("item.added")
	var calls atomic.Int32
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if calls.Add(1) == 1 {
			var m map[string]int
			m["boom"]++ // nil map write
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})
	testenv.Eventually(t, "the retry acked", func() bool { return conn.Counts(b.consumer(0).Name).Get(Acked) == 1 })
	if n := conn.Counts(b.consumer(0).Name).Get(Retried); n != 1 {
		t.Errorf("retried %d, want 1", n)
	}
	stacks := rec.values("handler failed; retrying", "stack")
	if len(stacks) != 1 || !strings.Contains(stacks[0], "TestPanicIsTransient") {
		t.Errorf("retry log has no stack of the panic:\n%s", rec.text())
	}
}

func TestFailureTextIsBounded(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	got := failureText(errors.New(long))
	if len(got) > maxFailureLen || !strings.HasSuffix(got, "...") || !utf8Valid(got) {
		t.Errorf("failureText: %d bytes, valid UTF-8 %v, suffix %q", len(got), utf8Valid(got), got[len(got)-5:])
	}
	if got := failureText(errors.New("short")); got != "short" {
		t.Errorf("failureText(short) = %q", got)
	}
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
