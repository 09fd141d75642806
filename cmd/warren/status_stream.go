package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// streamLag is one offset name's place in a stream, and its shape in
// --format json: a stream consumer's own, or a replay's (--offset-name).
type streamLag struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer,omitempty"` // the consumer whose own name it is; "" for a replay's
	OffsetName string `json:"offset_name"`
	Tail       *int64 `json:"tail"`   // the stream's last offset; null when the stream holds no fact
	Stored     *int64 `json:"stored"` // the offset stored under the name; null when none is
	// Lag is how many offsets lie after Stored up to Tail: facts not yet
	// settled and, among them, the stream's own offset-tracking records.
	// null when not known (facts on the stream and nothing stored).
	Lag *int64 `json:"lag"`
	// Until is a replay's bound, the last offset it reads (warren replay
	// --limit); Remaining the offsets it has left to it. Absent without a
	// bound; remaining null with nothing stored yet.
	Until     *int64 `json:"until,omitempty"`
	Remaining *int64 `json:"remaining,omitempty"`
}

// readStreamLags reads, for every stream consumer of top, the lag of its
// own offset name, and of each of names on its stream. A name with nothing
// stored is shown so: a replay from a stream's first fact stores nothing
// until its reader settles a fact.
func readStreamLags(ctx context.Context, b streamoffset.Broker, top topology.Topology, names []string) ([]streamLag, error) {
	rows := []streamLag{}
	lags := streamoffset.NewLagReader(b)
	defer lags.Close()
	seen := map[string]bool{} // stream + "\x00" + name
	for _, c := range top.StreamConsumers() {
		for i, name := range append([]string{c.Name}, names...) {
			if seen[c.Stream+"\x00"+name] {
				continue
			}
			seen[c.Stream+"\x00"+name] = true
			l, err := lags.Read(ctx, c, name)
			if err != nil {
				return nil, fmt.Errorf("the lag of %q on stream %q: %w", name, c.Stream, err)
			}
			row := streamLag{Stream: c.Stream, OffsetName: name}
			if i == 0 {
				row.Consumer = c.Name
			}
			if l.HasTail {
				row.Tail = &l.Tail
			}
			if l.HasStored {
				row.Stored = &l.Stored
			}
			if n, ok := l.Offsets(); ok {
				row.Lag = &n
			}
			if l.HasUntil {
				row.Until = &l.Until
				if n, ok := l.Remaining(); ok {
					row.Remaining = &n
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// writeStreamTable writes each offset name's lag behind its stream's tail.
func writeStreamTable(w io.Writer, rows []streamLag) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tOFFSET NAME\tSTORED\tTAIL\tLAG")
	for _, r := range rows {
		name := r.OffsetName
		if r.Consumer == "" {
			name += " (replay)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Stream, name, offsetOrDash(r.Stored), offsetOrDash(r.Tail), lagText(r))
	}
	return tw.Flush()
}

func offsetOrDash(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// lagText is a row's LAG: the offsets behind, or why it is not known.
func lagText(r streamLag) string {
	switch {
	case r.Until != nil && r.Remaining != nil && *r.Remaining == 0:
		return fmt.Sprintf("%s (replay done: at its bound %d)", offsetOrDash(r.Lag), *r.Until)
	case r.Until != nil && r.Remaining != nil:
		return fmt.Sprintf("%s (%d to its bound %d)", offsetOrDash(r.Lag), *r.Remaining, *r.Until)
	case r.Lag != nil:
		return strconv.FormatInt(*r.Lag, 10)
	case r.Tail != nil && r.Stored == nil:
		return "- (nothing stored yet)"
	}
	return "-"
}
