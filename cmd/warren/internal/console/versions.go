package console

import (
	"fmt"

	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/runtime"
)

// Announcements returns, of the consumers the management API lists, each
// one's queue and the versions it announces it reads (runtime.ArgReads).
func Announcements(consumers []ConsumerArgs) []liveversions.Attached {
	out := make([]liveversions.Attached, len(consumers))
	for i, c := range consumers {
		s, _ := c.Arguments[runtime.ArgReads].(string)
		out[i] = liveversions.Attached{Queue: c.Queue, Announcement: s}
	}
	return out
}

// versionText renders, per consumer, the versions it reads of each fact
// with several: by the schema, by its live processes when the broker was
// asked, what is published, and what can be retired:
// "order.placed 1-3, live 3 ×2, published 2,3: version 2 can be retired".
func versionText(rows []liveversions.Reads, attached []liveversions.Attached, asked bool) map[string]string {
	rows = liveversions.Live(rows, attached, asked)
	retire := liveversions.Retirable(rows)
	out := map[string]string{}
	for _, r := range rows {
		s := r.Fact + " " + liveversions.Range(r.Schema)
		if asked {
			s += ", live " + liveversions.Describe(r)
		}
		s += ", published " + liveversions.Join(r.Published)
		if vs := retire[r.Fact]; len(vs) > 0 {
			s += fmt.Sprintf(": version %s can be retired", liveversions.Join(vs))
		}
		if out[r.Consumer] != "" {
			s = out[r.Consumer] + "; " + s
		}
		out[r.Consumer] = s
	}
	return out
}
