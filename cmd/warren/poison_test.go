package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/poison"
)

// poisonCase is the ops topology declared in a vhost of the test's own,
// consumer {{mailer}}'s poison queue filled by the test.
func poisonCase(t *testing.T) (*brokerCase, string) {
	t.Helper()
	b := newBrokerCaseAt(t, testenv.VHost(t, "poisonops"), opsSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	return b, b.name("mailer")
}

// poison runs `warren poison SUB` against the test's broker.
func (b *brokerCase) poison(sub string, args ...string) (int, string, string) {
	b.t.Helper()
	return run(b.t, append([]string{"poison", sub, "--url", b.url}, args...)...)
}

// poisonFailures puts one poison copy per failure in mailer's poison
// queue, ids m1, m2, ...
func (b *brokerCase) poisonFailures(mailer string, failures ...string) {
	b.t.Helper()
	for i, f := range failures {
		b.publish(b.name("dead"), mailer, amqpPoisonCopy(fmt.Sprintf("m%d", i+1), "order.placed", b.name("events"), f, 3))
	}
}

const (
	failSKU   = `payload of order.placed does not match its schema: /lines/%d/sku: required property "sku"`
	failStock = `order %d: warehouse said "no stock for SKU-%d"`
)

// groupsOf runs poison groups --format json and returns the groups.
func (b *brokerCase) groupsOf(mailer string, more ...string) []poison.Group {
	b.t.Helper()
	code, stdout, stderr := b.poison("groups", append([]string{"--consumer", mailer, "--format", "json"}, append(more, b.dir)...)...)
	if code != 0 {
		b.t.Fatalf("poison groups: exit %d, %s", code, stderr)
	}
	var out struct {
		Messages int            `json:"messages"`
		Groups   []poison.Group `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		b.t.Fatalf("poison groups --format json: %v\n%s", err, stdout)
	}
	return out.Groups
}

func TestPoisonGroups(t *testing.T) {
	b, mailer := poisonCase(t)
	b.poisonFailures(mailer, fmt.Sprintf(failSKU, 0), fmt.Sprintf(failStock, 1, 1), fmt.Sprintf(failSKU, 3), fmt.Sprintf(failStock, 2, 7), fmt.Sprintf(failStock, 3, 9))

	groups := b.groupsOf(mailer)
	if len(groups) != 2 || groups[0].Count != 3 || groups[1].Count != 2 {
		t.Fatalf("groups: %+v", groups)
	}
	if g := groups[0]; g.Cause.Kind != poison.KindHandler || g.Cause.Text != `order <n>: warehouse said "…"` || g.RoutingKeys[0] != (poison.KeyCount{Key: "order.placed", Count: 3}) {
		t.Errorf("handler group: %+v", g)
	}
	if g := groups[1]; g.Cause.Kind != poison.KindValidation || len(g.Cause.Problems) != 1 || g.Cause.Problems[0].Pointer != "/lines/*/sku" {
		t.Errorf("validation group: %+v", g)
	}
	code, stdout, stderr := b.poison("groups", "--consumer", mailer, b.dir)
	if code != 0 || !strings.Contains(stdout, groups[0].ID+"  handler") || !strings.HasSuffix(stdout, fmt.Sprintf("5 messages in %s.poison, 2 groups\n", mailer)) {
		t.Errorf("poison groups: exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
	if p := b.depth(mailer + ".poison"); p != 5 {
		t.Errorf("after grouping the poison queue holds %d, want 5", p)
	}
	if g := b.groupsOf(mailer, "--from", "discarded"); len(g) != 0 {
		t.Errorf("an archive nothing was discarded to yet: %+v", g)
	}
	code, stdout, _ = b.poison("groups", "--consumer", mailer, "--from", "trash", b.dir)
	if code != 2 || stdout != "" {
		t.Errorf("--from trash: exit %d, stdout %q", code, stdout)
	}
}

// A consumer that is not in the manifest, or whose poison queue was never
// declared, is an error that says what was expected.
func TestPoisonGroupsBadInput(t *testing.T) {
	b := newBrokerCaseAt(t, testenv.VHost(t, "poisonops"), opsSchemas, opsPlaceholders...)
	mailer := b.name("mailer")
	code, _, stderr := b.poison("groups", "--consumer", "nobody", b.dir)
	if code != 2 || !strings.Contains(stderr, `consumer "nobody": not in the manifest; expected one of`) {
		t.Errorf("unknown consumer: exit %d, %q", code, stderr)
	}
	code, _, stderr = b.poison("groups", "--consumer", mailer, b.dir)
	if want := fmt.Sprintf("warren poison groups: group %s.poison: %s\n", mailer, b.missing(mailer+".poison", "--url")); code != 1 || stderr != want {
		t.Errorf("undeclared: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, _, stderr = run(t, "poison", "groups", "--url", "amqp://ana:s3cret@127.0.0.1:1/", "--timeout", "1s", "--consumer", mailer, b.dir)
	if code != 1 || strings.Contains(stderr, "s3cret") || stderr == "" {
		t.Errorf("unreachable broker: exit %d, stderr %q", code, stderr)
	}
}

// A group is retried, discarded and exported as a whole, the others left
// alone; --dry-run and a stale --expect change nothing; an unknown group
// says which there are; each action is in the history.
func TestPoisonGroupActions(t *testing.T) {
	b, mailer := poisonCase(t)
	archive := mailer + ".discarded"
	b.poisonFailures(mailer, fmt.Sprintf(failSKU, 0), fmt.Sprintf(failStock, 1, 1), fmt.Sprintf(failSKU, 3), fmt.Sprintf(failStock, 2, 7), fmt.Sprintf(failStock, 3, 9))
	groups := b.groupsOf(mailer)
	stock, sku := groups[0], groups[1]

	code, stdout, stderr := b.poison("retry", "--consumer", mailer, "--group", stock.ID, "--dry-run", b.dir)
	if want := fmt.Sprintf("3 messages would retry from %s.poison to %s; dry run, nothing changed\n", mailer, mailer); code != 0 || stdout != want || !strings.Contains(stderr, "3 messages match") {
		t.Errorf("retry --dry-run: exit %d, stderr %q, stdout %q, want %q", code, stderr, stdout, want)
	}
	code, _, stderr = b.poison("retry", "--consumer", mailer, "--group", stock.ID, "--expect", "4", b.dir)
	if code != 1 || !strings.Contains(stderr, "the group changed: group "+stock.ID+" holds 3 messages now, not 4 as expected: nothing changed") {
		t.Errorf("retry --expect 4: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = b.poison("retry", "--consumer", mailer, "--group", "000000000000", b.dir)
	if code != 1 || !strings.Contains(stderr, `unknown group: no group "000000000000" in `+mailer+".poison (now); expected one of "+stock.ID+", "+sku.ID) {
		t.Errorf("unknown group: exit %d, stderr %q", code, stderr)
	}
	if p, w := b.depth(mailer+".poison"), b.depth(mailer); p != 5 || w != 0 {
		t.Fatalf("after refusals: poison %d, work %d; want 5 and 0", p, w)
	}

	code, stdout, stderr = b.poison("export", "--consumer", mailer, "--group", sku.ID, "--by", "ana", b.dir)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(stderr, "exported 2 messages of group "+sku.ID) {
		t.Fatalf("export: exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	var line struct {
		ID         string         `json:"id"`
		RoutingKey string         `json:"routing_key"`
		Payload    map[string]any `json:"payload"`
		Headers    map[string]any `json:"headers"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line.ID != "m1" || line.RoutingKey != "order.placed" || line.Payload["sku"] != "x" || line.Headers["x-failure"] != fmt.Sprintf(failSKU, 0) {
		t.Errorf("export line %s: %+v, %v", lines[0], line, err)
	}

	code, stdout, stderr = b.poison("retry", "--consumer", mailer, "--group", stock.ID, "--expect", "3", "--by", "ana", b.dir)
	if want := fmt.Sprintf("retried 3 messages of group %s from %s.poison to %s\n", stock.ID, mailer, mailer); code != 0 || stdout != want {
		t.Fatalf("retry: exit %d, stderr %q, stdout %q, want %q", code, stderr, stdout, want)
	}
	code, stdout, stderr = b.poison("discard", "--consumer", mailer, "--group", sku.ID, "--reason", "sku missing upstream", "--by", "bo", b.dir)
	if want := fmt.Sprintf("discarded 2 messages of group %s from %s.poison to %s\n", sku.ID, mailer, archive); code != 0 || stdout != want {
		t.Fatalf("discard: exit %d, stderr %q, stdout %q, want %q", code, stderr, stdout, want)
	}
	t.Cleanup(func() { b.deleteQueue(archive); b.deleteQueue(mailer + ".poison-history") })
	work := b.take(mailer)
	if len(work) != 3 || work[0].MessageId != "m2" || work[2].MessageId != "m5" {
		t.Errorf("work queue: %d messages", len(work))
	}
	kept := b.take(archive)
	if len(kept) != 2 || kept[0].Headers[poison.HeaderDiscardGroup] != sku.ID || kept[0].Headers[poison.HeaderDiscardBatch] != int64(2) || kept[0].Headers[poison.HeaderDiscardedBy] != "bo" {
		t.Errorf("archive: %d messages, headers %v", len(kept), kept)
	}
	if p := b.depth(mailer + ".poison"); p != 0 {
		t.Errorf("poison holds %d, want 0", p)
	}

	code, stdout, stderr = b.poison("history", "--consumer", mailer, "--format", "json", b.dir)
	var history []poison.Action
	if err := json.Unmarshal([]byte(stdout), &history); code != 0 || err != nil {
		t.Fatalf("history: exit %d, %v, stderr %q", code, err, stderr)
	}
	if len(history) != 3 || history[0].Action != "export" || history[1].Action != "retry" || history[1].By != "ana" || history[1].Count != 3 ||
		history[2].Action != "discard" || history[2].Reason != "sku missing upstream" || history[2].Count != 2 || history[2].At.IsZero() {
		t.Errorf("history: %+v", history)
	}
	code, stdout, _ = b.poison("history", "--consumer", mailer, b.dir)
	if code != 0 || !strings.Contains(stdout, "discard") || !strings.Contains(stdout, "2 of 2") {
		t.Errorf("history text: %s", stdout)
	}
}

// An edited payload is checked against its fact's schema before anything
// is sent; a valid one is retried with the edit recorded, the original
// kept in the archive.
func TestPoisonEdit(t *testing.T) {
	b, mailer := poisonCase(t)
	archive := mailer + ".discarded"
	t.Cleanup(func() { b.deleteQueue(archive); b.deleteQueue(mailer + ".poison-history") })
	b.poisonFailures(mailer, fmt.Sprintf(failSKU, 0), fmt.Sprintf(failStock, 1, 1))
	dir := t.TempDir()
	file := func(name, src string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad, notJSON, good := file("bad.json", `{"sku": 5}`), file("broken.json", `{"sku": `), file("good.json", "{\n  \"sku\": \"AB-1\"\n}\n")

	for _, tc := range []struct{ id, payload, want string }{
		{"m1", bad, "warren poison edit: edit m1 in " + mailer + ".poison: the edited payload is refused: does not match schema order/placed.json: /sku: "},
		{"m1", notJSON, "the edited payload is refused: not JSON"},
		{"zz", good, `no such message: no message with id "zz" in ` + mailer + ".poison"},
	} {
		code, _, stderr := b.poison("edit", "--consumer", mailer, "--id", tc.id, "--payload", tc.payload, b.dir)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("edit %s with %s: exit %d, stderr %q; want %q", tc.id, tc.payload, code, stderr, tc.want)
		}
	}
	if p, w := b.depth(mailer+".poison"), b.depth(mailer); p != 2 || w != 0 {
		t.Fatalf("after refused edits: poison %d, work %d; want 2 and 0", p, w)
	}

	code, stdout, stderr := b.poison("edit", "--consumer", mailer, "--id", "m1", "--payload", good, "--by", "ana", b.dir)
	if want := fmt.Sprintf("edited m1 order.placed: retried to %s, the original kept in %s\n", mailer, archive); code != 0 || stdout != want {
		t.Fatalf("edit: exit %d, stderr %q, stdout %q, want %q", code, stderr, stdout, want)
	}
	work := b.take(mailer)
	if len(work) != 1 || string(work[0].Body) != `{"id":"m1","payload":{"sku":"AB-1"}}` || work[0].Headers[poison.HeaderEditedBy] != "ana" || work[0].Headers[poison.HeaderEditedAt] == nil ||
		work[0].Headers[poison.HeaderLastFailure] != fmt.Sprintf(failSKU, 0) {
		t.Fatalf("work queue: %+v", work)
	}
	kept := b.take(archive)
	if len(kept) != 1 || string(kept[0].Body) != `{"id":"m1","payload":{"sku":"x"}}` || !strings.HasPrefix(kept[0].Headers[poison.HeaderDiscardReason].(string), "edited") || kept[0].Headers[poison.HeaderDiscardedBy] != "ana" {
		t.Errorf("archive: %+v", kept)
	}
	if left := b.take(mailer + ".poison"); len(left) != 1 || left[0].MessageId != "m2" {
		t.Errorf("poison queue: %+v", left)
	}
	code, stdout, _ = b.poison("history", "--consumer", mailer, b.dir)
	if code != 0 || !strings.Contains(stdout, "edit") || !strings.Contains(stdout, "id m1") {
		t.Errorf("history: %s", stdout)
	}
}
