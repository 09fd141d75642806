package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime"
)

// maxLength in the manifest bounds the consumer's work queue as declared by
// warren declare, and a service that knows the topology gets ErrRejected
// naming the queue when it is full.
func TestManifestMaxLengthRejectsPublishes(t *testing.T) {
	files := map[string]string{
		"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "consumers": {
    "{{mailer}}": {"bindings": ["order.placed"], "queueType": "classic", "maxAttempts": 1, "maxLength": {"messages": 2, "bytes": 1000000}}
  }
}`,
		"order/placed.json": opsSchemas["order/placed.json"],
	}
	b := newBrokerCase(t, files, "events", "retry", "dead", "mailer")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	mailer := b.name("mailer")
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{b.url}, Topology: &b.model.Topology, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pub, err := runtime.NewPublisher(conn, b.name("events"))
	if err != nil {
		t.Fatal(err)
	}
	placed := runtime.Fact{RoutingKey: "order.placed", Version: 1}
	for range 2 {
		if _, err := pub.Publish(ctx, placed, map[string]string{"sku": "a"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = pub.Publish(ctx, placed, map[string]string{"sku": "a"})
	if !errors.Is(err, runtime.ErrRejected) || !strings.Contains(err.Error(), mailer+": queue is full") {
		t.Fatalf("third publish into %s bounded at 2: %v, want ErrRejected naming it", mailer, err)
	}
	if n := b.depth(mailer); n != 2 {
		t.Errorf("%s holds %d, want 2", mailer, n)
	}
}

func TestManifestMaxLengthErrors(t *testing.T) {
	dir := schemaDir(t, map[string]string{
		"warren.json":       `{"package": "events", "consumers": {"c": {"bindings": ["order.placed"], "maxLength": {"messages": 0}}}}`,
		"order/placed.json": opsSchemas["order/placed.json"],
	})
	code, _, stderr := run(t, "check", dir)
	if code != 1 || !strings.Contains(stderr, "/consumers/c/maxLength/messages") {
		t.Errorf("maxLength 0: exit %d, stderr %q; want an error at /consumers/c/maxLength/messages", code, stderr)
	}
}

// A quorum work queue has two priority levels (RabbitMQ 4): check refuses
// any other maxPriority on it, naming the place, and accepts 5; on a
// classic queue maxPriority becomes x-max-priority.
func TestManifestMaxPriority(t *testing.T) {
	manifest := `{"package": "events", "consumers": {"c": {"bindings": ["order.placed"], "maxPriority": %s}}}`
	dir := schemaDir(t, map[string]string{"warren.json": fmt.Sprintf(manifest, "9"), "order/placed.json": opsSchemas["order/placed.json"]})
	code, _, stderr := run(t, "check", dir)
	if code != 1 || !strings.Contains(stderr, `/consumers/c/maxPriority: consumer "c": maxPriority 9: a quorum queue has two levels on RabbitMQ 4`) {
		t.Errorf("maxPriority 9 on quorum: exit %d, stderr %q", code, stderr)
	}
	dir = schemaDir(t, map[string]string{"warren.json": fmt.Sprintf(manifest, "5"), "order/placed.json": opsSchemas["order/placed.json"]})
	if code, _, stderr := run(t, "check", dir); code != 0 {
		t.Errorf("maxPriority 5 on quorum: exit %d, stderr %q", code, stderr)
	}
	dir = schemaDir(t, map[string]string{"warren.json": fmt.Sprintf(manifest, `5, "queueType": "classic"`), "order/placed.json": opsSchemas["order/placed.json"]})
	code, stdout, stderr := run(t, "topology", dir)
	if code != 0 || !strings.Contains(stdout, `"x-max-priority": 5,`) {
		t.Errorf("topology with maxPriority: exit %d, stderr %s, no x-max-priority in:\n%s", code, stderr, stdout)
	}
}
