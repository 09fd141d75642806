package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
)

// Ports of warren status's management-test node (see testenv.ManagementNode).
var statusMgmtNode = testenv.NodePorts{Name: "warren-status-mgmt", AMQP: 5698, Dist: 25698, HTTP: 15698}

// With the management API, status shows the versions the processes
// attached to each consumer's queue announce they read, beside the
// schema's, and says a published version can be retired only once no live
// process needs it: the schema directory still pins "other" to version 1,
// but once its process is upgraded to read version 2 as well, version 1
// can go.
func TestStatusShowsTheVersionsLiveConsumersRead(t *testing.T) {
	amqpURL, mgmtURL := testenv.ManagementNode(t, statusMgmtNode)
	b := newBrokerCaseAt(t, amqpURL, map[string]string{
		"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "versions": {"order.placed": {"publish": [1, 2]}},
  "consumers": {
    "{{svc}}": {"bindings": ["order.placed"]},
    "{{other}}": {"bindings": ["order.placed"], "versions": {"order.placed": 1}}
  }
}`,
		"order/placed.v1.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"id": {"type": "string"}}}`,
		"order/placed.v2.json": `{"x-routing-key": "order.placed", "x-version": 2, "type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}`,
	}, "events", "retry", "dead", "svc", "other")
	svc, other := b.name("svc"), b.name("other")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{amqpURL}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	v1 := runtime.Fact{RoutingKey: "order.placed", Version: 1}
	v2 := runtime.Fact{RoutingKey: "order.placed", Version: 2}
	handle := func(context.Context, runtime.Delivery, map[string]any) error { return nil }
	upcast := func(v map[string]any) (map[string]any, error) { return v, nil }
	// start runs a process of consumer i with routes until stop is called.
	start := func(i int, routes ...runtime.Route) (stop func()) {
		c, err := runtime.NewConsumer(conn, *b.model.Consumers[i].Topology, routes)
		if err != nil {
			t.Fatal(err)
		}
		cctx, stopIt := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = c.Run(cctx); close(done) }()
		return func() { stopIt(); <-done }
	}
	if b.model.Consumers[0].Name != other {
		t.Fatalf("consumers out of order: %s first", b.model.Consumers[0].Name)
	}
	start(1, runtime.HandleVersions(v2, handle, runtime.Upcast(v1, upcast)))
	stopOld := start(0, runtime.Handle(v1, handle))

	status := func(want string) string {
		t.Helper()
		var stdout string
		testenv.Eventually(t, "status to show "+want, func() bool {
			var code int
			code, stdout, _ = b.run("status", "--management-url", mgmtURL, b.dir)
			return code == 0 && strings.Contains(stdout, want)
		})
		return stdout
	}
	out := status(other + "  order.placed  1      1 ×1")
	table := out[strings.Index(out, "\n\n")+2:]
	want := [][]string{{"CONSUMER", "FACT", "READS", "LIVE", "PUBLISHED"},
		{other, "order.placed", "1", "1", "×1", "1,2"}, {svc, "order.placed", "1-2", "1-2", "×1", "1,2"},
		{"order.placed:", "every", "published", "version", "is", "still", "needed"}}
	if fmt.Sprint(fields(table)) != fmt.Sprint(want) {
		t.Errorf("with other's process reading version 1:\n%s\nwant rows %v", out, want)
	}

	// other's process is upgraded: it reads versions 1 and 2.
	stopOld()
	start(0, runtime.HandleVersions(v2, handle, runtime.Upcast(v1, upcast)))
	out = status("order.placed: no consumer needs version 1 any more")
	if !strings.Contains(out, other+"  order.placed  1      1-2 ×1") {
		t.Errorf("with other's process upgraded:\n%s", out)
	}
	_, stdout, stderr := b.run("status", "--format", "json", "--management-url", mgmtURL, b.dir)
	var got statusJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--format json: %v\n%s%s", err, stdout, stderr)
	}
	r := got.Consumers[0].Reads
	if len(r) != 1 || !r[0].Asked || fmt.Sprint(r[0].Live) != "[{[1 2] 1}]" || fmt.Sprint(r[0].Schema) != "[1]" || fmt.Sprint(r[0].Unneeded) != "[1]" {
		t.Errorf("--format json reads of %s: %+v", other, r)
	}
	if strings.Contains(stdout+out, "guest:guest") {
		t.Errorf("status shows a password:\n%s", stdout+out)
	}
}
