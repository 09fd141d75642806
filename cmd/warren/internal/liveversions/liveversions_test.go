package liveversions

import (
	"fmt"
	"testing"
)

// A published version older than the newest can be retired once every
// consumer's live processes read another published version; a process
// that does not announce what it reads keeps every version; with no
// process attached, or the broker not asked, the schema's build stands in.
func TestRetirableFollowsTheLiveProcesses(t *testing.T) {
	rows := []Reads{
		{Consumer: "ledger", Queues: []string{"ledger"}, Fact: "order.placed", Schema: []int{1, 2, 3}, Published: []int{2, 3}},
		{Consumer: "mailer", Queues: []string{"mailer"}, Fact: "order.placed", Schema: []int{2}, Published: []int{2, 3}},
	}
	for _, c := range []struct {
		name     string
		attached []Attached
		asked    bool
		want     string // Retirable of order.placed
		mailer   string // Describe of mailer's row
	}{
		{"schema only: the mailer reads 2 alone", nil, false, "[]", "-"},
		{"the mailer's process still reads 2", []Attached{{"mailer", "order.placed=2"}, {"ledger", "order.placed=1,2,3"}}, true, "[]", "2 ×1"},
		{"the mailer's processes upgraded", []Attached{{"mailer", "order.placed=2,3"}, {"mailer", "order.placed=2,3"}, {"ledger", "order.placed=1,2,3"}}, true, "[2]", "2-3 ×2"},
		{"one mailer process does not announce", []Attached{{"mailer", "order.placed=2,3"}, {"mailer", ""}}, true, "[]", "2-3 ×1, not announced ×1"},
		{"nothing attached: the schema stands in", nil, true, "[]", "none attached"},
	} {
		got := Live(rows, c.attached, c.asked)
		if r := fmt.Sprint(Retirable(got)["order.placed"]); r != c.want {
			t.Errorf("%s: retirable %s, want %s", c.name, r, c.want)
		}
		if d := Describe(got[1]); d != c.mailer {
			t.Errorf("%s: mailer live %q, want %q", c.name, d, c.mailer)
		}
	}
	if r := Range([]int{1, 3}); r != "1,3" {
		t.Errorf("Range(1, 3) = %q", r)
	}
}
