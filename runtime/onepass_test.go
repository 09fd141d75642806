package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/topology"
)

func codedRoute() Route {
	return Handle(codedFact("item.added"), func(context.Context, Delivery, codedItem) error { return nil })
}

// decodeEnvelopeJSON is how envelopes were read before the one-pass
// reader: encoding/json, which both readers must agree with.
func decodeEnvelopeJSON(body []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return env, Permanent(fmt.Errorf("body is not a JSON envelope: %w", err))
	}
	var missing []string
	if env.ID == "" {
		missing = append(missing, "id")
	}
	if env.OccurredAt.IsZero() {
		missing = append(missing, "occurred_at")
	}
	if len(env.Payload) == 0 || bytes.Equal(env.Payload, []byte("null")) {
		missing = append(missing, "payload")
	}
	if missing != nil {
		return env, Permanent(fmt.Errorf("envelope incomplete: missing %q", missing))
	}
	return env, nil
}

// The one-pass readers (a generated type's, and decodeEnvelope's, which
// takes the payload's bytes) accept and reject the envelopes that
// encoding/json does, with the same errors, whatever the order of the
// members.
func TestDecodeEnvelopeOnceAgreesWithDecodeEnvelope(t *testing.T) {
	const ts = `"2026-01-02T03:04:05.123456789Z"`
	bodies := []string{
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s","n":1}}`,
		`{"payload":{"sku":"s","n":1},"occurred_at":` + ts + `,"id":"a"}`,
		` {"id":"a", "extra":[1,{"x":null}], "occurred_at":` + ts + `, "payload":{"sku":"s"}} ` + "\n",
		`{"ID":"a","Occurred_At":` + ts + `,"PAYLOAD":{"sku":"s"}}`,
		`{"id":"a","occurred_at":` + ts + `,"payload":null}`,
		`{"id":"a","occurred_at":` + ts + `}`,
		`{"id":null,"occurred_at":` + ts + `,"payload":{"sku":"s"}}`,
		`{"occurred_at":` + ts + `,"payload":{"sku":"s"}}`,
		`{"id":"a","payload":{"sku":"s"}}`,
		`{"id":"a","occurred_at":"yesterday","payload":{"sku":"s"}}`,
		`{"id":7,"occurred_at":` + ts + `,"payload":{"sku":"s"}}`,
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s"}} {}`,
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s"}} x`,
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s"}`,
		`{"id":"a","extra":[1,,2],"occurred_at":` + ts + `,"payload":{"sku":"s"}}`,
		`[1,2]`,
		`<xml>not json</xml>`,
		``,
	}
	// Payloads that are not JSON, which decodeEnvelope must refuse as
	// encoding/json does (a generated type's reader fails them as its
	// payload's errors), and a payload given twice: the last one counts.
	badPayloads := []string{
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s",}}`,
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"\x"}}`,
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s","n":01}}`,
		`{"id":"a","occurred_at":` + ts + `,"payload":{"sku":"s"},"payload":{"sku":"t"}}`,
	}
	for i, body := range append(bodies, badPayloads...) {
		env, oldErr := decodeEnvelopeJSON([]byte(body))
		head, call, newErr := decodeEnvelopeOnce([]byte(body), codedRoute().decodeAt)
		raw, rawErr := decodeEnvelope([]byte(body))
		if (oldErr == nil) != (rawErr == nil) || oldErr != nil && (!IsPermanent(rawErr) || prefix(oldErr) != prefix(rawErr)) {
			t.Errorf("%s:\n encoding/json:        %v\n one pass, raw payload: %v", body, oldErr, rawErr)
		} else if oldErr == nil && (raw.ID != env.ID || !raw.OccurredAt.Equal(env.OccurredAt) || !bytes.Equal(raw.Payload, env.Payload)) {
			t.Errorf("%s: one pass read %+v, encoding/json %+v", body, raw, env)
		}
		if i >= len(bodies) {
			continue
		}
		if (oldErr == nil) != (newErr == nil) {
			t.Errorf("%s:\n encoding/json: %v\n one pass:      %v", body, oldErr, newErr)
			continue
		}
		if oldErr != nil {
			if !IsPermanent(newErr) || prefix(oldErr) != prefix(newErr) {
				t.Errorf("%s:\n encoding/json: %v\n one pass:      %v", body, oldErr, newErr)
			}
			continue
		}
		if head.ID != env.ID || !head.OccurredAt.Equal(env.OccurredAt) || call == nil {
			t.Errorf("%s: one pass read %+v (call %v), encoding/json %+v", body, head, call != nil, env)
		}
	}
}

