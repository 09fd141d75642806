package runtime

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A stream that exists with another retention, or a broker without the
// stream protocol, is refused before anything of the topology is
// declared: a new consumer's queues do not appear.
func TestDeclareStreamRefusalsDeclareNothing(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder})
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: b.top.Exchanges[0].Name, Retry: b.top.Exchanges[1].Name, Dead: b.top.Exchanges[2].Name},
		// The same stream, kept longer than it was declared with.
		Streams:   []topology.StreamSpec{{Name: b.consumer(0).Stream, Bindings: []string{"item.#"}, MaxAge: 2 * time.Hour}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("newcomer"), Bindings: []string{"item.#"}, Stream: b.consumer(0).Stream, Backoff: testLadder}},
	}
	changed, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	newcomer := changed.Consumers[0]
	t.Cleanup(func() {
		if ch, err := b.raw.Channel(); err == nil {
			for _, q := range []string{newcomer.Queue, newcomer.PoisonQueue} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
		}
	})
	exists := func(q string) bool {
		_, err := amqpmsg.InspectQueue(context.Background(), rawChannels{b.raw}, q)
		return err == nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn := b.dial(Config{})
	err = conn.Declare(ctx, changed)
	var me *MismatchError
	if !errors.As(err, &me) || me.Argument != "x-max-age" || !strings.Contains(err.Error(), "nothing was declared") {
		t.Fatalf("Declare with a changed maxAge: %v, want a MismatchError on x-max-age that says nothing was declared", err)
	}
	if exists(newcomer.Queue) {
		t.Fatalf("the newcomer's work queue %s was declared beside a refused stream", newcomer.Queue)
	}

	spec.Streams[0].MaxAge = time.Hour
	fresh, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	noplugin, err := Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, StreamPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer noplugin.Close()
	var pe *PluginError
	if err := noplugin.Declare(ctx, fresh); !errors.As(err, &pe) {
		t.Fatalf("Declare without the stream protocol: %v, want a PluginError", err)
	}
	if exists(newcomer.Queue) {
		t.Fatalf("the newcomer's work queue %s was declared without the stream protocol", newcomer.Queue)
	}
	if err := conn.Declare(ctx, fresh); err != nil || !exists(newcomer.Queue) {
		t.Fatalf("Declare with the stream's own retention: %v; work queue there: %v", err, exists(newcomer.Queue))
	}
}

// A mismatch on any existing queue (here a consumer's work queue with
// another delivery limit) and on an existing stream is found before
// anything is declared, each reported: a new stream of the same topology
// is not created (its retention would be fixed for good), neither by
// Declare nor on Dial.
func TestDeclareFindsEveryMismatchBeforeDeclaring(t *testing.T) {
	log, ledger := testenv.Name("items-log"), testenv.Name("ledger")
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: log, Bindings: []string{"item.#"}, MaxAge: time.Hour}},
		Consumers: []topology.ConsumerSpec{{Name: ledger, Bindings: []string{"item.#"}, Backoff: testLadder, DeliveryLimit: 3}},
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)

	zz := testenv.Name("zz-log")
	t.Cleanup(func() {
		if ch, err := b.raw.Channel(); err == nil {
			_, _ = ch.QueueDelete(zz, false, false, false)
		}
	})
	exists := func(q string) bool {
		_, err := amqpmsg.InspectQueue(context.Background(), rawChannels{b.raw}, q)
		return err == nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := b.dial(Config{})

	check := func(how string, err error, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for _, m := range Mismatches(err) {
			got[m.Name] = m.Argument
		}
		if !maps.Equal(got, want) || !strings.Contains(err.Error(), "nothing was declared") {
			t.Errorf("%s: %v\nmismatches %v, want %v, saying nothing was declared", how, err, got, want)
		}
		if exists(zz) {
			t.Fatalf("%s: the new stream %s was declared beside the mismatches", how, zz)
		}
	}
	// A new stream (declared before the consumers' queues) beside a work
	// queue's other delivery limit.
	spec.Streams = append(spec.Streams, topology.StreamSpec{Name: zz, Bindings: []string{"item.#"}, MaxAge: time.Hour})
	spec.Consumers[0].DeliveryLimit = 5
	changed, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{b.consumer(0).Queue: "x-delivery-limit"}
	check("Declare", conn.Declare(ctx, changed), want)
	_, err = Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, Topology: &changed, StreamPort: b.streamPort})
	check("Dial", err, want)

	// And an existing stream's other retention: both are reported.
	spec.Streams[0].MaxAge = 2 * time.Hour
	if changed, err = topology.Build(spec); err != nil {
		t.Fatal(err)
	}
	want[log] = "x-max-age"
	check("Declare with two mismatches", conn.Declare(ctx, changed), want)
}

