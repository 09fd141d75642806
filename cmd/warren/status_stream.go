package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// streamLag is one offset name's place in a stream, and its shape in
// --format json: a stream consumer's own, or a replay's (--offset-name).
// A consumer of a super stream has a row per partition.
type streamLag struct {
	Stream string `json:"stream"` // the stream, or the super stream's partition
	// SuperStream is the super stream whose partition Stream is; absent
	// for a plain stream.
	SuperStream string `json:"super_stream,omitempty"`
	Consumer    string `json:"consumer,omitempty"` // the consumer whose own name it is; "" for a replay's
	// ReplayOf, for a replay's name (--offset-name), is the consumer it
	// reads for: the one warren replay marked it for (see
	// streamoffset.ReplayOfInfix), or, unmarked, the only consumer that
	// reads the stream. Absent when that is not known; then
	// ReplayOfOneOf lists the stream's consumers it may be for. A
	// replay's name has a row only on the streams where something is
	// stored under it (an offset, a bound or warren replay's mark).
	ReplayOf      string   `json:"replay_of,omitempty"`
	ReplayOfOneOf []string `json:"replay_of_one_of,omitempty"`
	OffsetName    string   `json:"offset_name"`
	Tail          *int64   `json:"tail"`   // the stream's last offset; null when the stream holds no fact
	Stored        *int64   `json:"stored"` // the offset stored under the name; null when none is
	// Lag is how many offsets lie after Stored up to Tail: facts not yet
	// settled and, among them, the stream's own offset-tracking records.
	// null when not known (facts on the stream and nothing stored).
	Lag *int64 `json:"lag"`
	// Start is, on a consumer's own row with nothing stored under its
	// name, where it starts ("first", "next", "last", "offset N" or a
	// time), and From the offset it reads from: then Lag counts from
	// From. From is absent when it is not known: a "next" or "last" is
	// fixed at the consumer's first start, to the tail of then.
	Start string `json:"start,omitempty"`
	From  *int64 `json:"from,omitempty"`
	// Until is a replay's bound, the last offset it reads (warren replay
	// --limit); Remaining the offsets it has left to it. Absent without a
	// bound; remaining absent with nothing stored yet.
	Until     *int64 `json:"until,omitempty"`
	Remaining *int64 `json:"remaining,omitempty"`
	// Missing is true when the stream does not exist: the topology is not
	// declared. Error is why the row could not be read otherwise. Either
	// leaves the figures null.
	Missing bool   `json:"missing,omitempty"`
	Error   string `json:"error,omitempty"`
	// marked: warren replay marked the name on the stream.
	marked bool
}

// readStreamLags reads, for every stream consumer of top, the lag of its
// own offset name, and of each of names, on each stream it keeps offsets
// on (its stream, or each partition of its super stream). A replay's name
// is shown only on the streams where something is stored under it (its
// offset, its bound, or the mark of whose replay it is): on the others no
// warren replay positioned it, and a row there would be taken for one,
// of that stream's consumer. A name with nothing stored on any stream is
// in unstored (a replay from a stream's first fact stores nothing but its
// mark until its reader settles a fact). A row that cannot be read
// carries why, and the others are read on: errs says which could not,
// for stderr, those of one consumer and name that failed alike together.
func readStreamLags(ctx context.Context, b streamoffset.Broker, top topology.Topology, names []string) (rows []streamLag, unstored, errs []string) {
	rows = []streamLag{}
	lags := streamoffset.NewLagReader(b)
	defer lags.Close()
	seen := map[string]bool{}        // stream + "\x00" + name
	owner := map[string]string{}     // stream + "\x00" + a consumer's own name -> the consumer
	readers := map[string][]string{} // stream -> the consumers that read it
	for _, c := range top.StreamConsumers() {
		for _, st := range streamoffset.LagStreams(c) {
			owner[st+"\x00"+c.Name] = c.Name
			readers[st] = append(readers[st], c.Name)
		}
	}
	// found: a replay's name is stored, or could not be read, somewhere.
	found := map[string]bool{}
	type failed struct{ consumer, name, err string }
	var last failed
	var streams []string
	flush := func() {
		if len(streams) > 0 {
			what := "stream"
			if len(streams) > 1 {
				what = "streams"
			}
			errs = append(errs, fmt.Sprintf("consumer %s: the lag of %q on %s %s: %s", last.consumer, last.name, what, quoted(streams), last.err))
		}
		streams = nil
	}
	for _, c := range top.StreamConsumers() {
		for _, l := range lags.ReadEach(ctx, c, append([]string{c.Name}, names...)...) {
			key := l.Stream + "\x00" + l.Name
			if seen[key] || owner[key] != "" && owner[key] != c.Name {
				// Read for another consumer already, or the own name of
				// another consumer of the stream (--offset-name NAME of
				// one): its own row, read with it, shows it.
				continue
			}
			seen[key] = true
			row := streamLag{Stream: l.Stream, SuperStream: l.SuperStream, OffsetName: l.Name}
			replay := l.Name != c.Name
			if !replay {
				row.Consumer = c.Name
			} else if errors.Is(l.Err, streamoffset.ErrNoStream) {
				continue // the consumer's own row says the stream is not declared
			} else if l.Err == nil {
				// The row is one per stream and name, whichever
				// consumer it was read with: the mark warren replay
				// stored says whose.
				row.ReplayOf, row.ReplayOfOneOf, row.marked = replayOf(ctx, lags, l, readers[l.Stream])
				if !l.HasStored && !l.HasUntil && !row.marked {
					continue // never positioned on this stream
				}
			}
			if replay {
				found[l.Name] = true
			}
			switch {
			case errors.Is(l.Err, streamoffset.ErrNoStream):
				row.Missing = true
			case l.Err != nil:
				row.Error = secret.Text(l.Err.Error())
				if f := (failed{c.Name, l.Name, row.Error}); f != last {
					flush()
					last = f
				}
				streams = append(streams, l.Stream)
			default:
				fillLag(&row, l.Lag)
				if !replay && !l.HasStored {
					row.Start = c.Start.String()
					if l.HasTail && l.HasStart {
						row.From = &l.Start
					}
				}
			}
			rows = append(rows, row)
		}
	}
	flush()
	for _, n := range names {
		if !found[n] && !slices.Contains(unstored, n) && !isConsumer(top, n) {
			unstored = append(unstored, n)
		}
	}
	return rows, unstored, errs
}

