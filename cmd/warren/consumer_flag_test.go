package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// consumerFlagSchemas has consumers of every kind: two of queues, one of
// a stream, one of a super stream.
var consumerFlagSchemas = map[string]string{
	"warren.json": `{"package": "events",
  "streams": {"log": {"bindings": ["order.#"]}, "orders": {"bindings": ["order.#"], "partitions": 3}},
  "consumers": {"mailer": {"bindings": ["order.#"]}, "ledger": {"bindings": ["order.placed"]},
    "history": {"bindings": ["order.#"], "stream": "log"}, "archive": {"bindings": ["order.#"], "stream": "orders"}}}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "x-ordering-key": "/sku", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
}

// Every command that takes --consumer refuses a value the manifest shows
// bad (a consumer it does not declare, a slip of one, an empty name, a
// consumer of a kind the command cannot act on) as a wrong command line:
// exit 2, before anything is dialled, with a message naming the
// consumers it takes and the command's usage line.
func TestBadConsumerFlagIsAUsageError(t *testing.T) {
	dir := schemaDir(t, consumerFlagSchemas)
	payload := filepath.Join(t.TempDir(), "fixed.json")
	if err := os.WriteFile(payload, []byte(`{"sku": "A"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Nothing answers there: a command that dialled would fail with
	// exit 1 and name the port.
	port := closedPort(t)
	url := "amqp://guest:guest@127.0.0.1:" + port + "/"

	commands := []struct {
		name string   // as errors name it
		args []string // before --consumer
		more []string // after it
	}{
		{"declare", []string{"declare"}, nil},
		{"discard", []string{"discard"}, []string{"--reason", "test orders", "--all"}},
		{"poison groups", []string{"poison", "groups"}, nil},
		{"poison retry", []string{"poison", "retry"}, []string{"--group", "3fa2b1c09e4d"}},
		{"poison discard", []string{"poison", "discard"}, []string{"--group", "3fa2b1c09e4d", "--reason", "test orders"}},
		{"poison export", []string{"poison", "export"}, []string{"--group", "3fa2b1c09e4d"}},
		{"poison edit", []string{"poison", "edit"}, []string{"--id", "0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11", "--payload", payload}},
		{"poison history", []string{"poison", "history"}, nil},
		{"replay", []string{"replay"}, nil},
		{"replay", []string{"replay"}, []string{"--from", "discarded", "--list"}},
		{"replay", []string{"replay"}, []string{"--from", "stream", "--offset-name", "history.rebuild"}},
	}
	const all = "expected one of archive, history, ledger, mailer"
	values := []struct {
		consumer string
		want     string // in the message
	}{
		{"nobody", `--consumer: consumer "nobody": not in the manifest; ` + all},
		{"mialer", `--consumer: consumer "mialer": not in the manifest; did you mean "mailer"? ` + all},
		{" mailer", `--consumer: consumer " mailer": not in the manifest; did you mean "mailer"? ` + all},
		{"Mailer", `--consumer: consumer "Mailer": not in the manifest; did you mean "mailer"? ` + all},
	}
	check := func(t *testing.T, name string, args []string, want string) {
		t.Helper()
		code, stdout, stderr := run(t, args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "warren "+name+": ") || !strings.Contains(stderr, want) ||
			!strings.Contains(stderr, "\nusage: warren "+name+" ") || strings.Contains(stderr, port) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2, nothing dialled, %q and the usage line", args, code, stdout, stderr, want)
		}
	}
	for _, cmd := range commands {
		for _, v := range values {
			if cmd.name == "declare" && v.consumer != strings.TrimSpace(v.consumer) {
				continue // a repeatable option's values are trimmed: " mailer" is mailer
			}
			args := slices.Concat(cmd.args, []string{"--url", url, "--timeout", "1s", "--consumer", v.consumer}, cmd.more, []string{dir})
			check(t, cmd.name, args, v.want)
		}
		// An empty name: declare has no consumer of that name; the others
		// require one.
		want := "expected --consumer NAME"
		if cmd.name == "declare" {
			want = `--consumer: consumer "": not in the manifest; ` + all
		}
		check(t, cmd.name, slices.Concat(cmd.args, []string{"--url", url, "--consumer", ""}, cmd.more, []string{dir}), want)
	}

	// A consumer of a kind the command cannot act on: --from stream
	// replays a consumer of a stream, not one of a queue nor one of a
	// super stream.
	const streams = "expected a consumer that reads a stream that is no super stream: history"
	for consumer, want := range map[string]string{
		"mailer":  `--from stream: consumer "mailer" reads a queue, not a stream (warren.json "stream"); ` + streams,
		"archive": `--from stream: consumer "archive" reads super stream "orders": a replay cannot re-read it under a fresh offset name`,
	} {
		check(t, "replay", []string{"replay", "--url", url, "--consumer", consumer, "--from", "stream", "--offset-name", "r", dir}, want)
	}
	check(t, "replay", []string{"replay", "--url", url, "--consumer", "archive", "--from", "stream", "--offset-name", "r", dir}, streams)
	// And --from unroutable belongs to no consumer.
	check(t, "replay", []string{"replay", "--url", url, "--from", "unroutable", "--consumer", "mailer", dir}, "expected no --consumer")

	// A manifest without consumers says so.
	none := schemaDir(t, map[string]string{
		"warren.json":       `{"package": "events"}`,
		"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
	})
	check(t, "declare", []string{"declare", "--url", url, "--consumer", "mailer", none}, `--consumer: consumer "mailer": the manifest declares no consumers`)
	check(t, "replay", []string{"replay", "--url", url, "--consumer", "mailer", none}, `--consumer: consumer "mailer": the manifest declares no consumers`)
}
