package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// The benchmarks run warren and a raw amqp091-go baseline side by side on
// the same queue, doing the same work: the same envelope, publisher
// confirms with the mandatory flag, one channel shared by every publishing
// goroutine; on the consuming side the same prefetch and concurrency, the
// envelope and payload decoded, one ack per message. What differs is the
// runtime's machinery: confirm bookkeeping, settlement, counters, logging.
//
//	go test -run '^$' -bench . ./runtime

var benchConcurrency = []int{1, 16, 64}

func BenchmarkPublish(b *testing.B) {
	br := newBroker(b, topology.ConsumerSpec{Name: "bench-pub", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := br.dial(Config{})
	queue := br.consumer(0).Queue
	f := Fact{RoutingKey: "item.added", Version: 1}
	for _, n := range benchConcurrency {
		b.Run(fmt.Sprintf("publishers=%d/warren", n), func(b *testing.B) {
			pub, _ := NewPublisher(conn, br.events())
			defer pub.Close()
			publishInParallel(b, n, func(i int) error {
				_, err := pub.Publish(context.Background(), f, item{SKU: "sku-1", N: i})
				return err
			})
			br.purge(b, queue)
		})
		b.Run(fmt.Sprintf("publishers=%d/amqp091", n), func(b *testing.B) {
			ch := br.confirmChannel(b)
			defer ch.Close()
			publishInParallel(b, n, func(i int) error {
				body, id, err := rawEnvelope(item{SKU: "sku-1", N: i})
				if err != nil {
					return err
				}
				dc, err := ch.PublishWithDeferredConfirm(br.events(), f.RoutingKey, true, false, amqp.Publishing{
					ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id,
					Timestamp: time.Now(), Type: f.RoutingKey, Headers: amqp.Table{HeaderFactVersion: int64(1)}, Body: body,
				})
				if err != nil {
					return err
				}
				if !dc.Wait() {
					return ErrNacked
				}
				return nil
			})
			br.purge(b, queue)
		})
	}
}

func BenchmarkConsume(b *testing.B) {
	br := newBroker(b, topology.ConsumerSpec{Name: "bench-sub", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := br.dial(Config{})
	spec := br.consumer(0)
	f := Fact{RoutingKey: "item.added", Version: 1}
	for _, n := range []int{1, 8} {
		prefetch := 64
		b.Run(fmt.Sprintf("concurrency=%d/warren", n), func(b *testing.B) {
			br.fill(b, b.N)
			var handled atomic.Int64
			done := make(chan struct{})
			c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
				if handled.Add(1) == int64(b.N) {
					close(done)
				}
				return nil
			})}, WithConcurrency(n), WithPrefetch(prefetch))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			stop := run(b, c)
			<-done
			b.StopTimer()
			if err := stop(); err != nil {
				b.Fatal(err)
			}
		})
		b.Run(fmt.Sprintf("concurrency=%d/amqp091", n), func(b *testing.B) {
			br.fill(b, b.N)
			ch, err := br.raw.Channel()
			if err != nil {
				b.Fatal(err)
			}
			defer ch.Close()
			if err := ch.Qos(prefetch, 0, false); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			deliveries, err := ch.Consume(spec.Queue, "bench", false, false, false, false, nil)
			if err != nil {
				b.Fatal(err)
			}
			var handled atomic.Int64
			done := make(chan struct{})
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					for d := range deliveries {
						var env Envelope
						var v item
						if json.Unmarshal(d.Body, &env) != nil || json.Unmarshal(env.Payload, &v) != nil {
							b.Error("bad message")
						}
						if err := d.Ack(false); err != nil {
							b.Error(err)
						}
						if handled.Add(1) == int64(b.N) {
							close(done)
						}
					}
				})
			}
			<-done
			b.StopTimer()
			// Cancel, then wait for the workers: closing a channel that is
			// still acking races with the next channel reusing its id.
			if err := ch.Cancel("bench", false); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
		})
	}
}

