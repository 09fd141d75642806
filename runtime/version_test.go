package runtime

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// lockedBuffer is a log sink the consumer's goroutines can share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A fact published under a newer x-version than the consumer's is counted
// and logged once, and otherwise handled like any other: validated against
// the consumer's own schema, which is what warren diff assumes.
func TestNewerFactVersionIsCountedAndHandled(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "versions", Bindings: []string{"item.#"}, MaxAttempts: 1})
	var logs lockedBuffer
	conn := b.dial(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()

	consumerFact := itemFact("item.changed") // version 2
	newer := consumerFact
	newer.Version = 3
	handled := make(chan item, 10)
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(consumerFact, func(_ context.Context, _ Delivery, v item) error {
		handled <- v
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	p, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Fact{newer, consumerFact, newer} {
		if _, err := p.Publish(ctx, f, item{SKU: "A-1", N: f.Version}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		receive(t, handled)
	}
	name := b.consumer(0).Name
	testenv.Eventually(t, "three acks", func() bool { return conn.Counts(name).Get(Acked) == 3 })
	n := conn.Counts(name)
	if n.Get(NewerVersion) != 2 || n.Get(Poisoned) != 0 {
		t.Errorf("counts %v: want 2 newer_version, 0 poisoned", n)
	}
	if got := strings.Count(logs.String(), "newer schema version"); got != 1 {
		t.Errorf("logged the newer version %d times, want once per routing key and version:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "fact_version=3 consumer_version=2") {
		t.Errorf("log does not name both versions:\n%s", logs.String())
	}
}
