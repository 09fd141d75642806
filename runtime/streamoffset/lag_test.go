package streamoffset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// The tail is exact when the broker writes many facts in one chunk: the
// last chunk's first offset plus its entries. Lag counts from the offset
// stored.
func TestLagOfChunksOfManyFacts(t *testing.T) {
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	top := streamTopology(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port, Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := top.Consumers[0]

	empty, err := streamoffset.ReadLag(ctx, conn, c, "")
	if err != nil || empty.HasTail || empty.HasStored {
		t.Fatalf("an empty stream: %+v, %v", empty, err)
	}

	// 500 facts in flight at once: the broker writes them in few chunks.
	storeFacts(ctx, t, conn, c.Stream, 500)
	l, err := streamoffset.ReadLag(ctx, conn, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if !l.HasTail || l.Tail != 499 || l.HasStored {
		t.Fatalf("after 500 facts: %+v, want tail 499 and nothing stored", l)
	}
	if _, ok := l.Offsets(); ok {
		t.Fatalf("lag known with nothing stored: %+v", l)
	}
}

// A lag's figures are nil where they are not known, as a report's nulls.
func TestLagFigures(t *testing.T) {
	show := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	for _, c := range []struct {
		lag  streamoffset.Lag
		want string
	}{
		{streamoffset.Lag{}, "null null 0"},
		{streamoffset.Lag{Tail: 9, HasTail: true}, "9 null null"},
		{streamoffset.Lag{Tail: 9, HasTail: true, Stored: 4, HasStored: true}, "9 4 5"},
		{streamoffset.Lag{Tail: 3, HasTail: true, Stored: 4, HasStored: true}, "3 4 0"},
		{streamoffset.Lag{Tail: 2, HasTail: true, Start: 0, HasStart: true}, "2 null 3"},
	} {
		tail, stored, lag := c.lag.Figures()
		if got := show(tail) + " " + show(stored) + " " + show(lag); got != c.want {
			t.Errorf("%+v: figures %s, want %s", c.lag, got, c.want)
		}
	}
}

// A Conn's stream endpoint carries the broker's version; with it, on a
// broker that answers a stream's stats (RabbitMQ 3.11 on), the tail of an
// empty stream is known at once: asked to wait an hour for a last chunk,
// the reading answers that there is none. An earlier broker cannot tell,
// and the reading waits its bound (DefaultTailWait) for a chunk.
func TestTailOfAnEmptyStreamIsKnownAtOnce(t *testing.T) {
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	top := streamTopology(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port, Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ep, err := conn.StreamEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	if ep.BrokerVersion == "" {
		t.Fatal("the Conn's stream endpoint does not carry the broker's version")
	}
	if !topology.VersionAtLeast(ep.BrokerVersion, 3, 11) {
		t.Skipf("RabbitMQ %s does not answer a stream's stats", ep.BrokerVersion)
	}
	s, err := streamproto.Open(ctx, streamproto.Endpoint(ep))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stream := top.Consumers[0].Stream
	if _, found, err := s.TailWithin(ctx, stream, time.Hour); err != nil || found {
		t.Fatalf("the tail of an empty stream: found %v, %v; want none", found, err)
	}
	storeFacts(ctx, t, conn, stream, 1)
	if last, found, err := s.TailWithin(ctx, stream, time.Hour); err != nil || !found || last != 0 {
		t.Fatalf("the tail after one fact: %d, found %v, %v; want 0", last, found, err)
	}
}

// A consumer whose start was fixed at an empty stream's first offset,
// with nothing stored under its name since, has a lag: every offset of the
// stream, its three facts and the record of the start itself (the
// stream's first offset, which a lag counts as it counts every
// offset-tracking record).
func TestLagFromAFixedStart(t *testing.T) {
	raw := testenv.AMQPURL(t)
	top := streamTopology(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: testenv.StreamPort(t), Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := top.Consumers[0]
	ep, err := conn.StreamEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	s, err := streamproto.Open(ctx, streamproto.Endpoint(ep))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// What the consumer stores when its "next" is fixed at offset 0.
	if err := s.StoreOffset(ctx, c.Name+runtime.StartSuffix, c.Stream, 0); err != nil {
		t.Fatal(err)
	}
	storeFacts(ctx, t, conn, c.Stream, 3)
	l, err := streamoffset.ReadLag(ctx, conn, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := l.Offsets(); !ok || l.Tail != 3 || n != 4 || l.HasStored || !l.HasStart {
		t.Fatalf("lag %d (known %v) of %+v; want tail 3 and lag 4, from the fixed start, nothing stored", n, ok, l)
	}
}

// storeFacts publishes n facts straight into stream, all in flight at
// once, and waits for the broker's confirms.
func storeFacts(ctx context.Context, t *testing.T, conn *runtime.Conn, stream string, n int) {
	t.Helper()
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	var confirms []*amqp.DeferredConfirmation
	for range n {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", stream, false, false, amqp.Publishing{Body: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		confirms = append(confirms, dc)
	}
	for _, dc := range confirms {
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("confirm: %v %v", ok, err)
		}
	}
}
