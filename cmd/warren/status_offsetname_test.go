package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
)

// twoStreamSchemas has streams {{ledger-log}} and {{audit-log}}, each read
// by a consumer of its own.
var twoStreamSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{ledger-log}}": {"bindings": ["#"], "maxAge": "1h"}, "{{audit-log}}": {"bindings": ["#"], "maxAge": "1h"}},
  "consumers": {
    "{{ledger-reader}}": {"bindings": ["order.#"], "stream": "{{ledger-log}}", "start": "first", "backoff": ["20ms"]},
    "{{audit-reader}}": {"bindings": ["order.#"], "stream": "{{audit-log}}", "start": "first", "backoff": ["20ms"]}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"sku": {"type": "string"}}}`,
}

// warren status --offset-name shows a replay's name only on the stream it
// was positioned on, naming the consumer it reads for, in the table as in
// --format json: not on another consumer's stream, where nothing is
// stored under it (there it was shown, and named that stream's consumer).
func TestStatusOffsetNameOnlyWhereStored(t *testing.T) {
	port := testenv.StreamPort(t)
	b := newBrokerCase(t, twoStreamSchemas, "events", "retry", "dead", "ledger-log", "audit-log", "ledger-reader", "audit-reader")
	ledger, ledgerLog := b.name("ledger-reader"), b.name("ledger-log")
	sp := strconv.Itoa(port)
	if code, _, errOut := b.run("declare", "--stream-port", sp, b.dir); code != 0 {
		t.Fatal(errOut)
	}
	for i := range 3 {
		id := fmt.Sprintf("order.placed-%d", i)
		b.publish(b.name("events"), "order.placed", amqp.Publishing{MessageId: id, ContentType: "application/json", Type: "order.placed",
			Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-01-01T00:00:00Z","payload":{"sku":"a"}}`, id)})
	}
	name := ledger + ".rb3"
	if code, _, errOut := b.run("replay", "--stream-port", sp, "--consumer", ledger, "--from", "stream", "--offset-name", name, "--offset", "1", "--limit", "5", b.dir); code != 0 {
		t.Fatal(errOut)
	}

	code, out, errOut := b.run("status", "--stream-port", sp, "--offset-name", name, "--format", "json", b.dir)
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	var rows []streamLag
	for _, r := range st.Streams {
		if r.OffsetName == name {
			rows = append(rows, r)
		}
	}
	if len(rows) != 1 || rows[0].Stream != ledgerLog || rows[0].ReplayOf != ledger || rows[0].Until == nil || *rows[0].Until != 2 {
		t.Errorf("rows of %s: %+v, want one, on %s, the replay of %s bound at 2\n%s", name, rows, ledgerLog, ledger, out)
	}
	if len(st.Unstored) != 0 || errOut != "" {
		t.Errorf("offset_names_not_stored %v, stderr %q: want neither", st.Unstored, errOut)
	}

	code, out, errOut = b.run("status", "--stream-port", sp, "--offset-name", name, b.dir)
	if code != 0 {
		t.Fatal(errOut)
	}
	want := []string{ledgerLog, name, "(replay", "of", ledger + ")", "0", "2", "2", "(2", "to", "its", "bound", "2)"}
	lines := strings.Split(out, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return slices.Equal(strings.Fields(l), want) }) || strings.Count(out, name) != 1 {
		t.Errorf("want one row of %s, %q:\n%s", name, strings.Join(want, " "), out)
	}
}
