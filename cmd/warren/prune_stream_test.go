package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// pruneStreamSchemas has stream {{log}} of the order facts beside consumer
// {{mailer}}, which stays when the stream leaves the manifest.
var pruneStreamSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{log}}": {"bindings": ["order.#"], "maxAge": "1h"}},
  "consumers": {
    "{{mailer}}": {"bindings": ["order.placed"], "maxAttempts": 1}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"sku": {"type": "string"}}}`,
}

// A stream that leaves the manifest still holds its facts, however few the
// message count of a passive declare says (it lags by seconds after a
// publish): warren declare --prune keeps it, says why and how to delete it
// deliberately, and unbinds it so that no more facts reach it.
func TestDeclarePruneKeepsAnOrphanedStream(t *testing.T) {
	b := newBrokerCase(t, pruneStreamSchemas, "events", "retry", "dead", "log", "mailer")
	log, events := b.name("log"), b.name("events")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	const facts = 30
	for i := range facts {
		b.publish(events, "order.placed", amqp.Publishing{Body: fmt.Appendf(nil, `{"id":"f-%d","payload":{"sku":"x"}}`, i)})
	}
	b.editManifest(`"streams": {"`+log+`": {"bindings": ["order.#"], "maxAge": "1h"}},
  `, ``)

	deleteIt := "rabbitmqctl delete_queue " + log
	if vhost := vhostOf(t, b.url); vhost != "/" {
		deleteIt = "rabbitmqctl delete_queue -p " + shellWord(vhost) + " " + log
	}
	declaredLine := fmt.Sprintf("declared 3 exchanges, 2 queues and 2 bindings on %s\n", secret.URL(b.url))
	pruned := fmt.Sprintf("orphaned stream %q: kept, and unbound so that no more facts reach it; it holds the facts it was given for as long as its retention allows, and deleting it loses them, so warren declare --prune never deletes a stream; to delete it deliberately: %s\n", log, deleteIt)
	// Right after the publishes, as the user trial did.
	code, stdout, stderr := b.run("declare", "--prune", b.dir)
	if code != 0 || stdout != declaredLine+pruned || stderr != "" {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine+pruned)
	}
	if strings.Contains(stdout, `consumer ""`) {
		t.Errorf("declare --prune names an empty consumer for the stream:\n%s", stdout)
	}
	if !b.exists(log) {
		t.Fatalf("declare --prune deleted the orphaned stream %s", log)
	}
	if n := streamFacts(t, b, log); n != facts {
		t.Errorf("the kept stream holds %d facts, want %d", n, facts)
	}
	// Unbound: a fact published now no longer reaches it.
	b.publish(events, "order.placed", amqp.Publishing{Body: []byte(`{"id":"late","payload":{"sku":"x"}}`)})
	if n := streamFacts(t, b, log); n != facts {
		t.Errorf("after one more fact the unbound stream holds %d facts, want %d", n, facts)
	}

	// Still reported, never deleted.
	kept := fmt.Sprintf("orphaned stream %q: kept; it holds the facts it was given for as long as its retention allows, and deleting it loses them, so warren declare --prune never deletes a stream, but unbinds it so that no more facts reach it; to delete it deliberately: %s\n", log, deleteIt)
	if code, stdout, stderr := b.run("declare", b.dir); code != 0 || stdout != declaredLine+kept || stderr != "" {
		t.Errorf("declare after --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine+kept)
	}
	time.Sleep(6 * time.Second) // the stream's message count has caught up by now
	if code, stdout, stderr := b.run("declare", "--prune", b.dir); code != 0 || stdout != declaredLine+pruned || stderr != "" {
		t.Errorf("declare --prune again: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine+pruned)
	}
	if n := streamFacts(t, b, log); n != facts {
		t.Errorf("after a second --prune the stream holds %d facts, want %d", n, facts)
	}
}

// streamFacts reads stream queue from its first fact and returns how many
// it holds: a stream's message count lags, its facts do not.
func streamFacts(t *testing.T, b *brokerCase, queue string) int {
	t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Qos(100, 0, false); err != nil { // a stream refuses a consumer without prefetch
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, amqp.Table{"x-stream-offset": "first"})
	if err != nil {
		t.Fatalf("read stream %s: %v", queue, err)
	}
	n := 0
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				t.Fatalf("read stream %s: the channel closed after %d facts", queue, n)
			}
			n++
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Second): // nothing more
			return n
		}
	}
}

func vhostOf(t *testing.T, url string) string {
	t.Helper()
	u, err := amqp.ParseURI(url)
	if err != nil {
		t.Fatal(err)
	}
	return u.Vhost
}

// streamOf tells a stream and a super stream's partition from the other
// queues the record keeps: a consumer's, a delay level, the unroutable
// lane. What has no consumer and is none of those is kept as a stream.
func TestStreamOf(t *testing.T) {
	const events = "app.events"
	tests := []struct {
		name, consumer, queue string
		bindings              []topology.Binding
		want                  orphanedStream
		stream                bool
	}{
		{"stream", "", "app.log", []topology.Binding{{Exchange: events, Queue: "app.log", Key: "#"}}, orphanedStream{name: "app.log"}, true},
		{"partition", "", "sup-1", []topology.Binding{{Exchange: "sup", Queue: "sup-1", Key: "1", Partition: 2}}, orphanedStream{name: "sup-1", superStream: "sup"}, true},
		{"unknown, kept", "", "odd", nil, orphanedStream{name: "odd"}, true},
		{"work queue", "mailer", "mailer", []topology.Binding{{Exchange: events, Queue: "mailer", Key: "#"}}, orphanedStream{}, false},
		{"delay level", "", topology.DelayExchange(events, 3), []topology.Binding{{Exchange: topology.DelayExchange(events, 3), Queue: topology.DelayExchange(events, 3), Header: topology.DelayHeader(3)}}, orphanedStream{}, false},
		{"unroutable lane", "", topology.UnroutableQueue(events), []topology.Binding{{Exchange: topology.UnroutableQueue(events), Queue: topology.UnroutableQueue(events)}}, orphanedStream{}, false},
	}
	for _, tt := range tests {
		got, ok := streamOf(events, tt.consumer, tt.queue, tt.bindings)
		if got != tt.want || ok != tt.stream {
			t.Errorf("%s: streamOf = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.stream)
		}
	}
}

// The command that deletes a stream deliberately names the vhost, when it
// is not the default one, quoted for the shell where it must be; a URL
// that does not parse leaves a placeholder.
func TestDeleteHint(t *testing.T) {
	tests := []struct{ url, queue, superStream string }{
		{"amqp://svc:xxxxx@rabbit:5672/", "rabbitmqctl delete_queue app.log", "rabbitmq-streams delete_super_stream sup"},
		{"amqp://svc:xxxxx@rabbit:5672", "rabbitmqctl delete_queue app.log", "rabbitmq-streams delete_super_stream sup"},
		{"amqp://svc:xxxxx@rabbit:5672/orders", "rabbitmqctl delete_queue -p orders app.log", "rabbitmq-streams delete_super_stream sup --vhost orders"},
		{"amqp://svc:xxxxx@rabbit:5672/my%20vhost", "rabbitmqctl delete_queue -p 'my vhost' app.log", "rabbitmq-streams delete_super_stream sup --vhost 'my vhost'"},
		{"", "rabbitmqctl delete_queue -p '<vhost>' app.log", "rabbitmq-streams delete_super_stream sup --vhost '<vhost>'"},
	}
	for _, tt := range tests {
		h := deleteHintOf(tt.url)
		if got := h.queue("app.log"); got != tt.queue {
			t.Errorf("%q: queue: %q, want %q", tt.url, got, tt.queue)
		}
		if got := h.superStream("sup"); got != tt.superStream {
			t.Errorf("%q: super stream: %q, want %q", tt.url, got, tt.superStream)
		}
	}
}

// A super stream that leaves the manifest is kept the same way, partition
// by partition; --prune removes its exchange's binding to the events
// exchange, so that no more facts reach it, and keeps the exchange, by
// which readers find the partitions.
func TestDeclarePruneKeepsAnOrphanedSuperStream(t *testing.T) {
	testenv.StreamPort(t)
	b := newBrokerCase(t, pruneSuperStreamSchemas, "events", "retry", "dead", "sup", "mailer")
	if v := (transport.Network{Connection: b.conn}).ServerVersion(); !topology.SupportsSuperStreams(v) {
		t.Skipf("RabbitMQ %s has no super streams (%s or later); scripts/rabbitmq4 env points the tests at a RabbitMQ 4 node", v, topology.SuperStreamMinVersion)
	}
	sup, events := b.name("sup"), b.name("events")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	const facts = 12
	for i := range facts {
		b.publish(events, "order.placed", amqp.Publishing{Headers: amqp.Table{runtime.HeaderOrderingKey: fmt.Sprintf("k%d", i)},
			Body: fmt.Appendf(nil, `{"id":"f-%d","payload":{"sku":"k%d"}}`, i, i)})
	}
	b.editManifest(`"streams": {"`+sup+`": {"bindings": ["order.#"], "maxAge": "1h", "partitions": 2}},
  `, ``)

	deleteIt := "rabbitmq-streams delete_super_stream " + sup
	if vhost := vhostOf(t, b.url); vhost != "/" {
		deleteIt += " --vhost " + shellWord(vhost)
	}
	partition := func(i int) string {
		return fmt.Sprintf("orphaned stream %q, a partition of super stream %q: kept; it holds the facts it was given for as long as its retention allows, and deleting it loses them, so warren declare --prune never deletes a stream; to delete the super stream deliberately: %s\n",
			topology.PartitionStream(sup, i), sup, deleteIt)
	}
	declaredLine := fmt.Sprintf("declared 3 exchanges, 2 queues and 2 bindings on %s\n", secret.URL(b.url))
	reported := declaredLine + partition(0) + partition(1) +
		fmt.Sprintf("orphaned binding %q from %q to super stream %q: it still appends facts to the super stream; warren declare --prune removes it, and keeps the super stream\n", "order.#", events, sup)
	if code, stdout, stderr := b.run("declare", b.dir); code != 0 || stdout != reported || stderr != "" {
		t.Fatalf("declare: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, reported)
	}
	want := declaredLine + partition(0) + partition(1) +
		fmt.Sprintf("removed orphaned binding %q from %q to super stream %q: no more facts reach it; the super stream is kept\n", "order.#", events, sup)
	code, stdout, stderr := b.run("declare", "--prune", b.dir)
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	superStreamHolds := func(what string) {
		t.Helper()
		n := 0
		for i := range 2 {
			n += streamFacts(t, b, topology.PartitionStream(sup, i))
		}
		if n != facts {
			t.Errorf("%s: the super stream's partitions hold %d facts, want %d", what, n, facts)
		}
	}
	superStreamHolds("after --prune")
	b.publish(events, "order.placed", amqp.Publishing{Headers: amqp.Table{runtime.HeaderOrderingKey: "late"}, Body: []byte(`{"id":"late","payload":{"sku":"late"}}`)})
	superStreamHolds("after one more fact")

	// The partitions are still reported; the binding, removed, is not.
	if code, stdout, stderr := b.run("declare", "--prune", b.dir); code != 0 || stdout != declaredLine+partition(0)+partition(1) || stderr != "" {
		t.Errorf("declare --prune again: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine+partition(0)+partition(1))
	}
}

// pruneSuperStreamSchemas has super stream {{sup}} of 2 partitions beside
// consumer {{mailer}}, which stays when the super stream leaves.
var pruneSuperStreamSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{sup}}": {"bindings": ["order.#"], "maxAge": "1h", "partitions": 2}},
  "consumers": {
    "{{mailer}}": {"bindings": ["order.placed"], "maxAttempts": 1}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "x-ordering-key": "/sku", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
}

// A binding a stream loses while the stream stays is the stream's, not a
// consumer's: declare names the stream, says that the binding still
// appends facts to it (nothing is poisoned), and --prune removes it and
// keeps the stream with the facts it holds.
func TestDeclareReportsAStreamsOrphanedBinding(t *testing.T) {
	schemas := maps.Clone(pruneStreamSchemas)
	schemas["order/paid.json"] = `{"x-routing-key": "order.paid", "type": "object", "properties": {"sku": {"type": "string"}}}`
	b := newBrokerCase(t, schemas, "events", "retry", "dead", "log", "mailer")
	log, events := b.name("log"), b.name("events")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	b.editManifest(`"bindings": ["order.#"], "maxAge": "1h"`, `"bindings": ["order.placed"], "maxAge": "1h"`)

	declaredLine := fmt.Sprintf("declared 3 exchanges, 3 queues and 3 bindings on %s\n", secret.URL(b.url))
	reported := declaredLine + fmt.Sprintf("orphaned binding %q from %q to stream %q: it still appends facts to the stream; warren declare --prune removes it, and keeps the stream\n", "order.#", events, log)
	if code, stdout, stderr := b.run("declare", b.dir); code != 0 || stdout != reported || stderr != "" {
		t.Fatalf("declare: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, reported)
	}
	removed := declaredLine + fmt.Sprintf("removed orphaned binding %q from %q to stream %q; the stream is kept\n", "order.#", events, log)
	if code, stdout, stderr := b.run("declare", "--prune", b.dir); code != 0 || stdout != removed || stderr != "" {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, removed)
	}
	// order.paid no longer reaches the stream; order.placed, bound by the
	// manifest, does.
	b.publish(events, "order.paid", amqp.Publishing{Body: []byte(`{"id":"p-1","payload":{"sku":"x"}}`)})
	b.publish(events, "order.placed", amqp.Publishing{Body: []byte(`{"id":"o-1","payload":{"sku":"x"}}`)})
	if n := streamFacts(t, b, log); n != 1 {
		t.Errorf("after --prune the stream holds %d facts of one order.paid and one order.placed, want 1", n)
	}
	if code, stdout, stderr := b.run("declare", b.dir); code != 0 || stdout != declaredLine || stderr != "" {
		t.Errorf("declare after --prune: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, declaredLine)
	}
}
