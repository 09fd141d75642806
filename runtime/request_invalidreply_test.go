package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// handWrittenReplies are the bodies a responder written without warren
// answers with, by the request's sku.
var handWrittenReplies = map[string]struct {
	contentType, body string
}{
	"good":     {"application/json", `{"id":"r","occurred_at":"2026-03-01T12:00:00Z","payload":{"n":3}}`},
	"text":     {"text/plain", `hello from a responder that speaks no warren`},
	"neither":  {"application/json", `{"id":"r","occurred_at":"2026-03-01T12:00:00Z"}`},
	"schema":   {"application/json", `{"id":"r","occurred_at":"2026-03-01T12:00:00Z","payload":{"n":-7}}`},
	"type":     {"application/json", `{"id":"r","occurred_at":"2026-03-01T12:00:00Z","payload":{"n":"seven"}}`},
	"coded":    {"application/json", `{"id":"r","occurred_at":"2026-03-01T12:00:00Z","payload":{"sku":"a","n":"seven"}}`},
	"long":     {"text/plain", strings.Repeat("x", 5000)},
	"refusing": {"application/json", `{"id":"r","occurred_at":"2026-03-01T12:00:00Z","error":{"message":"not today","permanent":false}}`},
}

// respondByHand answers every request on the responder's queue with plain
// amqp091-go, as a responder written in another language would: the body
// handWrittenReplies holds for the request's sku, published to its
// reply_to with its correlation id. It returns how many requests it
// answered so far.
func respondByHand(t *testing.T, b *requestBroker) func() int {
	t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(b.responder.Queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			var req struct {
				Payload quote `json:"payload"`
			}
			if err := json.Unmarshal(d.Body, &req); err != nil {
				t.Errorf("hand-written responder: request %q: %v", d.Body, err)
			}
			rep, ok := handWrittenReplies[req.Payload.SKU]
			if !ok {
				t.Errorf("hand-written responder: no reply for sku %q", req.Payload.SKU)
			}
			err := ch.PublishWithContext(context.Background(), "", d.ReplyTo, false, false, amqp.Publishing{
				ContentType: rep.contentType, CorrelationId: d.CorrelationId, Body: []byte(rep.body),
			})
			if err != nil {
				t.Errorf("hand-written responder: reply: %v", err)
			}
			_ = d.Ack(false)
			answered <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		_ = ch.Close()
		<-done
	})
	return func() int { return len(answered) }
}

// A reply that cannot be used, from a responder that is not warren (one
// written by hand with another client), is a permanent error to the
// caller, matching ErrInvalidReply and naming the request, what was wrong
// and expected, and the start of the reply: asking again would get the
// same reply, so a caller that retries what is not permanent must not
// retry it. The responder's own error replies keep their mark.
func TestRequestInvalidReplyFromAHandWrittenResponderIsPermanent(t *testing.T) {
	b := newRequestBroker(t)
	answered := respondByHand(t, b)
	r := b.requester(t, b.dial(Config{}))
	req := quoteRequest(b.key)
	ctx := context.Background()

	rep, err := Call[quoteReply](ctx, r, req, quote{SKU: "good"})
	if err != nil || rep.N != 3 {
		t.Fatalf("good reply: Call = %+v, %v; want n=3", rep, err)
	}

	cases := []struct {
		sku  string
		call func() error
		want []string // in the error's text
	}{
		{"text", func() error { _, err := Call[quoteReply](ctx, r, req, quote{SKU: "text"}); return err },
			[]string{"not a JSON reply envelope", `expected {"id", "occurred_at", "payload"}`, `"hello from a responder that speaks no warren"`}},
		{"text", func() error { _, err := r.Call(ctx, req, quote{SKU: "text"}); return err },
			[]string{"not a JSON reply envelope", `"hello from a responder`}},
		{"neither", func() error { _, err := Call[quoteReply](ctx, r, req, quote{SKU: "neither"}); return err },
			[]string{`neither "payload" nor "error"`, `{\"id\":\"r\"`}},
		{"schema", func() error { _, err := Call[quoteReply](ctx, r, req, quote{SKU: "schema"}); return err },
			[]string{"reply does not match its schema: /n: expected at least 0", `the reply's payload: "{\"n\":-7}"`}},
		{"type", func() error { _, err := Call[quoteReply](ctx, r, req, quote{SKU: "type"}); return err },
			[]string{"reply does not decode into runtime.quoteReply", `"{\"n\":\"seven\"}"`}},
		{"coded", func() error { _, err := Call[codedItem](ctx, r, req, codedItem{SKU: "coded"}); return err },
			[]string{"reply does not match its schema", "n", `\"seven\"`}},
		{"long", func() error { _, err := Call[quoteReply](ctx, r, req, quote{SKU: "long"}); return err },
			[]string{"not a JSON reply envelope", "... (5000 bytes)"}},
	}
	for _, c := range cases {
		err := c.call()
		if err == nil {
			t.Errorf("%s reply: no error", c.sku)
			continue
		}
		if !IsPermanent(err) || !errors.Is(err, ErrInvalidReply) {
			t.Errorf("%s reply: %v (permanent %t, ErrInvalidReply %t); want a permanent ErrInvalidReply", c.sku, err, IsPermanent(err), errors.Is(err, ErrInvalidReply))
		}
		for _, w := range append(c.want, "request "+b.key+": ", ErrInvalidReply.Error()) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s reply: %v; want it to say %s", c.sku, err, w)
			}
		}
		if len(err.Error()) > 1000 {
			t.Errorf("%s reply: an error of %d bytes; want the reply cut short", c.sku, len(err.Error()))
		}
	}

	// An error reply is the responder's answer, permanent or not as it
	// says: not an invalid reply.
	_, err = Call[quoteReply](ctx, r, req, quote{SKU: "refusing"})
	var re *ReplyError
	if !errors.As(err, &re) || re.Message != "not today" || IsPermanent(err) || errors.Is(err, ErrInvalidReply) {
		t.Errorf("error reply: %v; want the responder's *ReplyError, not permanent", err)
	}
	if n := answered(); n != len(cases)+2 {
		t.Errorf("the responder answered %d requests; want %d, each asked once", n, len(cases)+2)
	}
}
