package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A group action says how many messages of the group match now, in the
// singular for one.
func TestPoisonGroupActionCountsInTheSingular(t *testing.T) {
	b, mailer := poisonCase(t)
	b.poisonFailures(mailer, fmt.Sprintf(failSKU, 0), fmt.Sprintf(failStock, 1, 1), fmt.Sprintf(failStock, 2, 7))
	groups := b.groupsOf(mailer)
	if len(groups) != 2 || groups[0].Count != 2 || groups[1].Count != 1 {
		t.Fatalf("groups: %+v; want one of 2 messages, then one of 1", groups)
	}
	for _, tc := range []struct {
		action, group, want string
	}{
		{"retry", groups[1].ID, fmt.Sprintf("): 1 message matches in %s.poison now\n", mailer)},
		{"retry", groups[0].ID, fmt.Sprintf("): 2 messages match in %s.poison now\n", mailer)},
		{"export", groups[1].ID, fmt.Sprintf("): 1 message matches in %s.poison now\n", mailer)},
		{"discard", groups[1].ID, fmt.Sprintf("): 1 message matches in %s.poison now\n", mailer)},
	} {
		args := []string{"--consumer", mailer, "--group", tc.group, "--dry-run"}
		if tc.action == "discard" {
			args = append(args, "--reason", "test")
		}
		code, _, stderr := b.poison(tc.action, append(args, b.dir)...)
		if code != 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("poison %s --dry-run of the group of %s: exit %d, stderr %q; want %q", tc.action, tc.group, code, stderr, tc.want)
		}
	}
}

// The broker counts every return of a quorum poison copy in
// x-delivery-count, so the count grows with every reading of the lane;
// warren replay --list --format json leaves it out, as poison export does,
// and keeps the other headers.
func TestReplayListLeavesOutTheReadingsCount(t *testing.T) {
	b, mailer := poisonCase(t)
	b.poisonFailures(mailer, fmt.Sprintf(failSKU, 0))
	b.groupsOf(mailer) // a reading, which hands the message back
	if h := b.peekHeaders(mailer + ".poison"); h["x-delivery-count"] == nil {
		t.Fatalf("the poison copy has no x-delivery-count after a reading (headers %v): is %s.poison a quorum queue?", h, mailer)
	}
	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--list", "--format", "json", b.dir)
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	var got []poisonJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got) != 1 {
		t.Fatalf("%v: want one message:\n%s", err, stdout)
	}
	if _, ok := got[0].Headers["x-delivery-count"]; ok {
		t.Errorf("the listing shows x-delivery-count: %v", got[0].Headers)
	}
	if got[0].Headers["x-attempts"] == nil {
		t.Errorf("the listing lost x-attempts: %v", got[0].Headers)
	}
}

// peekHeaders reads the first message of queue and hands it back.
func (b *brokerCase) peekHeaders(queue string) amqp.Table {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	d, ok, err := ch.Get(queue, false)
	if err != nil || !ok {
		b.t.Fatalf("get from %s: %v (a message: %v)", queue, err, ok)
	}
	if err := d.Nack(false, true); err != nil {
		b.t.Fatal(err)
	}
	return d.Headers
}

// warren replay --dry-run --format json prints what the replay would move
// as one JSON object, changing nothing; a replay that moves messages
// prints text, so --format json is refused there, before anything moves.
func TestReplayDryRunAsJSON(t *testing.T) {
	b, mailer := poisonCase(t)
	b.poisonFailures(mailer, fmt.Sprintf(failSKU, 0), fmt.Sprintf(failStock, 1, 1))
	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--dry-run", "--format", "json", "--id", "m2", "--id", "m9", b.dir)
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	var got dryRunJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if !got.DryRun || got.From != mailer+".poison" || got.To != mailer || len(got.Messages) != 1 || got.Messages[0].ID != "m2" ||
		got.Messages[0].RoutingKey != "order.placed" || len(got.IDsNotFound) != 1 || got.IDsNotFound[0] != "m9" {
		t.Errorf("dry run:\n%s", stdout)
	}
	// With nothing selected the lists are empty, not null.
	_, stdout, _ = b.run("replay", "--consumer", mailer, "--dry-run", "--format", "json", "--routing-key", "order.paid", b.dir)
	if !strings.Contains(stdout, `"messages": []`) || !strings.Contains(stdout, `"ids_not_found": []`) {
		t.Errorf("a dry run that selects nothing:\n%s", stdout)
	}
	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--format", "json", b.dir)
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "warren replay: --format json: only with --list or --dry-run") {
		t.Errorf("a replay with --format json: exit %d, stdout %q, stderr %q; want exit 2", code, stdout, stderr)
	}
	if p, w := b.depth(mailer+".poison"), b.depth(mailer); p != 2 || w != 0 {
		t.Errorf("poison %d, work %d; want 2 and 0: a dry run and a refused replay move nothing", p, w)
	}
}
