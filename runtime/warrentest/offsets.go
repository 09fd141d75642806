package warrentest

import (
	"context"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime"
)

// offsetStore keeps stream consumers' offsets in the bus, where RabbitMQ
// keeps them on the broker (over its stream protocol): the stream
// consumers started on the bus store and query them here, and a test
// reads them with [Bus.StoredOffset].
type offsetStore struct {
	mu   sync.Mutex
	offs map[[2]string]int64 // by offset name and stream
}

// busOffsets is the store a Conn opens on the bus; it also joins the
// consumer groups of super streams, as runtime/streamoffset's does.
type busOffsets struct {
	s *offsetStore
	b *Bus
}

var (
	_ runtime.GroupStore        = busOffsets{}
	_ runtime.StreamReader      = busOffsets{}
	_ runtime.StreamWriterStore = busOffsets{}
	_ runtime.IntervalStore     = busOffsets{}
	_ runtime.TailReader        = busOffsets{}
)

func (o busOffsets) StoreOffset(_ context.Context, consumer, stream string, offset int64) error {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	o.s.offs[[2]string{consumer, stream}] = offset
	return nil
}

func (o busOffsets) QueryOffset(_ context.Context, consumer, stream string) (int64, bool, error) {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	off, ok := o.s.offs[[2]string{consumer, stream}]
	return off, ok, nil
}

func (busOffsets) Close() error { return nil }

// Tail is the offset of the last fact in a stream of the bus, as
// runtime/streamoffset's store finds it on RabbitMQ: with it, a stream
// consumer's "next" or "last" is fixed at its first start on the bus as
// on a broker.
func (o busOffsets) Tail(_ context.Context, stream string) (int64, bool, error) {
	st, ok := o.b.broker.Queue(stream)
	if !ok {
		return 0, false, fmt.Errorf("the tail of stream %q: it does not exist", stream)
	}
	return int64(st.Appended) - 1, st.Appended > 0, nil
}

// StoreInterval makes the stream consumers on the bus store their offset
// each time it advances (unless their WithOffsetStoreInterval says
// otherwise): a store costs the bus nothing, and once the bus is idle
// ([Bus.Idle]) every settled fact's offset is stored.
func (busOffsets) StoreInterval() time.Duration { return 0 }

// Writer writes into a stream of the bus as the stream protocol's
// producer writes into RabbitMQ's: for a stream declared with publish
// "direct", a fact goes into the stream, not through the events exchange.
func (o busOffsets) Writer(_ context.Context, stream string) (runtime.StreamWriter, error) {
	if _, ok := o.b.broker.Queue(stream); !ok {
		return nil, fmt.Errorf("write into stream %q: it does not exist: %w", stream, runtime.ErrStreamRefused)
	}
	return busWriter{b: o.b, stream: stream}, nil
}

// busWriter is a stream's writer on the bus: each write is in the stream
// once Write returns, and confirmed at once.
type busWriter struct {
	b      *Bus
	stream string
}

func (w busWriter) Write(m runtime.StreamOutgoing, done func(error)) error {
	pub := amqp.Publishing{
		Headers: amqp.Table(m.Headers), ContentType: m.ContentType, DeliveryMode: amqp.Persistent,
		MessageId: m.MessageID, Timestamp: m.Timestamp, Type: m.Type, Body: m.Body,
	}
	if err := w.b.broker.WriteStream(w.stream, m.Exchange, m.RoutingKey, pub); err != nil {
		return err
	}
	go done(nil)
	return nil
}

func (busWriter) Lost() <-chan struct{} { return nil }
func (busWriter) Close() error          { return nil }

// StreamOffsets is the bus's [runtime.OffsetDialer]: the Conn of the bus
// ([Bus.Conn]) keeps its stream consumers' offsets in the bus with it. A
// service that dials the bus by itself ([Bus.URL]) with stream consumers
// sets it as its runtime.Config.StreamOffsets.
func (b *Bus) StreamOffsets() runtime.OffsetDialer {
	return func(context.Context, runtime.StreamEndpoint) (runtime.OffsetStore, error) {
		return busOffsets{b.offsets, b}, nil
	}
}

// StoredOffset returns the offset stream consumer has stored on the
// stream it reads: every fact up to it is settled (handled, or copied to
// its retry ladder or poison queue). found is false while it stored none.
// The offset is the one stored under the consumer's name (not a replay's
// offset name). A consumer name the topology lacks, or one that reads no
// stream, fails the test.
func (b *Bus) StoredOffset(consumer string) (offset int64, found bool) {
	b.t.Helper()
	c := b.mustKnow(consumer)
	switch {
	case c.Stream == "":
		b.t.Fatalf("warrentest: StoredOffset: consumer %q reads no stream", consumer)
	case len(c.Partitions) > 0:
		b.t.Fatalf("warrentest: StoredOffset: consumer %q reads super stream %q, an offset per partition: use PartitionOffsets", consumer, c.Stream)
	}
	b.settle()
	off, ok, _ := busOffsets{b.offsets, b}.QueryOffset(b.ctx, consumer, c.Stream)
	return off, ok
}

// PartitionOffsets returns the offsets a consumer of a super stream has
// stored, by partition; a partition it stored none on is missing. A
// consumer name the topology lacks, or one that reads no super stream,
// fails the test.
func (b *Bus) PartitionOffsets(consumer string) map[string]int64 {
	b.t.Helper()
	c := b.mustKnow(consumer)
	if len(c.Partitions) == 0 {
		b.t.Fatalf("warrentest: PartitionOffsets: consumer %q reads no super stream", consumer)
	}
	b.settle()
	out := map[string]int64{}
	for _, p := range c.Partitions {
		if off, ok, _ := (busOffsets{b.offsets, b}).QueryOffset(b.ctx, consumer, p); ok {
			out[p] = off
		}
	}
	return out
}
