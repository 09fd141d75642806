package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A publish that fails before anything of it reached the broker does not
// spend its key's number: the broker unreachable (Publish and PublishAsync
// bounded by their ctx), or publish middleware refusing the fact. The
// next fact of the key takes the number, so the shard sees 1, 2, 3 and an
// ordered consumer reports no gap where nothing is missing.
func TestPublishNotSentKeepsItsKeysNumber(t *testing.T) {
	spec := orderedSpec("ordunsent")
	// Classic: RabbitMQ refuses basic.get on a quorum queue with a
	// single active consumer.
	spec.Shards, spec.QueueType = 1, topology.Classic
	b := newBroker(t, spec)
	p := newProxy(t, b.url, nil)
	conn := b.dial(Config{URLs: []string{p.url(b.url, "amqp")}})
	refuse := errors.New("refused by middleware")
	pub, err := NewPublisher(conn, b.events(), WithPublishMiddleware(func(next PublishFunc) PublishFunc {
		return func(ctx context.Context, out *Outgoing) error {
			if ctx.Value(refuseKey{}) != nil {
				return refuse
			}
			return next(ctx, out)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	f := orderedFact()
	mustPublish(t, pub, f, item{SKU: "x", N: 1})

	p.setDown(true)
	testenv.Eventually(t, "the connection lost", func() bool { return !conn.Health().Connected })
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	if _, err := pub.Publish(short(), f, item{SKU: "x", N: -1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish while the broker is unreachable: %v; want its ctx's deadline", err)
	}
	if _, err := pub.PublishAsync(short(), f, item{SKU: "x", N: -2}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PublishAsync while the broker is unreachable: %v; want its ctx's deadline", err)
	}
	p.setDown(false)
	testenv.Eventually(t, "the connection back", func() bool { return conn.Health().Connected })

	mustPublish(t, pub, f, item{SKU: "x", N: 2})
	refused := context.WithValue(context.Background(), refuseKey{}, true)
	if _, err := pub.Publish(refused, f, item{SKU: "x", N: -3}); !errors.Is(err, refuse) {
		t.Fatalf("Publish refused by middleware: %v", err)
	}
	mustPublish(t, pub, f, item{SKU: "x", N: 3})

	var got []string
	for range 3 {
		d := b.get(b.consumer(0).Shards[0])
		var env struct{ Payload item }
		if err := json.Unmarshal(d.Body, &env); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d#%v", env.Payload.N, d.Headers[HeaderSequence]))
	}
	if s := strings.Join(got, " "); s != "1#1 2#2 3#3" {
		t.Errorf("facts and their numbers %s; want 1#1 2#2 3#3: a publish that sent nothing spends no number", s)
	}
}

type refuseKey struct{}