// publishInParallel publishes b.N messages from n goroutines.
func publishInParallel(b *testing.B, n int, publish func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range n {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := publish(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

func rawEnvelope(payload any) ([]byte, string, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", err
	}
	body, err := json.Marshal(Envelope{ID: id.String(), OccurredAt: time.Now().UTC(), Payload: p})
	return body, id.String(), err
}

// confirmChannel opens a raw channel in confirm mode whose returns are
// drained, as any mandatory publisher must.
func (br *broker) confirmChannel(t testing.TB) *amqp.Channel {
	t.Helper()
	ch, err := br.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() {
		for range returns {
		}
	}()
	return ch
}

// fill puts n envelopes in the work queue of the first consumer, pipelined.
func (br *broker) fill(t testing.TB, n int) {
	t.Helper()
	ch := br.confirmChannel(t)
	defer ch.Close()
	var pending []*amqp.DeferredConfirmation
	for i := range n {
		body, id, err := rawEnvelope(item{SKU: "sku-1", N: i})
		if err != nil {
			t.Fatal(err)
		}
		dc, err := ch.PublishWithDeferredConfirm(br.events(), "item.added", true, false, amqp.Publishing{
			ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id, Type: "item.added", Body: body,
		})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, dc)
	}
	for _, dc := range pending {
		if !dc.Wait() {
			t.Fatal("fill: nacked")
		}
	}
}

func (br *broker) purge(t testing.TB, queue string) {
	t.Helper()
	ch, err := br.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueuePurge(queue, false); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPublishAsync publishes b.N facts from one goroutine with a
// window of them in flight: warren's PublishAsync and Pending.Wait against
// amqp091's PublishWithDeferredConfirm and DeferredConfirmation.Wait.
func BenchmarkPublishAsync(b *testing.B) {
	br := newBroker(b, topology.ConsumerSpec{Name: "bench-async", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := br.dial(Config{})
	queue := br.consumer(0).Queue
	f := Fact{RoutingKey: "item.added", Version: 1}
	const window = 256
	ctx := context.Background()
	b.Run(fmt.Sprintf("window=%d/warren", window), func(b *testing.B) {
		pub, _ := NewPublisher(conn, br.events())
		defer pub.Close()
		pending := make([]*Pending, 0, window)
		flush := func() {
			for _, h := range pending {
				if err := h.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
			pending = pending[:0]
		}
		b.ResetTimer()
		for i := range b.N {
			h, err := pub.PublishAsync(ctx, f, item{SKU: "sku-1", N: i})
			if err != nil {
				b.Fatal(err)
			}
			if pending = append(pending, h); len(pending) == window {
				flush()
			}
		}
		flush()
		b.StopTimer()
		br.purge(b, queue)
	})
	b.Run(fmt.Sprintf("window=%d/amqp091", window), func(b *testing.B) {
		ch := br.confirmChannel(b)
		defer ch.Close()
		pending := make([]*amqp.DeferredConfirmation, 0, window)
		flush := func() {
			for _, dc := range pending {
				if !dc.Wait() {
					b.Fatal(ErrNacked)
				}
			}
			pending = pending[:0]
		}
		b.ResetTimer()
		for i := range b.N {
			body, id, err := rawEnvelope(item{SKU: "sku-1", N: i})
			if err != nil {
				b.Fatal(err)
			}
			dc, err := ch.PublishWithDeferredConfirm(br.events(), f.RoutingKey, true, false, amqp.Publishing{
				ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id,
				Timestamp: time.Now(), Type: f.RoutingKey, Headers: amqp.Table{HeaderFactVersion: int64(1)}, Body: body,
			})
			if err != nil {
				b.Fatal(err)
			}
			if pending = append(pending, dc); len(pending) == window {
				flush()
			}
		}
		flush()
		b.StopTimer()
		br.purge(b, queue)
	})
}
