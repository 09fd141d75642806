package streamoffset_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// deleteAtEnd deletes top's queues and exchanges when the test ends.
func deleteAtEnd(t *testing.T, raw string, top topology.Topology) {
	t.Helper()
	conn, err := amqp.Dial(raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err == nil {
			for _, q := range top.Queues {
				_, _ = ch.QueueDelete(q.Name, false, false, false)
			}
			for _, e := range top.Exchanges {
				_ = ch.ExchangeDelete(e.Name, false, false)
			}
		}
		_ = conn.Close()
	})
}

func streamTopology(t *testing.T) topology.Topology {
	t.Helper()
	stream := testenv.Name("offsets-log")
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: stream, Bindings: []string{"item.#"}, MaxAge: time.Hour}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("reader"), Bindings: []string{"item.#"}, Stream: stream}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// Importing the package is all a program with stream consumers needs:
// Dial, which declares a topology with one, finds the offset store without
// Config.StreamOffsets, and the store keeps what it is given.
func TestImportSetsTheDefaultOffsetStore(t *testing.T) {
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	top := streamTopology(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port, Topology: &top})
	if err != nil {
		t.Fatalf("Dial with a stream consumer and no Config.StreamOffsets: %v", err)
	}
	_ = conn.Close()
}

// The store reports an offset never stored as not found, and returns what
// was stored.
func TestStoreAndQuery(t *testing.T) {
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	top := streamTopology(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Declared by Dial: the stream must exist before offsets are stored.
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port, Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	store, err := streamoffset.Dial(ctx, runtime.StreamEndpoint{Host: u.Hostname(), Port: port, User: u.User.Username(), Password: pass, VHost: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := top.Consumers[0]
	if off, found, err := store.QueryOffset(ctx, c.Name, c.Stream); err != nil || found {
		t.Fatalf("QueryOffset before any store: %d, found %v, %v; want not found", off, found, err)
	}
	if err := store.StoreOffset(ctx, c.Name, c.Stream, 7); err != nil {
		t.Fatal(err)
	}
	// The broker applies a store asynchronously: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		off, found, err := store.QueryOffset(ctx, c.Name, c.Stream)
		if err != nil {
			t.Fatal(err)
		}
		if found && off == 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("QueryOffset after storing 7: %d, found %v", off, found)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A port where nothing listens comes back as a refused connection, which
// runtime reports as the missing rabbitmq_stream plugin.
func TestRefusedConnectionIsReportedAsTheMissingPlugin(t *testing.T) {
	raw := testenv.AMQPURL(t)
	top := streamTopology(t)
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: 1, Topology: &top, StreamOffsets: streamoffset.Dial})
	var pe *runtime.PluginError
	if !errors.As(err, &pe) || pe.Plugin != topology.StreamPlugin {
		t.Fatalf("Dial: %v, want a PluginError naming %s", err, topology.StreamPlugin)
	}
}
