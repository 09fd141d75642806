package runtime

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/topology"
)

// Package runtime must not depend on the stream protocol's client: every
// generated package imports runtime, and the client brings OpenTelemetry
// and compression libraries that only programs with stream consumers
// need (they get them through runtime/streamoffset).
func TestRuntimeDoesNotImportTheStreamClient(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/warrenbus/warren/runtime").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/rabbitmq/rabbitmq-stream-go-client", "go.opentelemetry.io/", "github.com/warrenbus/warren/internal/streamproto"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("package runtime depends on %s; keep the stream client in runtime/streamoffset", dep)
			}
		}
	}
}

// With stream consumers and no offset store, Dial, Declare and the
// consumer's constructor each fail at once, saying what to pass.
func TestStreamConsumerWithoutOffsetStore(t *testing.T) {
	b := newStreamBroker(t, topology.ConsumerSpec{Name: "nostore", Bindings: []string{"item.#"}, Backoff: testLadder})
	saved := defaultOffsetDialer()
	SetDefaultOffsetDialer(nil)
	t.Cleanup(func() { SetDefaultOffsetDialer(saved) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	says := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNoOffsetStore) || !strings.Contains(err.Error(), "streamoffset") {
			t.Errorf("%s: %v, want ErrNoOffsetStore naming runtime/streamoffset", what, err)
		}
	}

	_, err := Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, StreamPort: b.streamPort, Topology: &b.top})
	says("Dial", err)

	conn, err := Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, StreamPort: b.streamPort})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	says("Declare", conn.Declare(ctx, b.top))
	route := Handle(itemFact("item.added"), func(context.Context, Delivery, item) error { return nil })
	_, err = NewConsumer(conn, b.consumer(0), []Route{route})
	says("NewConsumer", err)

	// Passed in the Config, the dialer is used with no default set.
	conn2, err := Dial(ctx, Config{URLs: []string{b.url}, Logger: b.logs, StreamPort: b.streamPort, Topology: &b.top, StreamOffsets: saved})
	if err != nil {
		t.Fatalf("Dial with Config.StreamOffsets: %v", err)
	}
	_ = conn2.Close()
}
