package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// fixedSchemas is opsSchemas with fixed names, for exact output.
func fixedSchemas() map[string]string {
	r := strings.NewReplacer("{{events}}", "shop.events", "{{retry}}", "shop.retry", "{{dead}}", "shop.dead", "{{mailer}}", "mailer", "{{audit}}", "audit")
	out := map[string]string{}
	for k, v := range opsSchemas {
		out[k] = r.Replace(v)
	}
	return out
}

// wantDefinitions is the export for RabbitMQ 3.
const wantDefinitions = `{
  "rabbitmq_version": "3.x",
  "exchanges": [
    {"name": "shop.events", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    {"name": "shop.retry", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    {"name": "shop.dead", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}}
  ],
  "queues": [
    {"name": "audit.poison", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "classic"}},
    {"name": "audit", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {
      "x-dead-letter-exchange": "shop.dead", "x-dead-letter-routing-key": "audit", "x-queue-type": "classic"}},
    {"name": "mailer.poison", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {"x-queue-type": "quorum"}},
    {"name": "mailer", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {
      "x-dead-letter-exchange": "shop.dead", "x-dead-letter-routing-key": "mailer", "x-dead-letter-strategy": "at-least-once",
      "x-delivery-limit": 10, "x-overflow": "reject-publish", "x-queue-type": "quorum"}},
    {"name": "mailer.retry.20ms", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {
      "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "mailer", "x-dead-letter-strategy": "at-least-once",
      "x-message-ttl": 20, "x-overflow": "reject-publish", "x-queue-type": "quorum"}},
    {"name": "mailer.retry.40ms", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {
      "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "mailer", "x-dead-letter-strategy": "at-least-once",
      "x-message-ttl": 40, "x-overflow": "reject-publish", "x-queue-type": "quorum"}}
  ],
  "bindings": [
    {"source": "shop.events", "vhost": "/", "destination": "audit", "destination_type": "queue", "routing_key": "order.*", "arguments": {}},
    {"source": "shop.dead", "vhost": "/", "destination": "audit.poison", "destination_type": "queue", "routing_key": "audit", "arguments": {}},
    {"source": "shop.events", "vhost": "/", "destination": "mailer", "destination_type": "queue", "routing_key": "order.placed", "arguments": {}},
    {"source": "shop.retry", "vhost": "/", "destination": "mailer.retry.20ms", "destination_type": "queue", "routing_key": "mailer.retry.20ms", "arguments": {}},
    {"source": "shop.retry", "vhost": "/", "destination": "mailer.retry.40ms", "destination_type": "queue", "routing_key": "mailer.retry.40ms", "arguments": {}},
    {"source": "shop.dead", "vhost": "/", "destination": "mailer.poison", "destination_type": "queue", "routing_key": "mailer", "arguments": {}}
  ]
}`