// isConsumer reports whether name is a stream consumer's own name of top:
// --offset-name of one shows its own rows.
func isConsumer(top topology.Topology, name string) bool {
	for _, c := range top.StreamConsumers() {
		if c.Name == name {
			return true
		}
	}
	return false
}

// replayOf tells which of readers, the consumers of l's stream, the
// replay under l's name reads for: the one warren replay marked
// (marked), or, unmarked, the only one; otherwise (a name positioned
// before marks were stored, a reader started under a fresh name without a
// replay, or marks that cannot be read) it is not known, and oneOf lists
// readers.
func replayOf(ctx context.Context, lags *streamoffset.LagReader, l streamoffset.LagResult, readers []string) (of string, oneOf []string, marked bool) {
	if found, err := lags.ReplayOf(ctx, l.Stream, l.Name, readers); err == nil && len(found) > 0 {
		if len(found) == 1 {
			return found[0], nil, true
		}
		return "", found, true
	}
	if len(readers) == 1 {
		return readers[0], nil, false
	}
	return "", readers, false
}

// replayLabel is what the table shows after a replay's name: whose
// replay it is, or the consumers it may be for.
func replayLabel(r streamLag) string {
	switch {
	case r.ReplayOf != "":
		return "(replay of " + r.ReplayOf + ")"
	case len(r.ReplayOfOneOf) > 0:
		return "(replay of one of " + strings.Join(r.ReplayOfOneOf, ", ") + ")"
	}
	return "(replay)"
}

// quoted lists names, each quoted, joined by ", ".
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// fillLag puts l's figures in row.
func fillLag(row *streamLag, l streamoffset.Lag) {
	row.Tail, row.Stored, row.Lag = l.Figures()
	if l.HasUntil {
		row.Until = &l.Until
		if n, ok := l.Remaining(); ok {
			row.Remaining = &n
		}
	}
}

// missingStreams lists the streams of rows that do not exist, each once.
func missingStreams(rows []streamLag) []string {
	var out []string
	for _, r := range rows {
		if r.Missing && !slices.Contains(out, r.Stream) {
			out = append(out, r.Stream)
		}
	}
	return out
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
			name += " " + replayLabel(r)
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
	case r.Missing:
		return "- (not declared)"
	case r.Error != "":
		// Why is on stderr, and in --format json: an error's text would
		// push the table apart.
		return "- (not read)"
	case r.Until != nil && r.Remaining != nil && *r.Remaining == 0:
		return fmt.Sprintf("%s (replay done: at its bound %d)", offsetOrDash(r.Lag), *r.Until)
	case r.Until != nil && r.Remaining != nil:
		return fmt.Sprintf("%s (%d to its bound %d)", offsetOrDash(r.Lag), *r.Remaining, *r.Until)
	case r.Lag != nil && r.From != nil:
		// Nothing settled yet: the lag counts from where it reads.
		return fmt.Sprintf("%d (nothing stored yet; from offset %d)", *r.Lag, *r.From)
	case r.Lag != nil:
		return strconv.FormatInt(*r.Lag, 10)
	case r.Start != "" && r.Tail != nil:
		// "next" and "last" read from the tail of the consumer's first
		// start, which is fixed then: before it no lag can be told.
		return fmt.Sprintf("- (nothing stored yet; %q is fixed at its first start)", r.Start)
	case r.Until != nil && r.Tail != nil && r.Stored == nil:
		// Its reader has settled nothing yet: it reads from the stream's
		// first fact, or from where the replay put it, up to the bound.
		return fmt.Sprintf("- (nothing stored yet; its bound %d)", *r.Until)
	case r.Tail != nil && r.Stored == nil:
		return "- (nothing stored yet)"
	}
	return "-"
}
