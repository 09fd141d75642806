package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
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
