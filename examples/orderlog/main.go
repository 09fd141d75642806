// Command orderlog shows a stream consumer built on orderlogevents, the
// package generated from examples/orderlog/events (make generate).
//
// The order facts are kept on the stream orders-log, which the publisher
// writes them into directly, over the stream protocol ("publish":
// "direct" in warren.json: nothing else binds them). The order-history
// consumer reads it with the same generated handler interface as a queue
// consumer: the first time from the first fact the stream holds, so facts
// published before it ever ran are handled too; after a restart from the
// offset it stored on the broker, so it handles exactly the facts written
// while it was stopped. Then it replays: the stream is read once more for
// the same consumer, under a fresh offset name, from the offset of this
// run's first fact and for at most two facts, as a rebuild of the history
// would (warren replay --from stream does the same from the command line);
// the consumer's own offset does not move. It needs the broker's
// rabbitmq_stream plugin (rabbitmq-plugins enable rabbitmq_stream),
// through which the facts are written and the offsets kept.
//
//	go run ./examples/orderlog
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/warrenbus/warren/examples/orderlog/orderlogevents"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

const defaultURL = "amqp://guest:guest@127.0.0.1:5672/"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The run takes seconds; the deadline only stops one against a broker
	// that never answers.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := os.Getenv("WARREN_AMQP_URL")
	if url == "" {
		url = defaultURL
	}
	// The stream protocol's port, where the consumer keeps its offset:
	// 0 is RabbitMQ's default (see runtime.Config.StreamPort).
	streamPort := 0
	if p := os.Getenv("WARREN_STREAM_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "orderlog: WARREN_STREAM_PORT %q: expected a port number\n", p)
			os.Exit(2)
		}
		streamPort = n
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if _, err := run(ctx, url, streamPort, os.Stdout, logger); err != nil {
		fmt.Fprintln(os.Stderr, "orderlog:", err)
		os.Exit(1)
	}
}

// run publishes orders, reads them from the stream, stops the consumer,
// publishes a shipment, and starts the consumer again. It returns the
// facts each run handled, by order id.
func run(ctx context.Context, url string, streamPort int, out io.Writer, logger *slog.Logger) ([][]string, error) {
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs: []string{url}, StreamPort: streamPort, Topology: &orderlogevents.Topology, Logger: logger, ConnectionName: "orderlog-demo",
	})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	pub, err := orderlogevents.NewPublisher(conn)
	if err != nil {
		return nil, err
	}
	defer pub.Close()

	// Published before the consumer ever ran: a queue consumer declared now
	// would never see them; the stream keeps them.
	for _, o := range []orderlogevents.OrderPlaced{{OrderID: "o-1", Total: 12.5}, {OrderID: "o-2", Total: 40}} {
		if _, err := pub.PublishOrderPlaced(ctx, o); err != nil {
			return nil, err
		}
	}
	first, err := readUntil(ctx, conn, out, "first run", 2)
	if err != nil {
		return nil, err
	}
	// Where this run's facts begin: on a broker where the example ran
	// before, the stream holds the earlier runs' facts too.
	from := first.offsets[0]
	// Written while the consumer is stopped: the next run starts after the
	// offset the first one stored, and reads this fact only.
	if _, err := pub.PublishOrderShipped(ctx, orderlogevents.OrderShipped{OrderID: "o-1"}); err != nil {
		return nil, err
	}
	second, err := readUntil(ctx, conn, out, "after a restart", 1)
	if err != nil {
		return nil, err
	}
	replayed, err := replay(ctx, conn, out, from)
	if err != nil {
		return nil, err
	}
	return [][]string{first.handled(), second.handled(), replayed.handled()}, nil
}

// replay reads this run's first two facts again for order-history, under
// a fresh offset name, as `warren replay --consumer order-history --from
// stream --offset-name NAME --offset FROM --limit 2` would position it:
// streamoffset.PlanReplay finds the offsets, Apply stores them, and the
// consumer started with runtime.WithOffsetName reads from there up to the
// bound.
func replay(ctx context.Context, conn *runtime.Conn, out io.Writer, from int64) (*history, error) {
	consumer := orderlogevents.Topology.Consumers[0]
	name := fmt.Sprintf("%s.rebuild-%d", consumer.Name, from)
	plan, err := streamoffset.PlanReplay(ctx, conn, streamoffset.Replay{
		Consumer: consumer,
		Keys:     []string{orderlogevents.FactOrderPlaced.RoutingKey, orderlogevents.FactOrderShipped.RoutingKey},
		Name:     name,
		From:     topology.Start{Kind: topology.StartOffset, Offset: from},
		Limit:    2,
	}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if err := streamoffset.Apply(ctx, conn, plan); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "replay %s: offsets %d to %d of %s\n", name, plan.First, plan.Until, plan.Stream)
	return readUntil(ctx, conn, out, "replay", 2, runtime.WithOffsetName(name))
}

// readUntil runs the order-history consumer until it handled n facts,
// then stops it, which stores its offset.
func readUntil(ctx context.Context, conn *runtime.Conn, out io.Writer, label string, n int, opts ...runtime.ConsumerOption) (*history, error) {
	h := &history{out: out, label: label, done: make(chan struct{}), want: n}
	c, err := orderlogevents.NewOrderHistoryConsumer(conn, h, opts...)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- c.Run(rctx) }()
	select {
	case <-h.done:
	case err := <-errc:
		stop()
		return nil, fmt.Errorf("order-history stopped early: %w", err)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	stop()
	if err := <-errc; err != nil {
		return nil, err
	}
	return h, nil
}

// history is the order-history handler: it prints each fact.
type history struct {
	out   io.Writer
	label string
	want  int
	done  chan struct{}

	mu      sync.Mutex
	seen    []string
	offsets []int64 // each fact's offset in the stream, as delivered
}

func (h *history) record(d runtime.Delivery, line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, line)
	// Every delivery from a stream carries its offset.
	off, _ := d.Headers["x-stream-offset"].(int64)
	h.offsets = append(h.offsets, off)
	fmt.Fprintf(h.out, "order-history (%s): %s\n", h.label, line)
	if len(h.seen) == h.want {
		close(h.done)
	}
}

func (h *history) handled() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

func (h *history) HandleOrderPlaced(ctx context.Context, d runtime.Delivery, f orderlogevents.OrderPlaced) error {
	h.record(d, fmt.Sprintf("%s placed, total %.2f", f.OrderID, f.Total))
	return nil
}

func (h *history) HandleOrderShipped(ctx context.Context, d runtime.Delivery, f orderlogevents.OrderShipped) error {
	h.record(d, f.OrderID+" shipped")
	return nil
}
