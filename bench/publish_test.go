package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/runtime"
)

// window is how many publishes every side keeps in flight.
const window = 256

// values is how many distinct orders the publishers cycle through; they
// are built untimed, as a service has its values before it publishes.
const values = 64

// BenchmarkPublish publishes b.N orders with publisher confirms, waiting
// for each one's own confirm, the mandatory flag set, window of them in
// flight:
//
//   - publishers=256: from 256 goroutines sharing one publisher; warren's
//     generated PublishOrderPlaced, raw amqp091-go (encoding/json of the
//     plain struct, UUIDv7, PublishWithDeferredConfirm, Wait) on one
//     channel, and watermill-amqp with confirms on and a pool of 256
//     channels (its publisher waits for one confirm per channel at a time);
//   - async=256: from one goroutine keeping 256 in flight; warren's
//     PublishOrderPlacedAsync then Pending.Wait against raw
//     PublishWithDeferredConfirm then DeferredConfirmation.Wait (watermill
//     has no pipelined call).
func BenchmarkPublish(b *testing.B) {
	for _, kind := range queueKinds {
		b.Run(kind, func(b *testing.B) {
			e := newEnv(b, kind)
			pub, err := benchevents.NewPublisher(e.conn)
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			orders := make([]benchevents.OrderPlaced, values)
			plains := make([]plainOrder, values)
			for i := range values {
				orders[i], plains[i] = order(i), plain(i)
			}
			ctx := context.Background()
			b.Run(fmt.Sprintf("publishers=%d", window), func(b *testing.B) {
				runSides(b, []side{
					{"warren", func(b *testing.B) {
						publishInParallel(b, func(i int) error {
							_, err := pub.PublishOrderPlaced(ctx, orders[i%values])
							return err
						})
						e.purge(b)
					}},
					{"amqp091", func(b *testing.B) {
						ch := confirmChannel(b, e.raw)
						defer ch.Close()
						publishInParallel(b, func(i int) error {
							dc, err := rawPublish(ch, plains[i%values])
							if err == nil && !dc.Wait() {
								err = runtime.ErrNacked
							}
							return err
						})
						e.purge(b)
					}},
					{"watermill", func(b *testing.B) {
						cfg := watermillConfig(e.queue)
						cfg.Publish.ChannelPoolSize = window
						wp, err := wmamqp.NewPublisherWithConnection(cfg, watermill.NopLogger{}, e.wm)
						if err != nil {
							b.Fatal(err)
						}
						publishInParallel(b, func(i int) error {
							body, err := json.Marshal(plainEnvelope{ID: uuid.NewString(), OccurredAt: time.Now().UTC(), Payload: plains[i%values]})
							if err != nil {
								return err
							}
							return wp.Publish(benchevents.OrderPlacedRoutingKey, message.NewMessage(watermill.NewUUID(), body))
						})
						if err := wp.Close(); err != nil {
							b.Fatal(err)
						}
						e.purge(b)
					}},
				})
			})
			b.Run(fmt.Sprintf("async=%d", window), func(b *testing.B) {
				runSides(b, []side{
					{"warren", func(b *testing.B) {
						publishPipelined(b, func(i int) (func() error, error) {
							h, err := pub.PublishOrderPlacedAsync(ctx, orders[i%values])
							if err != nil {
								return nil, err
							}
							return func() error { return h.Wait(ctx) }, nil
						})
						e.purge(b)
					}},
					{"amqp091", func(b *testing.B) {
						ch := confirmChannel(b, e.raw)
						defer ch.Close()
						publishPipelined(b, func(i int) (func() error, error) {
							dc, err := rawPublish(ch, plains[i%values])
							if err != nil {
								return nil, err
							}
							return func() error {
								if !dc.Wait() {
									return runtime.ErrNacked
								}
								return nil
							}, nil
						})
						e.purge(b)
					}},
				})
			})
		})
	}
}

// rawPublish is what a hand-written amqp091-go publisher does with the
// same envelope, headers and flags as warren's.
func rawPublish(ch *amqp.Channel, p plainOrder) (*amqp.DeferredConfirmation, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	body, err := json.Marshal(plainEnvelope{ID: id.String(), OccurredAt: now, Payload: p})
	if err != nil {
		return nil, err
	}
	return ch.PublishWithDeferredConfirm("bench.events", benchevents.OrderPlacedRoutingKey, true, false, amqp.Publishing{
		ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id.String(),
		Timestamp: now, Type: benchevents.OrderPlacedRoutingKey,
		Headers: amqp.Table{runtime.HeaderFactVersion: int64(1)}, Body: body,
	})
}

// publishInParallel publishes b.N messages from window goroutines.
func publishInParallel(b *testing.B, publish func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	m := startMeter(b)
	for range window {
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
	m.stop()
}

// publishPipelined publishes b.N messages from one goroutine, waiting for
// the oldest confirm whenever window are in flight.
func publishPipelined(b *testing.B, publish func(i int) (wait func() error, err error)) {
	ring := make([]func() error, window)
	m := startMeter(b)
	for i := range b.N {
		if w := ring[i%window]; w != nil {
			if err := w(); err != nil {
				b.Fatal(err)
			}
		}
		w, err := publish(i)
		if err != nil {
			b.Fatal(err)
		}
		ring[i%window] = w
	}
	for i := range window {
		if w := ring[(b.N+i)%window]; w != nil {
			if err := w(); err != nil {
				b.Fatal(err)
			}
		}
	}
	m.stop()
}
