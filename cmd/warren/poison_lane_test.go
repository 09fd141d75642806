package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

// versionedSchemas is opsSchemas with order.placed in two versions whose
// payloads differ: version 1 has sku, version 2 sku_code.
var versionedSchemas = map[string]string{
	"warren.json":          opsSchemas["warren.json"],
	"order/placed.v1.json": `{"x-routing-key": "order.placed", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}, "additionalProperties": false}`,
	"order/placed.v2.json": `{"x-routing-key": "order.placed", "x-version": 2, "type": "object", "required": ["sku_code"], "properties": {"sku_code": {"type": "string"}}, "additionalProperties": false}`,
	"order/paid.json":      opsSchemas["order/paid.json"],
}

// An edited payload is checked against the schema of the version the
// message was written under (x-fact-version; version 1 without the
// header, as the consumer reads it), not the newest; a version the
// directory does not have is refused with an error that says so; a
// refusal moves nothing.
func TestPoisonEditChecksTheMessagesVersion(t *testing.T) {
	b := newBrokerCaseAt(t, testenv.VHost(t, "poisonops"), versionedSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	mailer, archive := b.name("mailer"), b.name("mailer")+".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })
	for id, version := range map[string]any{"v1": int64(1), "v2": int64(2), "v3": int64(3), "none": nil} {
		msg := amqpPoisonCopy(id, "order.placed", b.name("events"), "boom", 3)
		if version != nil {
			msg.Headers[runtime.HeaderFactVersion] = version
		}
		b.publish(b.name("dead"), mailer, msg)
	}
	dir := t.TempDir()
	file := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1, v2 := file("v1.json", `{"sku": "AB-1"}`), file("v2.json", `{"sku_code": "AB-1"}`)
	edit := func(id, payload string) (int, string, string) {
		return b.poison("edit", "--consumer", mailer, "--id", id, "--payload", payload, b.dir)
	}

	for _, tc := range []struct{ id, payload, want string }{
		{"v1", v2, "the edited payload is refused: does not match schema order/placed.v1.json"},
		{"v2", v1, "the edited payload is refused: does not match schema order/placed.v2.json"},
		{"none", v2, "the edited payload is refused: does not match schema order/placed.v1.json"},
		{"v3", v2, "the edited payload is refused: the message is order.placed version 3 (x-fact-version), and the schema directory has versions 1, 2 of it: no schema to check the payload against; nothing changed"},
	} {
		code, stdout, stderr := edit(tc.id, tc.payload)
		if code != 1 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("edit %s with %s: exit %d, stdout %q, stderr %q; want %q", tc.id, filepath.Base(tc.payload), code, stdout, stderr, tc.want)
		}
	}
	code, _, stderr := b.poison("edit", "--consumer", mailer, "--id", "v1", "--id", "v2", "--payload", v1, b.dir)
	if code != 2 || !strings.HasPrefix(stderr, "warren poison edit: --id given 2 times: an edit replaces one message's payload; expected one --id\n") {
		t.Errorf("edit with two ids: exit %d, stderr %q", code, stderr)
	}
	if p, w, a := b.depth(mailer+".poison"), b.depth(mailer), b.depth(archive); p != 4 || w != 0 || a != 0 {
		t.Fatalf("after refused edits: poison %d, work %d, archive %d; want 4, 0, 0", p, w, a)
	}

	for _, tc := range []struct{ id, payload, body string }{
		{"v1", v1, `{"id":"v1","payload":{"sku":"AB-1"}}`},
		{"v2", v2, `{"id":"v2","payload":{"sku_code":"AB-1"}}`},
		{"none", v1, `{"id":"none","payload":{"sku":"AB-1"}}`},
	} {
		if code, _, stderr := edit(tc.id, tc.payload); code != 0 {
			t.Errorf("edit %s: exit %d, %s", tc.id, code, stderr)
			continue
		}
		work := b.take(mailer)
		if len(work) != 1 || string(work[0].Body) != tc.body {
			t.Errorf("edit %s: the work queue holds %d messages, %+v", tc.id, len(work), work)
		}
	}
	if p, a := b.depth(mailer+".poison"), b.depth(archive); p != 1 || a != 3 {
		t.Errorf("after the edits: poison %d, archive %d; want 1 and 3", p, a)
	}
}

