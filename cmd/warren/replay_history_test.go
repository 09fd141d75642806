package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/warrenbus/warren/runtime/poison"
)

// A replay and a discard of single messages are in the consumer's
// history, as group actions are: who, what, which message, from where to
// where, and the reason of a discard.
func TestReplayAndDiscardAreInTheHistory(t *testing.T) {
	b, mailer := poisonLane(t, "m1", "m2", "m3")
	archive := mailer + ".discarded"
	t.Cleanup(func() { b.deleteQueue(archive) })

	if code, _, stderr := b.run("replay", "--consumer", mailer, "--id", "m1", "--by", "ana", b.dir); code != 0 {
		t.Fatalf("replay: exit %d, %s", code, stderr)
	}
	if code, _, stderr := b.run("discard", "--consumer", mailer, "--id", "m2", "--reason", "test order", "--by", "bo", b.dir); code != 0 {
		t.Fatalf("discard: exit %d, %s", code, stderr)
	}
	// A dry run and a replay that selects nothing did nothing: no record.
	if code, _, stderr := b.run("replay", "--consumer", mailer, "--dry-run", b.dir); code != 0 {
		t.Fatalf("replay --dry-run: exit %d, %s", code, stderr)
	}
	if code, _, stderr := b.run("replay", "--consumer", mailer, "--routing-key", "nothing.here", b.dir); code != 0 {
		t.Fatalf("replay of nothing: exit %d, %s", code, stderr)
	}

	code, stdout, stderr := b.poison("history", "--consumer", mailer, "--format", "json", b.dir)
	var history []poison.Action
	if err := json.Unmarshal([]byte(stdout), &history); code != 0 || err != nil {
		t.Fatalf("history: exit %d, %v, stderr %q", code, err, stderr)
	}
	// The cause is normalised, as for a group: the group it belongs to.
	want := []poison.Action{
		{By: "ana", Action: "retry", ID: "m1", Cause: "boom m<n>", From: mailer + ".poison", To: mailer, Matched: 1, Count: 1},
		{By: "bo", Action: "discard", ID: "m2", Cause: "boom m<n>", From: mailer + ".poison", To: archive, Matched: 1, Count: 1, Reason: "test order"},
	}
	if len(history) != len(want) {
		t.Fatalf("history: %+v\nwant %+v", history, want)
	}
	for i, a := range history {
		if a.At.IsZero() {
			t.Errorf("history[%d] has no time: %+v", i, a)
		}
		a.At = want[i].At
		if a != want[i] {
			t.Errorf("history[%d] = %+v\nwant %+v", i, a, want[i])
		}
	}

	_, stdout, _ = b.poison("history", "--consumer", mailer, b.dir)
	for _, line := range []string{
		fmt.Sprintf(`(?m)^\S+ +ana +retry +id m1 +1 of 1 +%s\.poison +%s +-$`, regexp.QuoteMeta(mailer), regexp.QuoteMeta(mailer)),
		fmt.Sprintf(`(?m)^\S+ +bo +discard +id m2 +1 of 1 +%s\.poison +%s +test order$`, regexp.QuoteMeta(mailer), regexp.QuoteMeta(archive)),
	} {
		if !regexp.MustCompile(line).MatchString(stdout) {
			t.Errorf("history text without %s:\n%s", line, stdout)
		}
	}
}
