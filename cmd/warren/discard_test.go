package main

import (
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/poison"
)

// poisonLane declares the ops topology and puts poison copies with the
// given ids (routing key order.placed) in {{mailer}}'s poison queue.
func poisonLane(t *testing.T, ids ...string) (*brokerCase, string) {
	t.Helper()
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	mailer := b.name("mailer")
	for _, id := range ids {
		b.publish(b.name("dead"), mailer, amqpPoisonCopy(id, "order.placed", b.name("events"), "boom "+id, 3))
	}
	return b, mailer
}

// take removes every message of a queue and returns them.
func (b *brokerCase) take(queue string) []amqp.Delivery {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	var out []amqp.Delivery
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			b.t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

func TestReplayDryRunChangesNothing(t *testing.T) {
	b, mailer := poisonLane(t, "m1", "m2", "m3")
	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--dry-run", "--limit", "2", b.dir)
	want := fmt.Sprintf("would replay m1 order.placed\nwould replay m2 order.placed\n2 messages would move from %s.poison to %s; dry run, nothing changed\n", mailer, mailer)
	if code != 0 || stdout != want {
		t.Fatalf("replay --dry-run: exit %d, stderr %s, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	if p, w := b.depth(mailer+".poison"), b.depth(mailer); p != 3 || w != 0 {
		t.Errorf("after a dry run: poison %d, work %d; want 3 and 0", p, w)
	}
}

func TestReplayRefusesLimitZero(t *testing.T) {
	b, mailer := poisonLane(t, "m1")
	for _, n := range []string{"0", "-1"} {
		code, _, stderr := b.run("replay", "--consumer", mailer, "--limit", n, b.dir)
		if code != 2 || !strings.HasPrefix(stderr, "warren replay: --limit "+n+": expected a positive number; leave --limit out to select every message\n") {
			t.Errorf("--limit %s: exit %d, stderr %q", n, code, stderr)
		}
	}
	if p := b.depth(mailer + ".poison"); p != 1 {
		t.Errorf("after refused replays the poison queue holds %d, want 1", p)
	}
}

// --to-exchange sends through the events exchange with the original
// routing key, so every bound consumer gets the fact again, and says so.
func TestReplayToExchangeReachesEveryConsumer(t *testing.T) {
	b, mailer := poisonLane(t, "m1")
	audit, events := b.name("audit"), b.name("events")
	code, stdout, stderr := b.run("replay", "--consumer", mailer, "--to-exchange", b.dir)
	if want := fmt.Sprintf("replayed m1 order.placed\n1 message moved from %s.poison to exchange %s\n", mailer, events); code != 0 || stdout != want {
		t.Fatalf("exit %d, stderr %s, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	if !strings.Contains(stderr, "warning: --to-exchange republishes through "+events+": every consumer bound to each message's routing key receives it again") {
		t.Errorf("no warning on stderr: %q", stderr)
	}
	for _, q := range []string{mailer, audit} {
		got := b.take(q)
		if len(got) != 1 || got[0].MessageId != "m1" || got[0].RoutingKey != "order.placed" || got[0].Exchange != events {
			t.Errorf("%s: got %d messages %+v, want m1 from %s with order.placed", q, len(got), got, events)
		}
	}
	if p := b.depth(mailer + ".poison"); p != 0 {
		t.Errorf("poison holds %d, want 0", p)
	}
}

// discard keeps the selected messages in <consumer>.discarded with the
// record, refuses without a reason or a selection, and replay --from
// discarded brings one back to the work queue.
func TestDiscardAndReplayFromDiscarded(t *testing.T) {
	b, mailer := poisonLane(t, "m1", "m2", "m3")
	archive := mailer + ".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })

	for _, args := range [][]string{
		{"--consumer", mailer, "--id", "m1"},                           // no reason
		{"--consumer", mailer, "--reason", "x"},                        // no selection
		{"--consumer", mailer, "--all", "--id", "m1", "--reason", "x"}, // both
		{"--consumer", mailer, "--limit", "0", "--reason", "x"},
		{"--consumer", mailer, "--id", "", "--reason", "x"},     // an empty id would select every message
		{"--consumer", mailer, "--id", "m1", "--reason", " \t"}, // blanks are no reason
	} {
		if code, _, stderr := b.run(append(append([]string{"discard"}, args...), b.dir)...); code != 2 || !strings.HasPrefix(stderr, "warren discard: ") {
			t.Errorf("discard %v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
	if p := b.depth(mailer + ".poison"); p != 3 {
		t.Fatalf("after refused discards the poison queue holds %d, want 3", p)
	}
	// A refused command is no action: the history records none of them.
	ch, cherr := b.conn.Channel()
	if cherr != nil {
		t.Fatal(cherr)
	}
	if _, err := ch.QueueDeclarePassive(mailer+".poison-history", true, false, false, false, nil); err == nil {
		t.Errorf("after refused discards %s.poison-history exists: a refused discard was recorded", mailer)
	}
	_ = ch.Close()

	code, stdout, stderr := b.run("discard", "--consumer", mailer, "--id", "m2", "--reason", "test order", "--by", "ana", b.dir)
	if want := fmt.Sprintf("discarded m2 order.placed\n1 message moved from %s.poison to %s\n", mailer, archive); code != 0 || stdout != want {
		t.Fatalf("discard: exit %d, stderr %s, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	code, stdout, stderr = b.run("discard", "--consumer", mailer, "--limit", "1", "--reason", "duplicate", b.dir)
	if code != 0 || stdout != fmt.Sprintf("discarded m1 order.placed\n1 message moved from %s.poison to %s\n", mailer, archive) {
		t.Fatalf("discard --limit 1: exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
	if p, a := b.depth(mailer+".poison"), b.depth(archive); p != 1 || a != 2 {
		t.Fatalf("poison %d, archive %d; want 1 and 2", p, a)
	}

	// The archive's retention is bounded: declaring it with the documented
	// arguments is accepted, declaring it without them is refused.
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(archive, true, false, false, false, poison.ArchiveArguments()); err != nil {
		t.Errorf("the archive is not declared with ArchiveArguments: %v", err)
	}
	ch.Close()

	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--from", "discarded", "--list", "--format", "json", b.dir)
	if code != 0 || !strings.Contains(stdout, `"x-discard-reason": "test order"`) || !strings.Contains(stdout, `"x-discarded-by": "ana"`) ||
		!strings.Contains(stdout, `"x-discard-reason": "duplicate"`) || !strings.Contains(stdout, `"failure": "boom m2"`) {
		t.Errorf("replay --from discarded --list: exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}

	code, stdout, stderr = b.run("replay", "--consumer", mailer, "--from", "discarded", "--id", "m2", b.dir)
	if want := fmt.Sprintf("replayed m2 order.placed\n1 message moved from %s to %s\n", archive, mailer); code != 0 || stdout != want {
		t.Fatalf("replay --from discarded: exit %d, stderr %s, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	back := b.take(mailer)
	if len(back) != 1 || back[0].MessageId != "m2" {
		t.Fatalf("work queue: %d messages, want m2", len(back))
	}
	h := back[0].Headers
	if h[poison.HeaderDiscardReason] != nil || h[poison.HeaderDiscardedBy] != nil || h[poison.HeaderLastFailure] != "boom m2" || h["x-original-routing-key"] != "order.placed" {
		t.Errorf("replayed copy headers %v: want no discard record, the last failure and the routing key", h)
	}
	if a := b.depth(archive); a != 1 {
		t.Errorf("archive holds %d after bringing one back, want 1", a)
	}
}

// --id may be repeated, as with replay: each selects its message. A
// discard that finds no message with one of the ids moves the others and
// exits 1 naming each id it did not find.
func TestDiscardRepeatedID(t *testing.T) {
	b, mailer := poisonLane(t, "m1", "m2", "m3", "m4")
	archive := mailer + ".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })
	code, stdout, stderr := b.run("discard", "--consumer", mailer, "--id", "m3", "--id", "m1", "--reason", "test orders", b.dir)
	if want := fmt.Sprintf("discarded m1 order.placed\ndiscarded m3 order.placed\n2 messages moved from %s.poison to %s\n", mailer, archive); code != 0 || stdout != want {
		t.Errorf("discard: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	code, stdout, stderr = b.run("discard", "--consumer", mailer, "--id", "zz", "--id", "m4", "--id", "yy", "--reason", "test orders", b.dir)
	if want := fmt.Sprintf("discarded m4 order.placed\n1 message moved from %s.poison to %s\n", mailer, archive); code != 1 || stdout != want ||
		stderr != fmt.Sprintf("warren discard: no message with id \"zz\" in %[1]s.poison\nwarren discard: no message with id \"yy\" in %[1]s.poison\n", mailer) {
		t.Errorf("discard with missing ids: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	if got := messageIDs(b.take(archive)); got != "m1 m3 m4" {
		t.Errorf("the archive holds %s, want m1 m3 m4", got)
	}
	if got := messageIDs(b.take(mailer + ".poison")); got != "m2" {
		t.Errorf("the poison queue holds %s, want m2", got)
	}
}
