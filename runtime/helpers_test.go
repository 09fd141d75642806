package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// The short ladder every test uses: routing is what the tests assert, not
// the arithmetic of delays.
var testLadder = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}

// broker is one test's private topology on the real broker, removed again
// when the test ends.
type broker struct {
	t    testing.TB
	url  string
	top  topology.Topology
	raw  *amqp.Connection // a plain connection for setup, inspection and cleanup
	logs *slog.Logger
	// streamPort is the stream protocol's port of a broker with streams
	// (newStreamBroker); 0 for the default.
	streamPort int
}

// newBroker builds a topology with test-unique exchange and consumer names
// from specs (whose Names are used as prefixes) and declares it.
func newBroker(t testing.TB, specs ...topology.ConsumerSpec) *broker {
	t.Helper()
	return newBrokerAt(t, testenv.AMQPURL(t), specs...)
}

// newBrokerAt is newBroker on the broker at url, such as a test's own node.
func newBrokerAt(t testing.TB, url string, specs ...topology.ConsumerSpec) *broker {
	t.Helper()
	spec := topology.Spec{Exchanges: topology.Exchanges{
		Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead"),
	}}
	for _, s := range specs {
		s.Name = testenv.Name(s.Name)
		spec.Consumers = append(spec.Consumers, s)
	}
	return newBrokerFrom(t, url, spec)
}

// newBrokerFrom builds spec, whose names the caller made test-unique, and
// declares it on the broker at url.
func newBrokerFrom(t testing.TB, url string, spec topology.Spec) *broker {
	t.Helper()
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{t: t, url: url, top: top, raw: raw, logs: testLogger(t)}
	t.Cleanup(b.cleanup)
	if err := declare(transport.Network{Connection: raw}, top); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *broker) cleanup() {
	_ = b.raw.Close()
	// A connection of its own: the test may have broken the shared one.
	conn, err := amqp.Dial(b.url)
	if err != nil {
		b.t.Errorf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	for _, q := range b.top.Queues {
		if err := deleteQueueOnceReady(conn, q.Name); err != nil {
			b.t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
			return
		}
	}
	for _, c := range b.top.Consumers {
		if c.Ordered() {
			if err := deleteQueueOnceReady(conn, MembersQueue(c.Name)); err != nil {
				b.t.Errorf("cleanup: delete queue %s: %v", MembersQueue(c.Name), err)
				return
			}
		}
	}
	ch, err := conn.Channel()
	if err != nil {
		b.t.Errorf("cleanup: %v", err)
		return
	}
	for _, e := range b.top.Exchanges {
		if err := ch.ExchangeDelete(e.Name, false, false); err != nil {
			b.t.Errorf("cleanup: delete exchange %s: %v", e.Name, err)
			return
		}
	}
}

// consumer returns the i-th consumer of the topology.
func (b *broker) consumer(i int) topology.Consumer { return b.top.Consumers[i] }

func (b *broker) events() string { return b.top.Exchanges[0].Name }

// dial opens a Conn to the test broker that declares the test topology.
func (b *broker) dial(cfg Config) *Conn {
	b.t.Helper()
	if cfg.URLs == nil {
		cfg.URLs = []string{b.url}
	}
	if cfg.Logger == nil {
		cfg.Logger = b.logs
	}
	if cfg.Topology == nil {
		cfg.Topology = &b.top
	}
	if cfg.StreamPort == 0 {
		cfg.StreamPort = b.streamPort
	}
	cfg.ReconnectMin = 20 * time.Millisecond
	cfg.ReconnectMax = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = c.Close() })
	return c
}

// depth returns the number of ready messages in a queue.
func (b *broker) depth(queue string) int {
	b.t.Helper()
	q, err := amqpmsg.InspectQueue(context.Background(), rawChannels{b.raw}, queue)
	if err != nil {
		b.t.Fatal(err)
	}
	return q.Messages
}

// rawChannels lets the tests' plain setup connection inspect queues.
type rawChannels struct{ *amqp.Connection }

