package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/runtime"
)

// BenchmarkConsume drains b.N envelopes, put in the work queue untimed,
// with the same prefetch and handler concurrency on every side:
//
//   - warren: the generated consumer (decode and validate the payload,
//     call the handler, ack);
//   - amqp091-ack: raw amqp091-go that only acks;
//   - amqp091-json: raw amqp091-go that json.Unmarshals the body into a
//     plain struct of the same shape, without validation, then acks;
//   - watermill: watermill-amqp's subscriber (one subscription per handler
//     goroutine, each with the prefetch), json.Unmarshal as above, Ack.
func BenchmarkConsume(b *testing.B) {
	for _, kind := range queueKinds {
		b.Run(kind, func(b *testing.B) {
			e := newEnv(b, kind)
			for _, prefetch := range []int{10, 200} {
				for _, conc := range []int{1, 8} {
					b.Run(fmt.Sprintf("prefetch=%d/concurrency=%d", prefetch, conc), func(b *testing.B) {
						runSides(b, []side{
							{"warren", func(b *testing.B) { e.consumeWarren(b, prefetch, conc) }},
							{"amqp091-ack", func(b *testing.B) { e.consumeRaw(b, prefetch, conc, false) }},
							{"amqp091-json", func(b *testing.B) { e.consumeRaw(b, prefetch, conc, true) }},
							{"watermill", func(b *testing.B) { e.consumeWatermill(b, prefetch, conc) }},
						})
					})
				}
			}
		})
	}
}

func factVersion(string) amqp.Table { return amqp.Table{runtime.HeaderFactVersion: int64(1)} }

// handler is the generated consumer's handler: it looks at the fact, as
// any handler would.
type handler struct{ b *testing.B }

func (h handler) HandleOrderPlaced(_ context.Context, _ runtime.Delivery, o benchevents.OrderPlaced) error {
	if len(o.Lines) == 0 {
		h.b.Error("decoded an order without lines")
	}
	return nil
}

func (e *env) consumeWarren(b *testing.B, prefetch, conc int) {
	e.fill(b, b.N, factVersion)
	done := e.acks.arm(b.N)
	m := startMeter(b)
	opts := []runtime.ConsumerOption{runtime.WithPrefetch(prefetch), runtime.WithConcurrency(conc)}
	var c *runtime.Consumer
	var err error
	if e.kind == "quorum" {
		c, err = benchevents.NewBenchQuorumConsumer(e.conn, handler{b}, opts...)
	} else {
		c, err = benchevents.NewBenchClassicConsumer(e.conn, handler{b}, opts...)
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	<-done
	m.stop()
	cancel()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
}

func (e *env) consumeRaw(b *testing.B, prefetch, conc int, decode bool) {
	e.fill(b, b.N, factVersion)
	m := startMeter(b)
	ch, err := e.raw.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Qos(prefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	deliveries, err := ch.Consume(e.queue, "bench", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for d := range deliveries {
				if decode {
					var env plainEnvelope
					if err := json.Unmarshal(d.Body, &env); err != nil || len(env.Payload.Lines) == 0 {
						b.Errorf("bad message: %v", err)
					}
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
	m.stop()
	// Cancel, then wait for the workers: closing a channel that is still
	// acking races with the next channel reusing its id.
	if err := ch.Cancel("bench", false); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
}

// watermillHeaders are what watermill's marshaler reads: the message uuid,
// and only string metadata.
func watermillHeaders(id string) amqp.Table {
	return amqp.Table{wmamqp.DefaultMessageUUIDHeaderKey: id}
}

func (e *env) consumeWatermill(b *testing.B, prefetch, conc int) {
	e.fill(b, b.N, watermillHeaders)
	cfg := watermillConfig(e.queue)
	cfg.Consume.Qos.PrefetchCount = prefetch
	m := startMeter(b)
	sub, err := wmamqp.NewSubscriberWithConnection(cfg, watermill.NopLogger{}, e.wm)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var handled atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range conc {
		msgs, err := sub.Subscribe(ctx, benchevents.OrderPlacedRoutingKey)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for msg := range msgs {
				var env plainEnvelope
				if err := json.Unmarshal(msg.Payload, &env); err != nil || len(env.Payload.Lines) == 0 {
					b.Errorf("bad message: %v", err)
				}
				msg.Ack()
				if handled.Add(1) == int64(b.N) {
					close(done)
				}
			}
		})
	}
	<-done
	m.stop()
	cancel()
	if err := sub.Close(); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
}

// watermillConfig is watermill-amqp's durable queue configuration pointed
// at the generated topology: publish to the events exchange with the
// fact's routing key, consume the work queue, confirms on. The topology is
// warren's, declared already: watermill declares nothing.
func watermillConfig(queue string) wmamqp.Config {
	cfg := wmamqp.NewDurableQueueConfig("")
	cfg.Exchange.GenerateName = wmamqp.GenerateExchangeNameConstant("bench.events")
	cfg.Queue.GenerateName = wmamqp.GenerateQueueNameConstant(queue)
	cfg.Publish.GenerateRoutingKey = func(string) string { return benchevents.OrderPlacedRoutingKey }
	cfg.Publish.ConfirmDelivery = true
	cfg.TopologyBuilder = declared{}
	return cfg
}

// declared is a watermill TopologyBuilder for a topology that exists.
type declared struct{}

func (declared) BuildTopology(*amqp.Channel, wmamqp.BuildTopologyParams, wmamqp.Config, watermill.LoggerAdapter) error {
	return nil
}
func (declared) ExchangeDeclare(*amqp.Channel, string, wmamqp.Config) error { return nil }
