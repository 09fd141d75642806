package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/cmd/warren/internal/declared"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

// brokerCase is a schema directory whose exchange and consumer names
// belong to one test, and a plain connection to inspect the broker with.
// Everything the topology declares is deleted when the test ends, whoever
// declared it.
type brokerCase struct {
	t     *testing.T
	url   string
	dir   string
	model *model.Model
	conn  *amqp.Connection
	names map[string]string // the prefix given to the case -> the unique name
}

// newBrokerCase writes a schema directory from files, in which every
// {{name}} becomes a unique name made from name. Placeholders name
// exchanges and consumers.
func newBrokerCase(t *testing.T, files map[string]string, placeholders ...string) *brokerCase {
	t.Helper()
	return newBrokerCaseAt(t, testenv.AMQPURL(t), files, placeholders...)
}

// newBrokerCaseAt is newBrokerCase on the broker (or vhost) at url.
func newBrokerCaseAt(t *testing.T, url string, files map[string]string, placeholders ...string) *brokerCase {
	t.Helper()
	names := map[string]string{}
	var pairs []string
	for _, p := range placeholders {
		names[p] = testenv.Name(p)
		pairs = append(pairs, "{{"+p+"}}", names[p])
	}
	r := strings.NewReplacer(pairs...)
	out := map[string]string{}
	for name, src := range files {
		out[name] = r.Replace(src)
	}
	dir := schemaDir(t, out)
	p, err := generator.Open(context.Background(), dir, generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	b := &brokerCase{t: t, url: url, dir: dir, model: m, conn: conn, names: names}
	t.Cleanup(b.cleanup)
	return b
}

func (b *brokerCase) cleanup() {
	defer b.conn.Close()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Errorf("cleanup: %v", err)
		return
	}
	defer ch.Close()
	for _, q := range b.model.Topology.Queues {
		if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
			b.t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
			return
		}
	}
	// A replay, discard or group action records in the consumer's
	// history queue, which no topology lists; deleting one that was never
	// made is no error.
	for _, c := range b.model.Topology.Consumers {
		if _, err := ch.QueueDelete(poison.HistoryQueue(c), false, false, false); err != nil {
			b.t.Errorf("cleanup: delete queue %s: %v", poison.HistoryQueue(c), err)
			return
		}
	}
	// warren declare's record of what it declared.
	if _, err := ch.QueueDelete(declared.QueueName(b.model.Topology.Exchanges[0].Name), false, false, false); err != nil {
		b.t.Errorf("cleanup: delete the declare record: %v", err)
		return
	}
	for _, e := range b.model.Topology.Exchanges {
		if err := ch.ExchangeDelete(e.Name, false, false); err != nil {
			b.t.Errorf("cleanup: delete exchange %s: %v", e.Name, err)
			return
		}
	}
}

// name returns the unique name made for a placeholder.
func (b *brokerCase) name(placeholder string) string { return b.names[placeholder] }

// run runs a CLI command with --url pointing at the test broker: args[0]
// is the command, and the flag goes right after it.
func (b *brokerCase) run(args ...string) (int, string, string) {
	b.t.Helper()
	return run(b.t, append([]string{args[0], "--url", b.url}, args[1:]...)...)
}

// exists reports whether a queue exists, by passive declare.
func (b *brokerCase) exists(queue string) bool {
	_, err := b.inspect(queue)
	return err == nil
}

func (b *brokerCase) inspect(queue string) (amqp.Queue, error) {
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	return ch.QueueDeclarePassive(queue, true, false, false, false, nil)
}

// depth returns the ready messages of a queue.
func (b *brokerCase) depth(queue string) int {
	b.t.Helper()
	q, err := b.inspect(queue)
	if err != nil {
		b.t.Fatal(err)
	}
	return q.Messages
}

// publish sends a body to an exchange and waits for the confirm.
func (b *brokerCase) publish(exchange, key string, msg amqp.Publishing) {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		b.t.Fatal(err)
	}
	dc, err := ch.PublishWithDeferredConfirm(exchange, key, true, false, msg)
	if err != nil || !dc.Wait() {
		b.t.Fatalf("publish to %s with %s: %v", exchange, key, err)
	}
}

// opsSchemas is a small directory for the broker commands: consumer
// {{mailer}} on quorum queues with a two-step ladder, {{audit}} on classic
// queues, both bound to order.placed.
var opsSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "consumers": {
    "{{mailer}}": {"bindings": ["order.placed"], "maxAttempts": 3, "backoff": ["20ms", "40ms"]},
    "{{audit}}": {"bindings": ["order.*"], "queueType": "classic", "maxAttempts": 1}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
	"order/paid.json":   `{"x-routing-key": "order.paid", "type": "object", "properties": {"sku": {"type": "string"}}}`,
}

var opsPlaceholders = []string{"events", "retry", "dead", "mailer", "audit"}

// amqpPoisonCopy is a message as the runtime puts it in a poison queue.
func amqpPoisonCopy(id, key, exchange, failure string, attempts int) amqp.Publishing {
	return amqp.Publishing{
		MessageId: id, ContentType: "application/json", Type: key, DeliveryMode: amqp.Persistent,
		Body: fmt.Appendf(nil, `{"id":%q,"payload":{"sku":"x"}}`, id),
		Headers: amqp.Table{
			runtime.HeaderAttempts:           int64(attempts),
			runtime.HeaderFailure:            failure,
			runtime.HeaderFailedAt:           "2024-05-01T10:00:05Z",
			runtime.HeaderOriginalRoutingKey: key,
			runtime.HeaderOriginalExchange:   exchange,
		},
	}
}

// deleteQueue deletes a queue the test made besides its topology.
func (b *brokerCase) deleteQueue(queue string) {
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Errorf("delete %s: %v", queue, err)
		return
	}
	defer ch.Close()
	if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
		b.t.Errorf("delete %s: %v", queue, err)
	}
}

// deleteQueueMessages purges a queue.
func (b *brokerCase) deleteQueueMessages(queue string) {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueuePurge(queue, false); err != nil {
		b.t.Fatal(err)
	}
}

// editManifest rewrites the case's warren.json with the old, new string
// pairs of oldnew (as strings.NewReplacer takes them), failing the test
// if that changes nothing: a test whose edit no longer matches would
// declare what it declared before and test nothing.
func (b *brokerCase) editManifest(oldnew ...string) {
	b.t.Helper()
	manifest := filepath.Join(b.dir, "warren.json")
	src, err := os.ReadFile(manifest)
	if err != nil {
		b.t.Fatal(err)
	}
	changed := strings.NewReplacer(oldnew...).Replace(string(src))
	if changed == string(src) {
		b.t.Fatalf("editing warren.json: none of %q is in it", oldnew)
	}
	if err := os.WriteFile(manifest, []byte(changed), 0o644); err != nil {
		b.t.Fatal(err)
	}
}