// Each mismatch of a stream says what can be done about that argument: a
// queue's type is no policy's business; a stream's retention is, under
// the policy keys max-age and max-length-bytes; its segment size is fixed
// once it exists.
func TestDeclareStreamMismatchAdvice(t *testing.T) {
	b := newStreamBroker(t)
	stream := b.top.Queues[slices.IndexFunc(b.top.Queues, func(q topology.Queue) bool { return q.Type == topology.Stream })]
	legacy := testenv.Name("legacy-log")
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(legacy, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	_ = ch.Close()
	t.Cleanup(func() {
		if ch, err := b.raw.Channel(); err == nil {
			_, _ = ch.QueueDelete(legacy, false, false, false)
		}
	})
	conn := b.dial(Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		what      string
		edit      func(q *topology.Queue)
		arg       string
		want, not []string
	}{
		{"a stream over a quorum queue", func(q *topology.Queue) { q.Name = legacy }, "x-queue-type",
			[]string{"type never changes", "no policy changes it", `delete the quorum queue "` + legacy + `"`, "another name"}, []string{"retention", "max-age", "set_policy"}},
		{"another max age", func(q *topology.Queue) { q.MaxAge = 2 * time.Hour }, "x-max-age",
			[]string{"with a policy, whose key max-age", `'{"max-age":"7200s"}'`, "--apply-to queues"}, []string{"max-length-bytes", "segment"}},
		{"another max length", func(q *topology.Queue) { q.MaxLengthBytes = 1 << 30 }, "x-max-length-bytes",
			[]string{"with a policy, whose key max-length-bytes", `'{"max-length-bytes":1073741824}'`}, []string{"max-age"}},
		{"another segment size", func(q *topology.Queue) { q.SegmentBytes = 1 << 20 }, "x-stream-max-segment-size-bytes",
			[]string{"cannot be changed once it exists", "stream-max-segment-size-bytes", "another name"}, []string{"set_policy", "max-age"}},
	} {
		q := stream
		tc.edit(&q)
		err := conn.Declare(ctx, topology.Topology{Queues: []topology.Queue{q}})
		ms := Mismatches(err)
		if len(ms) != 1 || ms[0].Argument != tc.arg {
			t.Errorf("%s: %v, want one mismatch on %s", tc.what, err, tc.arg)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(ms[0].Advice, w) || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: advice %q, want it to say %q", tc.what, ms[0].Advice, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(ms[0].Advice, n) {
				t.Errorf("%s: advice %q, want no %q", tc.what, ms[0].Advice, n)
			}
		}
	}
}

// A refused stream port is told in one wording, the runtime's
// (PluginError, from Dial and Declare) and the stream client's package's
// (warren replay, warren status): whether the plugin is on, and whether
// that is its port.
func TestStreamRefusedAdviceIsShared(t *testing.T) {
	if streamRefusedAdvice != streamproto.RefusedAdvice {
		t.Fatalf("runtime says %q, internal/streamproto %q: want one wording", streamRefusedAdvice, streamproto.RefusedAdvice)
	}
	err := &PluginError{Plugin: topology.StreamPlugin, Need: `stream consumer "ledger"`, Address: "127.0.0.1:5999"}
	if want := `stream consumer "ledger" needs RabbitMQ's stream protocol, and nothing listens at 127.0.0.1:5999: ` + streamproto.RefusedAdvice; err.Error() != want {
		t.Fatalf("PluginError: %q, want %q", err, want)
	}
}

