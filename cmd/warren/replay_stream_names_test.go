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

// A replay's offset name is refused when it is the own name of any
// consumer of the manifest: the consumer's own, another stream consumer's
// of the same stream (whose offset it would position), a queue consumer's
// (whose guard claims it would share). Known from the manifest, so refused
// before anything is dialled, as a bad option value: exit 2. So is a
// consumer that reads a queue.
func TestReplayStreamRefusesAnotherConsumersName(t *testing.T) {
	dir := schemaDir(t, map[string]string{
		"warren.json": `{"package": "events",
  "streams": {"log": {"bindings": ["#"]}},
  "consumers": {
    "ledger": {"bindings": ["order.#"], "stream": "log"},
    "refund-audit": {"bindings": ["order.#"], "stream": "log", "start": "first"},
    "refund-mailer": {"bindings": ["order.#"]}
  }}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
	})
	// Nothing answers there: a replay that dialled would say so instead.
	closed := closedPort(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--consumer", "ledger", "--offset-name", "refund-audit", "--offset", "100", "--limit", "3"},
			`--offset-name: offset name "refund-audit" is the own name of consumer "refund-audit": it keeps its own offset on stream "log" under it`},
		{[]string{"--consumer", "ledger", "--offset-name", "refund-mailer", "--dry-run"},
			`--offset-name: offset name "refund-mailer" is the own name of consumer "refund-mailer": its guard claims facts under it`},
		{[]string{"--consumer", "ledger", "--offset-name", "ledger"}, `--offset-name: offset name "ledger" is the consumer's own`},
		{[]string{"--consumer", "refund-mailer", "--offset-name", "refund-mailer.r1"}, `consumer "refund-mailer" reads a queue, not a stream`},
	} {
		args := append(append([]string{"replay", "--url", "amqp://guest:guest@127.0.0.1:" + closed + "/", "--timeout", "1s", "--from", "stream"}, tc.args...), dir)
		code, out, errOut := run(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, closed) {
			t.Errorf("replay %v: exit %d, stdout %q, stderr %q; want exit 2 before dialling, and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, _, errOut := run(t, "replay", "--url", "amqp://guest:guest@127.0.0.1:"+closed+"/", "--timeout", "1s", "--from", "stream", "--consumer", "ledger", "--offset-name", "ledger.r1", dir); code != 1 || !strings.Contains(errOut, closed) {
		t.Errorf("a fresh name: exit %d, stderr %q; want it to dial (and fail to)", code, errOut)
	}
}

// A --limit the stream cannot fill from the start ends the replay at the
// stream's tail as it is now: the output says how many of the facts asked
// for it found, where the replay ends, and that facts written later are no
// part of it, a dry run too.
func TestReplayStreamShortOfItsLimit(t *testing.T) {
	b, port, _ := streamCase(t)
	history, log := b.name("history"), b.name("log")
	sp := strconv.Itoa(port)
	replay := func(args ...string) (int, string, string) {
		return b.run(append(append([]string{"replay", "--stream-port", sp, "--consumer", history, "--from", "stream"}, args...), b.dir)...)
	}
	code, out, errOut := replay("--offset-name", history+".short", "--offset", "1", "--limit", "20", "--dry-run")
	want := "would read offset 1 order.placed-b order.placed (handled)\n" +
		"would read offset 2 stock.counted-s stock.counted (skipped: not " + history + "'s)\n" +
		"would read offset 3 order.placed-c order.placed (handled)\n" +
		"would read offset 4 order.shipped-a order.shipped (handled)\n" +
		"replay " + history + ".short would read stream " + log + " from offset 1 to offset 4 (3 facts of " + history + "); dry run, nothing changed\n" +
		"note: only 3 of the 20 facts of " + history + " asked for (--limit 20) are in stream " + log + " from offset 1: the replay would end at offset 4, the stream's tail now; facts written later would be no part of it\n"
	if code != 0 || out != want {
		t.Fatalf("dry run: exit %d\n%s\nwant\n%s\nstderr: %s", code, out, want, errOut)
	}
	code, out, errOut = replay("--offset-name", history+".short", "--offset", "1", "--limit", "20")
	want = "replay " + history + ".short reads stream " + log + " from offset 1 to offset 4 (3 facts of " + history + "): run " + history + " with runtime.WithOffsetName(\"" + history + ".short\") to read it\n" +
		"note: only 3 of the 20 facts of " + history + " asked for (--limit 20) are in stream " + log + " from offset 1: the replay ends at offset 4, the stream's tail now; facts written later are no part of it\n"
	if code != 0 || !strings.HasSuffix(out, want) {
		t.Fatalf("exit %d\n%s\nwant it to end with\n%s\nstderr: %s", code, out, want, errOut)
	}
	// A limit the stream fills says nothing more.
	code, out, _ = replay("--offset-name", history+".two", "--offset", "1", "--limit", "2", "--dry-run")
	if code != 0 || strings.Contains(out, "note:") {
		t.Errorf("a limit the stream fills: exit %d\n%s", code, out)
	}
}

// sharedStreamSchemas has stream {{log}} read by two stream consumers,
// {{history}} and {{audit}}.
var sharedStreamSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "streams": {"{{log}}": {"bindings": ["#"], "maxAge": "1h"}},
  "consumers": {
    "{{history}}": {"bindings": ["order.#"], "stream": "{{log}}", "start": "first", "backoff": ["20ms"]},
    "{{audit}}": {"bindings": ["order.#"], "stream": "{{log}}", "start": "first", "backoff": ["20ms"]}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"sku": {"type": "string"}}}`,
}

// On a stream that two consumers read, warren status says whose replay a
// name is ("replay_of", "(replay of C)"), from the mark warren replay
// stores, and which consumers a name no replay marked (a reader started
// under a fresh name) may be for ("replay_of_one_of"); a name with nothing
// stored has no row, and is said so; the own name of the other consumer
// asked for with --offset-name is that consumer's own row, not a
// replay's. A replay under the other consumer's own name is refused and
// stores nothing.
func TestStatusReplayOfOnASharedStream(t *testing.T) {
	port := testenv.StreamPort(t)
	b := newBrokerCase(t, sharedStreamSchemas, "events", "retry", "dead", "log", "history", "audit")
	history, audit, log := b.name("history"), b.name("audit"), b.name("log")
	sp := strconv.Itoa(port)
	if code, _, errOut := b.run("declare", b.dir); code != 0 {
		t.Fatal(errOut)
	}
	for i := range 3 {
		id := fmt.Sprintf("order.placed-%d", i)
		b.publish(b.name("events"), "order.placed", amqp.Publishing{MessageId: id, ContentType: "application/json", Type: "order.placed",
			Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-01-01T00:00:00Z","payload":{"sku":"a"}}`, id)})
	}
	replay := func(consumer string, args ...string) (int, string, string) {
		return b.run(append(append([]string{"replay", "--stream-port", sp, "--consumer", consumer, "--from", "stream"}, args...), b.dir)...)
	}
	if code, _, errOut := replay(history, "--offset-name", audit, "--offset", "1", "--limit", "1"); code != 2 || !strings.Contains(errOut, `is the own name of consumer "`+audit+`"`) {
		t.Errorf("a replay of %s under %s's own name: exit %d, stderr %q; want exit 2", history, audit, code, errOut)
	}
	if code, _, errOut := replay(audit, "--offset-name", audit+".r1", "--offset", "1", "--limit", "1"); code != 0 {
		t.Fatal(errOut)
	}
	// From the first fact without a limit: nothing stored but the mark,
	// which keeps history's replay from the name.
	if code, _, errOut := replay(audit, "--offset-name", audit+".all"); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := replay(history, "--offset-name", audit+".all", "--dry-run"); code != 1 || !strings.Contains(errOut, `taken by a replay of consumer "`+audit+`"`) {
		t.Errorf("a replay of %s under a name %s's replay took: exit %d, stderr %q", history, audit, code, errOut)
	}

	// A reader under a name no warren replay positioned: it stores its
	// offset, and no mark.
	readUnder(t, b, port, "unmarked", 3)

	names := []string{"--offset-name", audit + ".r1", "--offset-name", audit + ".all", "--offset-name", "unmarked", "--offset-name", "nobody", "--offset-name", audit}
	code, out, errOut := b.run(append(append([]string{"status", "--stream-port", sp, "--format", "json"}, names...), b.dir)...)
	var st struct {
		Streams  []map[string]any `json:"streams"`
		Unstored []string         `json:"offset_names_not_stored"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	row := func(name string) []map[string]any {
		var rows []map[string]any
		for _, r := range st.Streams {
			if r["offset_name"] == name {
				rows = append(rows, r)
			}
		}
		return rows
	}
	if r := row(audit); len(r) != 1 || r[0]["consumer"] != audit || r[0]["stored"] != nil || r[0]["replay_of"] != nil {
		t.Errorf("%s's own row: %v, want one, its own, nothing stored under it\n%s", audit, r, out)
	}
	for _, name := range []string{audit + ".r1", audit + ".all"} {
		if r := row(name); len(r) != 1 || r[0]["consumer"] != nil || r[0]["replay_of"] != audit || r[0]["stream"] != log {
			t.Errorf("replay %s: %v, want one row with replay_of %s\n%s", name, r, audit, out)
		}
	}
	if r := row("unmarked"); len(r) != 1 || r[0]["replay_of"] != nil || fmt.Sprint(r[0]["replay_of_one_of"]) != fmt.Sprint([]any{audit, history}) {
		t.Errorf("a name no replay marked: %v, want replay_of_one_of [%s %s] (the manifest's order)\n%s", r, audit, history, out)
	}
	if r := row("nobody"); len(r) != 0 || !slices.Equal(st.Unstored, []string{"nobody"}) {
		t.Errorf("a name with nothing stored: rows %v, offset_names_not_stored %v; want no row, and it listed\n%s", r, st.Unstored, out)
	}

	code, out, errOut = b.run(append(append([]string{"status", "--stream-port", sp}, names...), b.dir)...)
	if code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(out, "\n")
	for _, want := range [][]string{
		{log, audit + ".r1", "(replay", "of", audit + ")", "0", "2", "2", "(1", "to", "its", "bound", "1)"},
		{log, "unmarked", "(replay", "of", "one", "of", audit + ",", history + ")", "2", "2", "0"},
	} {
		if !slices.ContainsFunc(lines, func(l string) bool { return slices.Equal(strings.Fields(l), want) }) {
			t.Errorf("no row %q:\n%s", strings.Join(want, " "), out)
		}
	}
}