// prefix is an envelope error's kind: what it says before the details.
func prefix(err error) string {
	s, _, _ := strings.Cut(err.Error(), ":")
	return s
}

// A payload that breaks its schema fails as the payload's error, naming
// the JSON pointer inside the payload.
func TestDecodeEnvelopeOncePayloadErrors(t *testing.T) {
	for payload, want := range map[string]string{
		`{"sku":""}`:             "/sku: a non-empty string",
		`{"sku":"a","x":1}`:      "/x: no such property",
		`{"n":1}`:                `(root): required property "sku"`,
		`{"sku":"a","n":"many"}`: "/n: an integer",
		`{"sku":"a","n":1001}`:   "/n: an integer from 0 to 1000, got 1001",
		`"sku"`:                  "(root): an object",
	} {
		body := `{"id":"a","occurred_at":"2026-01-02T03:04:05Z","payload":` + payload + `}`
		_, _, err := decodeEnvelopeOnce([]byte(body), codedRoute().decodeAt)
		var pe *payloadError
		var ce *codec.Error
		if !errors.As(err, &pe) || !errors.As(err, &ce) || !strings.HasPrefix(pe.Error(), want) {
			t.Errorf("payload %s: %v, want a payload error starting %q", payload, err, want)
		}
	}
}

// Only a type that decodes itself gets the one-pass route.
func TestHandleFindsTheDecoder(t *testing.T) {
	if codedRoute().decodeAt == nil {
		t.Error("Handle[codedItem] has no one-pass decoder")
	}
	if r := Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil }); r.decodeAt != nil {
		t.Error("Handle[item] has a one-pass decoder; item does not implement codec.Decoder")
	}
}