// Dial with a topology that needs the stream protocol (a stream consumer,
// a direct stream) on a broker where nothing answers it names the plugin
// before it declares anything: the failed start leaves no exchange, queue
// or stream of the topology behind in the vhost.
func TestDialWithoutStreamProtocolDeclaresNothing(t *testing.T) {
	vhost := testenv.VHost(t, "nostream")
	raw, err := amqp.Dial(vhost)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, tc := range []struct {
		what string
		spec topology.Spec
		need string
	}{
		{"stream consumer", topology.Spec{
			Exchanges: topology.Exchanges{Events: "events-c", Retry: "retry-c", Dead: "dead-c"},
			Streams:   []topology.StreamSpec{{Name: "items-log", Bindings: []string{"item.#"}, MaxAge: time.Hour}},
			Consumers: []topology.ConsumerSpec{{Name: "ledger", Bindings: []string{"item.#"}, Stream: "items-log", Backoff: testLadder}},
		}, `stream consumer "ledger"`},
		{"direct stream", topology.Spec{
			Exchanges: topology.Exchanges{Events: "events-d", Retry: "retry-d", Dead: "dead-d"},
			Streams:   []topology.StreamSpec{{Name: "direct-log", Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
		}, `publishing directly into stream "direct-log"`},
	} {
		top, err := topology.Build(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		conn, err := Dial(ctx, Config{URLs: []string{vhost}, Logger: testLogger(t), StreamPort: 1, Topology: &top})
		cancel()
		if err == nil {
			_ = conn.Close()
		}
		var pe *PluginError
		if !errors.As(err, &pe) || pe.Plugin != topology.StreamPlugin || pe.Need != tc.need ||
			!strings.Contains(err.Error(), "rabbitmq-plugins enable rabbitmq_stream") {
			t.Errorf("%s: Dial: %v, want a PluginError for %s that says rabbitmq-plugins enable rabbitmq_stream", tc.what, err, tc.need)
		}
		for _, e := range top.Exchanges {
			ch, err := raw.Channel()
			if err != nil {
				t.Fatal(err)
			}
			err = ch.ExchangeDeclarePassive(e.Name, e.Kind, true, false, false, false, nil)
			if ae := (*amqp.Error)(nil); !errors.As(err, &ae) || ae.Code != amqp.NotFound {
				t.Errorf("%s: exchange %s after the failed Dial: %v, want it not to exist", tc.what, e.Name, err)
			}
			_ = ch.Close()
		}
		for _, q := range top.Queues {
			if _, err := amqpmsg.InspectQueue(context.Background(), rawChannels{raw}, q.Name); !errors.Is(err, amqpmsg.ErrNoQueue) {
				t.Errorf("%s: queue %s after the failed Dial: %v, want it not to exist", tc.what, q.Name, err)
			}
		}
	}
}

// closeCounter is an offset store that counts its closes.
type closeCounter struct {
	OffsetStore
	closed *atomic.Int32
}

func (s closeCounter) Close() error {
	s.closed.Add(1)
	return s.OffsetStore.Close()
}

// Dial opens the offset store to check the stream protocol before it
// declares the topology; a topology the broker then refuses (an existing
// stream's other retention) fails Dial, and the store's connection is
// closed with it rather than left open.
func TestDialRefusedAfterTheStreamCheckClosesTheStore(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "reader", Bindings: []string{"item.#"}, Backoff: testLadder})
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: b.top.Exchanges[0].Name, Retry: b.top.Exchanges[1].Name, Dead: b.top.Exchanges[2].Name},
		Streams:   []topology.StreamSpec{{Name: b.consumer(0).Stream, Bindings: []string{"item.#"}, MaxAge: 2 * time.Hour}},
		Consumers: []topology.ConsumerSpec{{Name: b.consumer(0).Name, Bindings: []string{"item.#"}, Stream: b.consumer(0).Stream, Backoff: testLadder}},
	}
	changed, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	var opened, closed atomic.Int32
	dial := func(ctx context.Context, ep StreamEndpoint) (OffsetStore, error) {
		s, err := defaultOffsetDialer()(ctx, ep)
		if err != nil {
			return nil, err
		}
		opened.Add(1)
		return closeCounter{s, &closed}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, Topology: &changed, StreamPort: b.streamPort, StreamOffsets: dial})
	if ms := Mismatches(err); len(ms) != 1 || ms[0].Argument != "x-max-age" {
		t.Fatalf("Dial with a changed maxAge: %v, want a MismatchError on x-max-age", err)
	}
	if o, c := opened.Load(), closed.Load(); o != 1 || c != 1 {
		t.Fatalf("the failed Dial opened %d offset stores and closed %d, want 1 and 1", o, c)
	}
}