// The export is the topology exactly: every exchange, queue with its
// typed arguments (integers stay integers) and binding, byte for byte the
// same on every run.
func TestTopologyExportsEveryDefinition(t *testing.T) {
	dir := schemaDir(t, fixedSchemas())
	code, stdout, stderr := run(t, "topology", "--rabbitmq", "3", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if diff := cmp.Diff(reindent(t, wantDefinitions), stdout); diff != "" {
		t.Errorf("definitions (-want +got):\n%s", diff)
	}
	_, again, _ := run(t, "topology", "--rabbitmq", "3", dir)
	if again != stdout {
		t.Error("a second run wrote different output")
	}

	out := filepath.Join(t.TempDir(), "defs.json")
	code, stdout, _ = run(t, "topology", "--out", out, "--vhost", "shop", dir)
	written, err := os.ReadFile(out)
	if code != 0 || stdout != "" || err != nil {
		t.Fatalf("--out: exit %d, stdout %q, %v", code, stdout, err)
	}
	if n := strings.Count(string(written), `"vhost": "shop"`); n != 3+6+6 {
		t.Errorf("--vhost shop: %d definitions name vhost shop, want 15", n)
	}
}

// For RabbitMQ 4, the default, the export says so, and the quorum queues
// without a delivery limit of their own (poison, delay) are unlimited
// (-1) rather than left to 4.x's default of 20; nothing else differs.
func TestTopologyExportsForRabbitMQ4(t *testing.T) {
	dir := schemaDir(t, fixedSchemas())
	code, stdout, stderr := run(t, "topology", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var got, want topology.Definitions
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(wantDefinitions), &want); err != nil {
		t.Fatal(err)
	}
	want.RabbitMQVersion = "4.x"
	for _, q := range want.Queues {
		if q.Name == "mailer.poison" || strings.HasPrefix(q.Name, "mailer.retry.") {
			q.Arguments["x-delivery-limit"] = float64(-1)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("definitions for RabbitMQ 4 (-want +got):\n%s", diff)
	}
	if code, _, stderr := run(t, "topology", "--rabbitmq", "5", dir); code != 1 || !strings.Contains(stderr, `--rabbitmq "5": expected 3 or 4`) {
		t.Errorf("--rabbitmq 5: exit %d, stderr %q", code, stderr)
	}
}

// reindent formats a JSON literal the way the command writes JSON.
func reindent(t *testing.T, src string) string {
	t.Helper()
	var defs topology.Definitions
	if err := json.Unmarshal([]byte(src), &defs); err != nil {
		t.Fatal(err)
	}
	data, err := encodeJSON(defs)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestTopologyErrors(t *testing.T) {
	dir := schemaDir(t, map[string]string{"warren.json": `{"consumers": {"c": {"bindings": ["nothing.here"]}}}`})
	code, stdout, stderr := run(t, "topology", dir)
	if code != 1 || stdout != "" || !strings.Contains(stderr, dir+"/warren.json:1:") || !strings.Contains(stderr, `binding "nothing.here" matches no fact`) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	// Nothing is written for an invalid directory, not even an empty file.
	out := filepath.Join(t.TempDir(), "defs.json")
	if code, _, _ := run(t, "topology", "--out", out, dir); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out file exists after a failure: %v", err)
	}
}

// The broker itself accepts the export: rabbitmqctl import_definitions
// creates the queues, and the bindings route.
func TestTopologyImportsIntoRabbitMQ(t *testing.T) {
	admin := testenv.BrokerAdmin(t)
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	version, _ := b.conn.Properties["version"].(string)
	broker := topology.BrokerOf(version)
	out := filepath.Join(t.TempDir(), "defs.json")
	if code, _, stderr := run(t, "topology", "--rabbitmq", fmt.Sprint(int(broker)), "--out", out, b.dir); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, q := range b.model.Topology.Queues {
		if b.exists(q.Name) {
			t.Fatalf("queue %s exists before the import", q.Name)
		}
	}
	defs, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer defs.Close()
	// On standard input: rabbitmqctl may run as another user, who cannot
	// read the test's private temporary directory.
	admin.RunInput(t, defs, "import_definitions")
	// The broker imports in the background.
	for _, q := range b.model.Topology.Queues {
		testenv.Eventually(t, "queue "+q.Name+" to be imported", func() bool { return b.exists(q.Name) })
	}
	// Queue arguments as the runtime declares them: an active declare with
	// the same arguments is accepted, which it would not be on a mismatch.
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for _, q := range b.model.Topology.Queues {
		if _, err := ch.QueueDeclare(q.Name, true, false, false, false, amqp.Table(q.ArgumentsFor(broker))); err != nil {
			t.Fatalf("declare %s as the runtime does after the import: %v", q.Name, err)
		}
	}
	b.publish(b.name("events"), "order.placed", amqp.Publishing{Body: []byte("{}")})
	testenv.Eventually(t, "the imported bindings to route order.placed to both consumers", func() bool {
		return b.depth(b.name("mailer")) == 1 && b.depth(b.name("audit")) == 1
	})
}

func TestTopologyUsage(t *testing.T) {
	code, stdout, _ := run(t, "topology", "--help")
	if code != 0 || !strings.Contains(stdout, `rabbitmqctl import_definitions "$PWD/definitions.json"`) {
		t.Errorf("topology --help: exit %d, no example in:\n%s", code, stdout)
	}
	if code, _, stderr := run(t, "topology"); code != 2 || !strings.HasPrefix(stderr, "warren topology: expected SCHEMA_DIR") {
		t.Errorf("no argument: exit %d, stderr %q", code, stderr)
	}
}

// The delay levels survive the export too: imported with rabbitmqctl, a
// fact published to a level with its delay's headers waits in the level
// of its highest digit, and one without a level's header passes it by.
func TestTopologyImportsTheDelayLevels(t *testing.T) {
	admin := testenv.BrokerAdmin(t)
	b := newBrokerCase(t, statusDelayedSchemas, "events", "retry", "dead", "svc")
	version, _ := b.conn.Properties["version"].(string)
	out := filepath.Join(t.TempDir(), "defs.json")
	if code, _, stderr := run(t, "topology", "--rabbitmq", fmt.Sprint(int(topology.BrokerOf(version))), "--out", out, b.dir); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	defs, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer defs.Close()
	admin.RunInput(t, defs, "import_definitions")
	events := b.name("events")
	for _, q := range b.model.Topology.Queues {
		testenv.Eventually(t, "queue "+q.Name+" to be imported", func() bool { return b.exists(q.Name) })
	}
	key, err := topology.DelayedRoutingKey("order.placed")
	if err != nil {
		t.Fatal(err)
	}
	// An hour is 3,600,000 ms, binary 1101101110111010000000: digits
	// 21, 20 and 18 set, 19 not.
	h := amqp.Table{}
	if _, err := topology.SetDelayHeaders(h, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Published a level up, to 22, the fact passes 22 by (no header) and
	// waits in 21. Without 21's and 20's headers, one published to 21
	// passes 21, 20 and 19 by and waits in 18.
	b.publish(topology.DelayExchange(events, 22), key, amqp.Publishing{Headers: h, Body: []byte("{}")})
	delete(h, topology.DelayHeader(21))
	delete(h, topology.DelayHeader(20))
	b.publish(topology.DelayExchange(events, 21), key, amqp.Publishing{Headers: h, Body: []byte("{}")})
	testenv.Eventually(t, "one fact in level 21 and one in level 18", func() bool {
		return b.depth(topology.DelayExchange(events, 21)) == 1 && b.depth(topology.DelayExchange(events, 18)) == 1
	})
	for _, k := range []int{22, 20, 19} {
		if n := b.depth(topology.DelayExchange(events, k)); n != 0 {
			t.Errorf("level %d holds %d facts, want none", k, n)
		}
	}
}