// A generated-style type goes through publisher and consumer without
// Fact.Validate (codedFact's fails everything), validated as a value on
// the way out and decoded in one pass on the way in; the body is the
// envelope encoding/json reads; publish middleware still sees every
// publish; invalid values are refused before anything is sent, and bad
// bodies go to poison naming the place.
func TestOnePassPublishAndConsume(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "onepass", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := codedFact("item.added")
	got := make(chan Delivery, 4)
	items := make(chan codedItem, 4)
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v codedItem) error {
		got <- d
		items <- v
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	var seen atomic.Int32
	pub, _ := NewPublisher(conn, b.events(), WithPublishMiddleware(func(next PublishFunc) PublishFunc {
		return func(ctx context.Context, m *Outgoing) error {
			seen.Add(1)
			m.Headers["x-seen"] = "yes"
			return next(ctx, m)
		}
	}))
	ctx := context.Background()

	id := mustPublish(t, pub, f, codedItem{SKU: "a", N: 7})
	d, v := receive(t, got), receive(t, items)
	if d.MessageID != id || v != (codedItem{SKU: "a", N: 7}) || d.Headers["x-seen"] != "yes" {
		t.Errorf("consumed %+v %+v, want id %s, {a 7}, header x-seen", d, v, id)
	}
	h, err := pub.PublishAsync(ctx, f, codedItem{SKU: "b", N: 8})
	if err == nil {
		err = h.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d, v := receive(t, got), receive(t, items); d.MessageID != h.ID() || v.SKU != "b" || time.Since(d.OccurredAt) > time.Hour {
		t.Errorf("consumed %+v %+v after PublishAsync %s", d, v, h.ID())
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("middleware saw %d publishes, want 2", n)
	}

	for _, bad := range []codedItem{{SKU: ""}, {SKU: "c", N: 5000}} {
		_, err := pub.Publish(ctx, f, bad)
		if err == nil || !strings.Contains(err.Error(), "payload does not match its schema: /") {
			t.Errorf("Publish(%+v) = %v, want a schema error", bad, err)
		}
		if _, err := pub.PublishAsync(ctx, f, bad); err == nil {
			t.Errorf("PublishAsync(%+v) succeeded", bad)
		}
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("middleware saw %d publishes after the invalid ones, want 2", n)
	}

	// The wire format is the envelope, whoever reads it.
	raw := encodeForTest(t, f, codedItem{SKU: "d", N: 9})
	var env Envelope
	if err := json.Unmarshal(raw, &env); err != nil || string(env.Payload) != `{"sku":"d","n":9}` || env.ID == "" || env.OccurredAt.IsZero() {
		t.Errorf("body %s: %v", raw, err)
	}

	for body, failure := range map[string]string{
		`{"id":"x1","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a","n":-1}}`: "payload of item.added does not match its schema: /n: an integer from 0 to 1000",
		`{"id":"x2","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a","x":1}}`:  "payload of item.added does not match its schema: /x: no such property",
		`{"id":"x3","payload":{"sku":"a"}}`:                                             `envelope incomplete: missing ["occurred_at"]`,
		`<xml>not json</xml>`:                                                           "body is not a JSON envelope",
	} {
		b.publishRaw("item.added", []byte(body))
		checkPoison(t, b.get(spec.PoisonQueue), spec, b.events(), "item.added", 1, failure)
	}
	testenv.Eventually(t, "every bad body poisoned", func() bool { return conn.Counts(spec.Name).Get(Poisoned) == 4 })
}

func encodeForTest(t *testing.T, f Fact, v any) []byte {
	t.Helper()
	m, err := encodeFact(f, v)
	if err != nil {
		t.Fatal(err)
	}
	return m.body
}

// BenchmarkDecodeEnvelopeOnce is the consumer's decoding of one body, with
// no broker: for profiling the one-pass path beside the old one.
func BenchmarkDecodeEnvelopeOnce(b *testing.B) {
	body := []byte(`{"id":"0192e6a0-0000-7000-8000-000000000000","occurred_at":"2026-01-02T03:04:05.123456789Z","payload":{"sku":"BOOK-1","n":7}}`)
	r := codedRoute()
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := decodeEnvelopeOnce(body, r.decodeAt); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A type that does not decode itself: the envelope read in one pass,
	// the payload then decoded by encoding/json; and as it was before,
	// the envelope read by encoding/json too.
	for _, c := range []struct {
		name     string
		envelope func([]byte) (Envelope, error)
	}{{"raw-payload", decodeEnvelope}, {"encoding-json", decodeEnvelopeJSON}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				env, err := c.envelope(body)
				if err == nil {
					_, err = r.decode(env.Payload)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Requests of a generated-style type are read and written in one pass on
// both sides: the requester validates the request as a value and decodes
// the reply with its DecodeJSON, the responder decodes the request where
// it stands in the envelope and validates the reply as a value; neither
// side's Validate on bytes runs (codedRequest's fail everything).
func TestOnePassRequests(t *testing.T) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	fail := func([]byte) error { return errors.New("validated bytes on the one-pass path") }
	req := Request{Key: b.key, Validate: fail, ValidateReply: fail}
	res, err := NewResponder(conn, b.responder, []Answer{Respond(req, func(_ context.Context, d Delivery, q codedItem) (codedItem, error) {
		return codedItem{SKU: q.SKU + "!", N: q.N * 10}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- res.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	r := b.requester(t, conn)

	rep, err := Call[codedItem](context.Background(), r, req, codedItem{SKU: "a", N: 7})
	if err != nil || rep != (codedItem{SKU: "a!", N: 70}) {
		t.Fatalf("Call = %+v, %v; want {a! 70}", rep, err)
	}
	// The reply of 200 is over the schema's 1000: the responder refuses it.
	_, err = Call[codedItem](context.Background(), r, req, codedItem{SKU: "a", N: 200})
	var re *ReplyError
	if !errors.As(err, &re) || !re.Permanent || !strings.Contains(re.Message, "reply does not match its schema: /n") {
		t.Errorf("invalid reply: %v, want a permanent *ReplyError about /n", err)
	}
	// An invalid request never leaves the requester.
	_, err = Call[codedItem](context.Background(), r, req, codedItem{N: 1})
	if err == nil || !strings.Contains(err.Error(), "request does not match its schema: /sku") || !IsPermanent(err) {
		t.Errorf("invalid request: %v, want a permanent schema error", err)
	}
	if c := res.Counts(); c.Answered != 1 || c.Failed != 1 {
		t.Errorf("responder counts %+v, want 1 answered and 1 failed", c)
	}
}