// warren console's edit checks a payload as warren poison edit does: in
// the version the message was written under, from the same schema
// directory. A version-1 message takes a payload valid for version 1 and
// refuses one valid only for version 2, the newest; a version-2 message
// the reverse.
func TestConsoleEditChecksTheMessagesVersion(t *testing.T) {
	b := newBrokerCaseAt(t, testenv.VHost(t, "poisonops"), versionedSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	mailer, archive := b.name("mailer"), b.name("mailer")+".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })
	for id, version := range map[string]int64{"v1": 1, "v2": 2} {
		msg := amqpPoisonCopy(id, "order.placed", b.name("events"), "boom", 3)
		msg.Headers[runtime.HeaderFactVersion] = version
		b.publish(b.name("dead"), mailer, msg)
	}
	c := startConsole(t, b.url, b.dir)
	edit := c.page + "api/consumers/" + mailer + "/edit"
	body := func(id, payload string) string {
		out, err := json.Marshal(map[string]string{"id": id, "payload": payload})
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	v1, v2 := `{"sku": "AB-1"}`, `{"sku_code": "AB-1"}`
	for _, tc := range []struct{ id, payload string }{{"v1", v2}, {"v2", v1}} {
		if got := post(t, edit, c.token, body(tc.id, tc.payload)); got != http.StatusUnprocessableEntity {
			t.Errorf("edit %s with %s: %d, want 422", tc.id, tc.payload, got)
		}
	}
	if p, w := b.depth(mailer+".poison"), b.depth(mailer); p != 2 || w != 0 {
		t.Fatalf("after refused edits: poison %d, work %d; want 2 and 0", p, w)
	}
	for _, tc := range []struct{ id, payload, body string }{
		{"v1", v1, `{"id":"v1","payload":{"sku":"AB-1"}}`},
		{"v2", v2, `{"id":"v2","payload":{"sku_code":"AB-1"}}`},
	} {
		if got := post(t, edit, c.token, body(tc.id, tc.payload)); got != http.StatusOK {
			t.Errorf("edit %s with %s: %d, want 200", tc.id, tc.payload, got)
			continue
		}
		if work := b.take(mailer); len(work) != 1 || string(work[0].Body) != tc.body {
			t.Errorf("edit %s: the work queue holds %d messages, %+v", tc.id, len(work), work)
		}
	}
	if p, a := b.depth(mailer+".poison"), b.depth(archive); p != 0 || a != 2 {
		t.Errorf("after the edits: poison %d, archive %d; want 0 and 2", p, a)
	}
}

// A dry run with --limit changes nothing, order included: consecutive
// dry runs list the same messages, and the replay with the same selection
// moves exactly those; the rest keeps its order.
func TestReplayDryRunKeepsTheOrder(t *testing.T) {
	b, mailer := poisonLane(t, "m1", "m2", "m3", "m4", "m5", "m6")
	want := fmt.Sprintf("would replay m1 order.placed\nwould replay m2 order.placed\n2 messages would move from %s.poison to %s; dry run, nothing changed\n", mailer, mailer)
	for run := 1; run <= 3; run++ {
		code, stdout, stderr := b.run("replay", "--consumer", mailer, "--dry-run", "--limit", "2", b.dir)
		if code != 0 || stdout != want {
			t.Errorf("dry run %d: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", run, code, stderr, stdout, want)
		}
	}
	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--limit", "2", b.dir)
	if want := fmt.Sprintf("replayed m1 order.placed\nreplayed m2 order.placed\n2 messages moved from %s.poison to %s\n", mailer, mailer); code != 0 || stdout != want {
		t.Fatalf("replay --limit 2: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	if got := messageIDs(b.take(mailer)); got != "m1 m2" {
		t.Errorf("the work queue holds %s, want m1 m2", got)
	}
	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--dry-run", "--limit", "1", "--routing-key", "order.placed", b.dir)
	if code != 0 || !strings.HasPrefix(stdout, "would replay m3 order.placed\n") {
		t.Errorf("dry run by routing key: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	// A discard that stops at its limit leaves the rest in order too.
	archive := mailer + ".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })
	code, stdout, stderr = b.run("discard", "--consumer", mailer, "--routing-key", "order.placed", "--limit", "1", "--reason", "test", b.dir)
	if code != 0 || !strings.HasPrefix(stdout, "discarded m3 order.placed\n") {
		t.Errorf("discard --limit 1: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	if got := messageIDs(b.take(mailer + ".poison")); got != "m4 m5 m6" {
		t.Errorf("the poison queue holds %s, want m4 m5 m6 in order", got)
	}
}

func messageIDs(ds []amqp.Delivery) string {
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.MessageId)
	}
	return strings.Join(ids, " ")
}

// Output never shows a credential: export and replay --list --format json
// mask the values of headers whose names say they hold one. A retry moves
// the message as it is, header and all: it is a message, not output.
func TestPoisonOutputMasksCredentialHeaders(t *testing.T) {
	b, mailer := poisonCase(t)
	msg := amqpPoisonCopy("m1", "order.placed", b.name("events"), "boom", 3)
	msg.Headers["authorization"] = "Bearer SECRET-TOKEN-123"
	msg.Headers["X-Api-Key"] = "SECRET-KEY"
	msg.Headers["x-tenant"] = "acme"
	b.publish(b.name("dead"), mailer, msg)
	groups := b.groupsOf(mailer)
	if len(groups) != 1 {
		t.Fatalf("groups: %+v", groups)
	}

	code, stdout, stderr := b.poison("export", "--consumer", mailer, "--group", groups[0].ID, b.dir)
	if code != 0 || strings.Contains(stdout+stderr, "SECRET") {
		t.Errorf("export: exit %d, stderr %q, stdout %s", code, stderr, stdout)
	}
	var line struct {
		Headers map[string]any `json:"headers"`
	}
	if err := json.Unmarshal([]byte(stdout), &line); err != nil || line.Headers["authorization"] != "xxxxx" || line.Headers["X-Api-Key"] != "xxxxx" || line.Headers["x-tenant"] != "acme" {
		t.Errorf("export headers %v, %v", line.Headers, err)
	}
	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--list", "--format", "json", b.dir)
	if code != 0 || strings.Contains(stdout+stderr, "SECRET") || !strings.Contains(stdout, `"authorization": "xxxxx"`) {
		t.Errorf("replay --list --format json: exit %d, stderr %q, stdout %s", code, stderr, stdout)
	}

	t.Cleanup(func() { b.deleteQueue(mailer + ".poison-history") })
	if code, _, stderr := b.poison("retry", "--consumer", mailer, "--group", groups[0].ID, b.dir); code != 0 {
		t.Fatalf("retry: exit %d, %s", code, stderr)
	}
	work := b.take(mailer)
	if len(work) != 1 || work[0].Headers["authorization"] != "Bearer SECRET-TOKEN-123" || work[0].Headers["X-Api-Key"] != "SECRET-KEY" {
		t.Errorf("the retried message lost its headers: %+v", work)
	}
}

// --id may be repeated: each selects its message. A real replay moves the
// ones there are and exits 1 naming those it did not find.
func TestReplayRepeatedID(t *testing.T) {
	b, mailer := poisonLane(t, "m1", "m2", "m3", "m4")
	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--dry-run", "--id", "m3", "--id", "m1", b.dir)
	want := fmt.Sprintf("would replay m1 order.placed\nwould replay m3 order.placed\n2 messages would move from %s.poison to %s; dry run, nothing changed\n", mailer, mailer)
	if code != 0 || stdout != want {
		t.Errorf("dry run: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--list", "--id", "m2", "--id", "m4", "--format", "json", b.dir)
	if code != 0 || !strings.Contains(stdout, `"id": "m2"`) || !strings.Contains(stdout, `"id": "m4"`) || strings.Contains(stdout, `"id": "m1"`) {
		t.Errorf("list: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--id", "m3", "--id", "zz", "--id", "m1", b.dir)
	if want := fmt.Sprintf("replayed m1 order.placed\nreplayed m3 order.placed\n2 messages moved from %s.poison to %s\n", mailer, mailer); code != 1 || stdout != want ||
		stderr != fmt.Sprintf("warren replay: no message with id \"zz\" in %s.poison\n", mailer) {
		t.Errorf("replay: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	if got := messageIDs(b.take(mailer)); got != "m1 m3" {
		t.Errorf("the work queue holds %s, want m1 m3", got)
	}
	if got := messageIDs(b.take(mailer + ".poison")); got != "m2 m4" {
		t.Errorf("the poison queue holds %s, want m2 m4", got)
	}
}

// An id that two messages of the lane have (a fact poisoned again while an
// older copy stayed) does not say which to edit: the edit is refused with
// the copies listed, and the lane keeps its messages and their order.
// --copy N edits the Nth alone; a copy past the last is not found.
func TestPoisonEditRefusesAnIDWithSeveralCopies(t *testing.T) {
	b, mailer := poisonCase(t)
	archive := mailer + ".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })
	b.publish(b.name("dead"), mailer, amqpPoisonCopy("m1", "order.placed", b.name("events"), "stock gone", 3))
	b.publish(b.name("dead"), mailer, amqpPoisonCopy("m2", "order.placed", b.name("events"), "boom", 3))
	again := amqpPoisonCopy("m1", "order.placed", b.name("events"), "stock gone again", 3)
	again.Headers[runtime.HeaderFailedAt] = "2024-05-01T11:00:00Z"
	again.Headers["x-replay-count"] = int64(1)
	b.publish(b.name("dead"), mailer, again)
	payload := filepath.Join(t.TempDir(), "fixed.json")
	if err := os.WriteFile(payload, []byte(`{"sku": "AB-1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := func(args ...string) (int, string, string) {
		return b.poison("edit", append([]string{"--consumer", mailer, "--id", "m1", "--payload", payload}, append(args, b.dir)...)...)
	}

	code, stdout, stderr := edit()
	want := "warren poison edit: edit m1 in " + mailer + `.poison: 2 messages have id "m1": ` +
		"copy 1 at position 1 (order.placed, failed at 2024-05-01T10:00:05Z: stock gone); " +
		"copy 2 at position 3 (order.placed, failed at 2024-05-01T11:00:00Z, replayed 1 time: stock gone again); " +
		"nothing changed; say which to edit with --copy N, then edit or discard the others\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("edit of a shared id: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, stdout, stderr, want)
	}
	if code, _, stderr := edit("--copy", "3"); code != 1 || !strings.Contains(stderr, `no such message: no copy 3 of id "m1": 2 messages have id "m1": copy 1 at position 1`) {
		t.Errorf("edit --copy 3: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := edit("--copy", "0"); code != 2 || !strings.HasPrefix(stderr, "warren poison edit: --copy 0: expected 1 or more") {
		t.Errorf("edit --copy 0: exit %d, stderr %q", code, stderr)
	}
	if p, w, a := b.depth(mailer+".poison"), b.depth(mailer), b.depth(archive); p != 3 || w != 0 || a != 0 {
		t.Fatalf("after refused edits: poison %d, work %d, archive %d; want 3, 0, 0", p, w, a)
	}

	code, stdout, stderr = edit("--copy", "2")
	if want := fmt.Sprintf("edited m1 (copy 2) order.placed: retried to %s, the original kept in %s\n", mailer, archive); code != 0 || stdout != want {
		t.Fatalf("edit --copy 2: exit %d, stderr %q, stdout %q, want %q", code, stderr, stdout, want)
	}
	work := b.take(mailer)
	if len(work) != 1 || string(work[0].Body) != `{"id":"m1","payload":{"sku":"AB-1"}}` || work[0].Headers[poison.HeaderLastFailure] != "stock gone again" {
		t.Errorf("the work queue holds %d messages: %+v", len(work), work)
	}
	left := b.take(mailer + ".poison")
	if len(left) != 2 || left[0].MessageId != "m1" || left[0].Headers[runtime.HeaderFailure] != "stock gone" || left[1].MessageId != "m2" {
		t.Errorf("the lane holds %d messages, want the first m1 then m2: %+v", len(left), left)
	}
}
