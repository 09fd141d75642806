package streamoffset_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// A consumer of a super stream keeps its offsets on the partitions: its
// lag is read on each, for each name asked, the partitions' tails at
// once, so that empty partitions cost one tail wait rather than one per
// partition and name. Read, which gives one lag, refuses it and says what
// reads them.
func TestLagOfASuperStreamPerPartition(t *testing.T) {
	stream := testenv.Name("offsets-super")
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: stream, Bindings: []string{"item.#"}, MaxAge: time.Hour, Partitions: 3}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("group"), Bindings: []string{"item.#"}, Stream: stream}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := top.Consumers[0]
	if got := streamoffset.LagStreams(c); !slices.Equal(got, c.Partitions) || len(got) != 3 {
		t.Fatalf("LagStreams of a super stream's consumer: %v, want its partitions %v", got, c.Partitions)
	}
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	probe, err := amqp.Dial(raw)
	if err != nil {
		t.Fatal(err)
	}
	version, _ := probe.Properties["version"].(string)
	_ = probe.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleteAtEnd(t, raw, top)
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Declare(ctx, top)
	if !topology.SupportsSuperStreams(version) {
		var ve *runtime.BrokerVersionError
		if !errors.As(err, &ve) {
			t.Fatalf("Declare of a super stream on RabbitMQ %s: %v; want a *runtime.BrokerVersionError", version, err)
		}
		t.Logf("RabbitMQ %s has no super streams: Declare refused them; their lags are read on RabbitMQ 3.11 or later", version)
		return
	}
	if err != nil {
		t.Fatal(err)
	}

	if _, err := streamoffset.ReadLag(ctx, conn, c, ""); err == nil || !strings.Contains(err.Error(), `reads super stream "`+stream+`", which keeps an offset per partition (3)`) {
		t.Errorf("ReadLag of a super stream's consumer: %v; want a refusal naming the super stream and its partitions", err)
	}

	r := streamoffset.NewLagReader(conn)
	defer r.Close()
	lags := r.ReadEach(ctx, c, "", c.Name+".rebuild")
	if len(lags) != 6 {
		t.Fatalf("ReadEach of 3 partitions and 2 names: %d lags, want 6: %+v", len(lags), lags)
	}
	for i, l := range lags {
		name := c.Name
		if i >= 3 {
			name += ".rebuild"
		}
		if l.Err != nil || l.Stream != c.Partitions[i%3] || l.SuperStream != stream || l.Name != name || l.HasTail || l.HasStored {
			t.Errorf("lag %d: %+v, want %s of %s under %s, empty, nothing stored", i, l, c.Partitions[i%3], stream, name)
		}
	}
	all, err := streamoffset.ReadLags(ctx, conn, c, "")
	if err != nil || len(all) != 3 {
		t.Fatalf("ReadLags: %d lags, %v; want one per partition", len(all), err)
	}
}

// A stream that does not exist (the topology not declared) is an error
// matching ErrNoStream, so that a caller can say so instead of failing.
func TestLagOfAStreamNotDeclared(t *testing.T) {
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	top := streamTopology(t) // never declared
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = streamoffset.ReadLag(ctx, conn, top.Consumers[0], "")
	if !errors.Is(err, streamoffset.ErrNoStream) || !strings.Contains(err.Error(), top.Consumers[0].Stream) {
		t.Fatalf("ReadLag of a stream not declared: %v; want an error matching ErrNoStream naming the stream", err)
	}
}
