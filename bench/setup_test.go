package bench

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/bench/internal/benchtop"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// queueKinds are the work queue types measured; each has a consumer of its
// own in ../events/warren.json.
var queueKinds = []string{"classic", "quorum"}

// env is one queue type's part of the generated topology, declared in a
// vhost of its own, and the connections every side uses: warren's Conn,
// a plain amqp091-go connection and a watermill connection.
type env struct {
	kind     string // classic or quorum
	consumer string // the consumer of that queue type
	queue    string // its work queue
	url      string // the broker, in the env's vhost
	raw      *amqp.Connection
	conn     *runtime.Conn
	wm       *wmamqp.ConnectionWrapper
	acks     *ackCounter
	logger   *slog.Logger // warnings and errors, to standard error
}

func newEnv(b *testing.B, kind string) *env {
	b.Helper()
	url := testenv.VHost(b, "bench-"+kind)
	e := &env{kind: kind, consumer: "bench-" + kind, url: url, acks: &ackCounter{}}
	e.queue = topology.WorkQueue(e.consumer)
	top := only(benchevents.Topology, e.consumer)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Logger: e.logger, Metrics: e.acks})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	e.conn = conn
	if e.raw, err = amqp.Dial(url); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.raw.Close() })
	if e.wm, err = wmamqp.NewConnection(wmamqp.ConnectionConfig{AmqpURI: url}, watermill.NopLogger{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.wm.Close() })
	return e
}

// only is benchtop.Only: the part of t that belongs to one consumer.
func only(t topology.Topology, consumer string) topology.Topology { return benchtop.Only(t, consumer) }

// ackCounter is the warren Conn's Metrics: it tells when a consumer has
// acked the messages a benchmark put in its queue.
type ackCounter struct {
	mu     sync.Mutex
	n      atomic.Int64
	target int64
	done   chan struct{}
}

// arm resets the count and returns a channel closed at the n-th ack.
func (a *ackCounter) arm(n int) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n.Store(0)
	a.target = int64(n)
	a.done = make(chan struct{})
	return a.done
}

func (a *ackCounter) Count(_ string, e runtime.Event, _ string) {
	if e != runtime.Acked {
		return
	}
	if n := a.n.Add(1); n >= a.target {
		a.mu.Lock()
		if n == a.target {
			close(a.done)
		}
		a.mu.Unlock()
	}
}
func (*ackCounter) ObserveHandler(string, string, time.Duration, error) {}
func (*ackCounter) Paused(string)                                       {}
func (*ackCounter) Resumed(string, time.Duration)                       {}

// fill puts n envelopes of distinct orders in the env's work queue through
// the events exchange, pipelined and confirmed, untimed. headers gives each
// message's AMQP headers from its id.
func (e *env) fill(b *testing.B, n int, headers func(id string) amqp.Table) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ch := confirmChannel(b, e.raw)
	defer ch.Close()
	const window = 1000
	pending := make([]*amqp.DeferredConfirmation, 0, window)
	flush := func() {
		for _, dc := range pending {
			if !dc.Wait() {
				b.Fatal("fill: nacked")
			}
		}
		pending = pending[:0]
	}
	for i := range n {
		body, id, err := envelopeBody(i)
		if err != nil {
			b.Fatal(err)
		}
		dc, err := ch.PublishWithDeferredConfirm("bench.events", benchevents.OrderPlacedRoutingKey, true, false, amqp.Publishing{
			ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id,
			Type: benchevents.OrderPlacedRoutingKey, Headers: headers(id), Body: body,
		})
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, dc); len(pending) == window {
			flush()
		}
	}
	flush()
}

// purge empties the env's work queue, untimed.
func (e *env) purge(b *testing.B) {
	b.Helper()
	ch, err := e.raw.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueuePurge(e.queue, false); err != nil {
		b.Fatal(err)
	}
}

// confirmChannel opens a raw channel in confirm mode whose returns are
// drained, as any mandatory publisher must.
func confirmChannel(b *testing.B, conn *amqp.Connection) *amqp.Channel {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() {
		for range returns {
		}
	}()
	return ch
}

// meter times one side's b.N messages: wall time (ns/op is per message),
// messages a second, and the client's CPU per message, all of the
// process's threads, user and system, as getrusage counts them.
type meter struct {
	b   *testing.B
	cpu time.Duration
}

func startMeter(b *testing.B) *meter {
	m := &meter{b: b, cpu: cpuTime(b)}
	b.ResetTimer()
	return m
}

func (m *meter) stop() {
	m.b.StopTimer()
	cpu := cpuTime(m.b) - m.cpu
	n := float64(m.b.N)
	m.b.ReportMetric(n/m.b.Elapsed().Seconds(), "msgs/s")
	m.b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-us/msg")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// side is one implementation of a benchmark case.
type side struct {
	name string
	run  func(b *testing.B)
}

// runSides runs every side of one case as sub-benchmarks, back to back,
// starting with a different side in each round (WARREN_BENCH_ROUND, set
// by scripts/bench), so that the machine's load falls on all sides alike.
func runSides(b *testing.B, sides []side) {
	round, _ := strconv.Atoi(os.Getenv("WARREN_BENCH_ROUND"))
	for i := range sides {
		s := sides[(i+round)%len(sides)]
		b.Run(s.name, s.run)
	}
}