func (r rawChannels) OpenChannel(context.Context) (*amqp.Channel, error) { return r.Channel() }

// get takes one message from a queue (acking it), waiting for it to arrive.
func (b *broker) get(queue string) amqp.Delivery {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	var d amqp.Delivery
	testenv.Eventually(b.t, "a message in "+queue, func() bool {
		var ok bool
		d, ok, err = ch.Get(queue, true)
		if err != nil {
			b.t.Fatal(err)
		}
		return ok
	})
	return d
}

// publishRaw publishes body as is, the way any AMQP client could.
func (b *broker) publishRaw(key string, body []byte) {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		b.t.Fatal(err)
	}
	dc, err := ch.PublishWithDeferredConfirm(b.events(), key, true, false, amqp.Publishing{Body: body, DeliveryMode: amqp.Persistent})
	if err != nil || !dc.Wait() {
		b.t.Fatalf("raw publish: %v", err)
	}
}

// run starts a consumer and returns a function that stops it and returns
// Run's result.
func run(t testing.TB, c *Consumer) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				err = errors.New("Run did not return within a minute of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// receive waits, with testenv.Eventually's deadline, for a value on ch.
func receive[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	var v T
	testenv.Eventually(t, "a value on a channel", func() bool {
		select {
		case v = <-ch:
			return true
		default:
			return false
		}
	})
	return v
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("WARREN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testFact is a fact with a schema check: "sku" must be a non-empty string.
type item struct {
	SKU string `json:"sku"`
	N   int    `json:"n"`
}

func itemFact(key string) Fact {
	return Fact{RoutingKey: key, Version: 2, Validate: func(payload []byte) error {
		var v map[string]any
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		if s, ok := v["sku"].(string); !ok || s == "" {
			return fmt.Errorf("/sku: expected a non-empty string, got %v", v["sku"])
		}
		return nil
	}}
}

// mustPublish publishes and fails the test on error.
func mustPublish(t testing.TB, p *Publisher, f Fact, v any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := p.Publish(ctx, f, v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// logRecorder is a slog.Handler that keeps every record, so tests can read
// what the runtime decided.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

func (r *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorderView{r, as}
}

func (r *logRecorder) WithGroup(string) slog.Handler { return r }

// values returns the value of attribute key in each record with message msg.
func (r *logRecorder) values(msg, key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Message != msg {
			continue
		}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
}

// text returns every record as text, for failure messages.
func (r *logRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s strings.Builder
	for _, rec := range r.records {
		fmt.Fprintf(&s, "%s %s", rec.Level, rec.Message)
		rec.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&s, " %s=%v", a.Key, a.Value); return true })
		s.WriteByte('\n')
	}
	return s.String()
}

type logRecorderView struct {
	r     *logRecorder
	attrs []slog.Attr
}

func (v *logRecorderView) Enabled(context.Context, slog.Level) bool { return true }
func (v *logRecorderView) Handle(ctx context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(v.attrs...)
	return v.r.Handle(ctx, rec)
}
func (v *logRecorderView) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorderView{v.r, append(slices.Clone(v.attrs), as...)}
}
func (v *logRecorderView) WithGroup(string) slog.Handler { return v }

func testenvURL(t testing.TB) string { return testenv.AMQPURL(t) }

// deleteQueueOnceReady deletes queue name. Right after a broker node
// restarts, a quorum queue whose replica is still recovering answers a
// delete with INTERNAL_ERROR (and closes the channel): that is tried again
// on a new channel for a while, any other error is returned at once.
func deleteQueueOnceReady(conn *amqp.Connection, name string) error {
	var err error
	for range 40 {
		var ch *amqp.Channel
		if ch, err = conn.Channel(); err != nil {
			return err
		}
		_, err = ch.QueueDelete(name, false, false, false)
		_ = ch.Close()
		var aerr *amqp.Error
		if err == nil || !errors.As(err, &aerr) || aerr.Code != amqp.InternalError {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}
