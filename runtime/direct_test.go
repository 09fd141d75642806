package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A direct write whose connection closes before its confirm is written
// again, with the same id, on a new connection: every fact confirmed to
// the caller is in the stream, some perhaps twice, none lost.
func TestDirectWriteAfterItsConnectionCloses(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("direct-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("reader"), Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}}},
	}
	spec.Consumers[0].Stream = spec.Streams[0].Name
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := itemFact("item.added")
	const n = 3000
	var pending []*Pending
	cuts := 0
	for i := range n {
		h, err := pub.PublishAsync(ctx, f, item{SKU: fmt.Sprintf("sku-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, h)
		if i%1000 == 500 {
			// The writers' connection closes under facts in flight.
			pub.direct.mu.Lock()
			store := pub.direct.store
			pub.direct.mu.Unlock()
			if store == nil {
				t.Fatal("no stream connection after direct writes")
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			cuts++
		}
	}
	want := map[string]bool{}
	for _, h := range pending {
		if err := h.Wait(ctx); err != nil {
			t.Fatalf("a direct write after its connection closed: %v", err)
		}
		want[h.ID()] = true
	}

	var mu sync.Mutex
	seen := map[string]int{}
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(_ context.Context, d Delivery, _ item) error {
		mu.Lock()
		seen[d.MessageID]++
		mu.Unlock()
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	defer stop()
	testenv.Eventually(t, "every confirmed direct write read from the stream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id := range want {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for id, k := range seen {
		if !want[id] {
			t.Fatalf("the stream holds %s, which was never published", id)
		}
		dups += k - 1
	}
	t.Logf("%d facts, %d connection closes: all %d in the stream, %d written twice", n, cuts, len(want), dups)
}

// A header the stream's message cannot hold fails the publish, naming it,
// before anything is written.
func TestStreamHeadersRefuseTables(t *testing.T) {
	if _, err := streamHeaders(amqp.Table{"x-fact-version": int64(1), "trace": "abc", "at": time.Now()}); err != nil {
		t.Fatalf("scalars: %v", err)
	}
	_, err := streamHeaders(amqp.Table{"x-fact-version": int64(1), "nested": amqp.Table{"a": 1}})
	if err == nil || !strings.Contains(err.Error(), `header "nested"`) {
		t.Fatalf("a table header: err = %v, want it named", err)
	}
}

// Closing a Publisher with direct writes in flight ends each of them: it
// was confirmed, or its Wait says the publisher is closed.
func TestDirectWritesInFlightAtClose(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("direct-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := itemFact("item.added")
	var pending []*Pending
	for i := range 2000 {
		h, err := pub.PublishAsync(ctx, f, item{SKU: fmt.Sprintf("sku-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, h)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	confirmed, closed := 0, 0
	for _, h := range pending {
		switch err := h.Wait(ctx); {
		case err == nil:
			confirmed++
		case errors.Is(err, ErrClosed):
			closed++
		default:
			t.Fatalf("a direct write in flight at Close: %v", err)
		}
	}
	if _, err := pub.Publish(ctx, f, item{SKU: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a publish after Close: err = %v, want ErrClosed", err)
	}
	t.Logf("2000 in flight at Close: %d confirmed, %d closed", confirmed, closed)
}

// A topology with a direct stream and no stream consumer needs the stream
// protocol all the same: a broker that does not answer it is named at
// Dial and Declare, with the plugin to enable, not at the first publish.
func TestDirectStreamNamesMissingPlugin(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("direct-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	declareErr, dialErr := withoutStreamProtocol(t, b)
	var pe *PluginError
	if !errors.As(declareErr, &pe) || pe.Plugin != topology.StreamPlugin || !strings.Contains(declareErr.Error(), "publishing directly into stream") {
		t.Fatalf("Declare: %v, want a PluginError naming %s and the direct stream", declareErr, topology.StreamPlugin)
	}
	if !errors.As(dialErr, &pe) || pe.Plugin != topology.StreamPlugin {
		t.Fatalf("Dial: %v, want a PluginError naming %s", dialErr, topology.StreamPlugin)
	}
}

// A direct write carries the type where the broker's release keeps an
// AMQP 0-9-1 publish's type: releases before 3.13 as an application
// property too (TestDirectStreamPublish reads it back on 3.10 and 4.0).
func TestKeepsTypeAsProperty(t *testing.T) {
	for v, want := range map[string]bool{"3.10.8": true, "3.12.14": true, "3.13.0": false, "4.0.5": false, "4.1.0-rc.1": false, "": false, "unknown": false} {
		if got := keepsTypeAsProperty(v); got != want {
			t.Errorf("keepsTypeAsProperty(%q) = %v, want %v", v, got, want)
		}
	}
}

// A direct publish into a stream that was deleted fails at once, saying
// so once: the refusal is not wrapped in its own words again.
func TestDirectPublishIntoADeletedStream(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("direct-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	stream := spec.Streams[0].Name
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(stream, false, false, false); err != nil {
		t.Fatal(err)
	}
	_ = ch.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pub.Publish(ctx, itemFact("item.added"), item{SKU: "a"})
	if !errors.Is(err, ErrStreamRefused) {
		t.Fatalf("publish into a deleted stream: %v, want ErrStreamRefused", err)
	}
	msg := err.Error()
	if n := strings.Count(msg, ErrStreamRefused.Error()); n != 1 || !strings.Contains(msg, fmt.Sprintf("stream %q", stream)) || !strings.Contains(msg, "does not exist") || strings.Contains(msg, "its members") {
		t.Fatalf("publish into a deleted stream: %q; want the refusal said once (said %d times), naming the stream and that it does not exist", msg, n)
	}
}
