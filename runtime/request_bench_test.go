package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// BenchmarkRequest times round trips through a Requester and a Responder
// (what the generated Requester and responder constructor call) against a
// raw amqp091-go requester and responder doing the same work on the same
// queue: the same envelope and reply bodies, the request published with
// the mandatory flag and confirmed, replies through direct reply-to on the
// requesting channel and matched by correlation id, the responder with the
// same prefetch and concurrency decoding the request, publishing the reply
// with a confirm and then acking.
//
//	go test -run '^$' -bench Request ./runtime
func BenchmarkRequest(b *testing.B) {
	br := newRequestBroker(b)
	req := Request{Key: br.key}
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d/warren", callers), func(b *testing.B) {
			// Two services, two connections, as the raw pair has.
			conn := br.dial(Config{})
			stop := benchResponder(b, br, br.dial(Config{}), req)
			defer stop()
			r, err := NewRequester(conn, br.responder.Exchange)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			publishInParallel(b, callers, func(i int) error {
				rep, err := Call[quoteReply](context.Background(), r, req, quote{SKU: "s", N: i})
				if err == nil && rep.N != i {
					err = fmt.Errorf("call %d got the reply of %d", i, rep.N)
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("callers=%d/amqp091", callers), func(b *testing.B) {
			stop := rawResponder(b, br)
			defer stop()
			call := rawRequester(b, br)
			publishInParallel(b, callers, func(i int) error { return call(i) })
		})
	}
}

func benchResponder(b *testing.B, br *requestBroker, conn *Conn, req Request) (stop func()) {
	r, err := NewResponder(conn, br.responder, []Answer{Respond(req, func(_ context.Context, _ Delivery, q quote) (quoteReply, error) {
		return quoteReply{N: q.N}, nil
	})})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}

// rawRequester returns a call function of a requester written directly on
// amqp091-go: one confirm channel consuming direct reply-to, a map of
// waiting calls by correlation id.
func rawRequester(b *testing.B, br *requestBroker) func(n int) error {
	conn, err := amqp.Dial(br.url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	go func() {
		for range returns {
		}
	}()
	replies, err := ch.Consume(DirectReplyTo, "", true, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	waiting := map[string]chan []byte{}
	go func() {
		for d := range replies {
			mu.Lock()
			w := waiting[d.CorrelationId]
			delete(waiting, d.CorrelationId)
			mu.Unlock()
			if w != nil {
				w <- d.Body
			}
		}
	}()
	return func(n int) error {
		body, id, err := rawEnvelope(quote{SKU: "s", N: n})
		if err != nil {
			return err
		}
		w := make(chan []byte, 1)
		mu.Lock()
		waiting[id] = w
		mu.Unlock()
		dc, err := ch.PublishWithDeferredConfirm(br.responder.Exchange, br.key, true, false, amqp.Publishing{
			ContentType: "application/json", MessageId: id, CorrelationId: id, ReplyTo: DirectReplyTo,
			Type: br.key, Timestamp: time.Now(), Expiration: "30000", Body: body,
		})
		if err != nil {
			return err
		}
		if !dc.Wait() {
			return ErrNacked
		}
		var rep struct {
			Payload quoteReply `json:"payload"`
		}
		if err := json.Unmarshal(<-w, &rep); err != nil {
			return err
		}
		if rep.Payload.N != n {
			return errors.New("crossed reply")
		}
		return nil
	}
}

// rawResponder answers on amqp091-go with the responder's prefetch and
// concurrency: decode, reply with a confirm, ack.
func rawResponder(b *testing.B, br *requestBroker) (stop func()) {
	conn, err := amqp.Dial(br.url)
	if err != nil {
		b.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Qos(br.responder.Prefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	out, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := out.Confirm(false); err != nil {
		b.Fatal(err)
	}
	deliveries, err := ch.Consume(br.responder.Queue, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for range br.responder.Concurrency {
		wg.Go(func() {
			for d := range deliveries {
				var env struct {
					ID      string `json:"id"`
					Payload quote  `json:"payload"`
				}
				if err := json.Unmarshal(d.Body, &env); err != nil {
					b.Error(err)
					return
				}
				raw, _ := json.Marshal(replyBody{ID: env.ID, OccurredAt: time.Now().UTC(), Payload: mustJSON(quoteReply{N: env.Payload.N})})
				dc, err := out.PublishWithDeferredConfirm("", d.ReplyTo, false, false, amqp.Publishing{
					ContentType: "application/json", MessageId: env.ID, CorrelationId: d.CorrelationId, Body: raw,
				})
				if err == nil {
					dc.Wait()
				}
				_ = d.Ack(false)
			}
		})
	}
	return func() {
		_ = conn.Close()
		wg.Wait()
	}
}

func mustJSON(v any) json.RawMessage {
	raw, _ := json.Marshal(v)
	return raw
}
