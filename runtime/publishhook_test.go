package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A header added by publish middleware reaches consumer middleware in
// Delivery.Headers, on the first attempt and on the retry; the publish
// middleware sees the confirm's outcome.
func TestPublishMiddlewareHeadersReachConsumerMiddleware(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "hooked", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	f := itemFact("item.added")

	var mu sync.Mutex
	var seen []string // the header's value at each handler call
	var outcomes []error
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if d.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})}, WithMiddleware(func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, d Delivery) error {
			mu.Lock()
			v, _ := d.Headers["x-test-trace"].(string)
			seen = append(seen, v)
			mu.Unlock()
			return next(ctx, d)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	defer stop()
	pub, _ := NewPublisher(conn, b.events(), WithPublishMiddleware(func(next PublishFunc) PublishFunc {
		return func(ctx context.Context, m *Outgoing) error {
			if m.RoutingKey != "item.added" || m.MessageID == "" || m.Headers[HeaderFactVersion] != int64(f.Version) {
				t.Errorf("publish middleware saw %+v", *m)
			}
			m.Headers["x-test-trace"] = "trace-" + m.MessageID
			err := next(ctx, m)
			mu.Lock()
			outcomes = append(outcomes, err)
			mu.Unlock()
			return err
		}
	}))
	id := mustPublish(t, pub, f, item{SKU: "a"})

	testenv.Eventually(t, "the retry acked", func() bool { return conn.Counts(b.consumer(0).Name).Get(Acked) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "trace-"+id || seen[1] != "trace-"+id {
		t.Errorf("consumer middleware saw x-test-trace %q on its calls, want %q twice", seen, "trace-"+id)
	}
	if len(outcomes) != 1 || outcomes[0] != nil {
		t.Errorf("publish middleware saw outcomes %v, want one nil (the confirm)", outcomes)
	}
}
