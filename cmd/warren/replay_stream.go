package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// fromStream is --from stream: re-read a stream consumer's stream under a
// fresh offset name.
const fromStream = "stream"

// streamReplayFlags are the flags of warren replay --from stream.
func streamReplayFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "offset-name", Usage: "with --from stream, the fresh offset `NAME` the replay reads under"},
		&cli.Int64Flag{Name: "offset", Usage: "with --from stream, start at the first fact at or after `OFFSET`"},
		// A string, read by sinceOf: urfave/cli's own reading of a
		// time said only Go's layout error, naming "-since".
		&cli.StringFlag{Name: "since", Usage: "with --from stream, start at the first chunk of facts written at or after `TIME` (RFC 3339: 2026-12-01T00:00:00Z or 2026-12-01T01:00:00+01:00; its whole second)"},
		streamPortFlag(),
	}
}

// checkStreamReplayFlags refuses, with --from stream, the flags of the
// poison replay, and without it the stream replay's.
func checkStreamReplayFlags(c *cli.Context) error {
	if c.String("from") != fromStream {
		for _, f := range []string{"offset-name", "offset", "since"} {
			if c.IsSet(f) {
				return usageError(c, "--%s: only with --from stream", f)
			}
		}
		return nil
	}
	for _, f := range []string{"list", "to-exchange", "id", "routing-key", "format"} {
		if c.IsSet(f) {
			return usageError(c, "--%s: not with --from stream, which positions a fresh offset name for the consumer's own processes to read under", f)
		}
	}
	if c.String("offset-name") == "" {
		return usageError(c, "--from stream: expected --offset-name NAME, the fresh offset name the replay reads under")
	}
	if err := runtime.CheckOffsetName(c.String("offset-name")); err != nil {
		return usageError(c, "--offset-name: %v", err)
	}
	if c.IsSet("offset") && c.IsSet("since") {
		return usageError(c, "--offset and --since: expected one start, or neither to start at the first fact")
	}
	if c.IsSet("offset") && c.Int64("offset") < 0 {
		return usageError(c, "--offset %d: expected 0 or more", c.Int64("offset"))
	}
	since, ok, err := sinceOf(c)
	if err != nil {
		return err
	}
	if ok && since.After(time.Now()) {
		return usageError(c, "--since %s: in the future: a replay re-reads facts already written", since.UTC().Format(time.RFC3339))
	}
	_, err = streamPortsOf(c, brokerURLs(c))
	return err
}

// sinceOf reads --since: ok is false when it is not given, and a time it
// cannot read is a usage error naming the forms it takes.
func sinceOf(c *cli.Context) (t time.Time, ok bool, err error) {
	raw := c.String("since")
	if !c.IsSet("since") {
		return time.Time{}, false, nil
	}
	t, err = time.Parse(time.RFC3339, strings.TrimSpace(raw))
	if err != nil {
		return time.Time{}, false, usageError(c, "--since %q: expected a time in RFC 3339, a date and a time of day with its zone: 2026-12-01T00:00:00Z (UTC), 2026-12-01T01:00:00+01:00, or with fractions of a second, 2026-12-01T00:00:00.5Z", raw)
	}
	return t, true, nil
}

// replayableConsumers names the consumers --from stream replays: those
// that read a stream that is no super stream.
func replayableConsumers(m *model.Model) string {
	var names []string
	for _, tc := range m.Topology.Consumers {
		if tc.Stream != "" && len(tc.Partitions) == 0 {
			names = append(names, tc.Name)
		}
	}
	if len(names) == 0 {
		return "the manifest has no consumer that --from stream replays (one that reads a stream that is no super stream)"
	}
	return "expected a consumer that reads a stream that is no super stream: " + strings.Join(names, ", ")
}

// runStreamReplay is warren replay --from stream: it plans a replay of the
// consumer's stream under a fresh offset name and, unless --dry-run,
// stores it on the broker for the consumer's processes started with
// runtime.WithOffsetName.
func runStreamReplay(c *cli.Context, m *model.Model) error {
	stderr := c.App.ErrWriter
	name := c.String("consumer")
	tc, err := flagConsumer(c, m, name)
	if err != nil {
		return err
	}
	// A consumer of a kind --from stream cannot replay is known from the
	// manifest, before anything is dialled: a bad --consumer, as a bad
	// --offset-name is.
	if tc.Stream == "" {
		return usageError(c, "--from stream: consumer %q reads a queue, not a stream (warren.json \"stream\"); %s", name, replayableConsumers(m))
	}
	if len(tc.Partitions) > 0 {
		// See streamoffset.SuperStreamReplayError for why, and what
		// instead.
		return usageError(c, "--from stream: %v; %s", streamoffset.SuperStreamReplayError{Consumer: name, SuperStream: tc.Stream}, replayableConsumers(m))
	}
	// The consumer's own name, or another consumer's (whose offset or
	// guard claims the replay would take over), is refused before
	// anything is dialled: the manifest says so.
	if err := streamoffset.CheckReplayName(m.Topology, tc, c.String("offset-name")); err != nil {
		return usageError(c, "--offset-name: %v", err)
	}
	r := streamoffset.Replay{Consumer: tc, Name: c.String("offset-name"), Limit: c.Int("limit"), From: topology.Start{Kind: topology.StartFirst}, Topology: &m.Topology}
	for _, mc := range m.Consumers {
		if mc.Name == name {
			for _, f := range mc.Facts {
				r.Keys = append(r.Keys, f.RoutingKey)
			}
		}
	}
	switch {
	case c.IsSet("offset"):
		r.From = topology.Start{Kind: topology.StartOffset, Offset: c.Int64("offset")}
	case c.IsSet("since"):
		since, _, err := sinceOf(c)
		if err != nil {
			return err
		}
		r.From = topology.Start{Kind: topology.StartTime, Time: since}
	}
	urls := brokerURLs(c)
	ports, err := streamPortsOf(c, urls)
	if err != nil {
		return err
	}
	conn, err := dialStreamBroker(c, urls, ports)
	if err != nil {
		return reportError(stderr, "replay", "", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	// A stream with facts at or after the start delivers the first at
	// once: waiting longer would only delay saying that it has none.
	p, err := streamoffset.PlanReplay(ctx, conn, r, streamoffset.DefaultTailWait)
	if errors.Is(err, streamoffset.ErrNothingToReplay) {
		// A failure, as a --since in the future is (exit 2, refused
		// before dialling): a script that went on to start a reader
		// under the name would read the whole stream, from its first
		// fact, since nothing is stored under it.
		return reportError(stderr, "replay", "", fmt.Errorf("%w; nothing stored under %q", err, r.Name))
	}
	if err != nil {
		return reportError(stderr, "replay", "", err)
	}
	dry := c.Bool("dry-run")
	verb := "reads"
	if dry {
		verb = "would read"
	}
	for _, f := range p.Facts {
		what := "handled"
		switch {
		case f.NoRoute:
			what = "poisoned: " + name + "'s bindings match it, but it has no type for it"
		case !f.Handled:
			what = "skipped: not " + name + "'s"
		}
		fmt.Fprintf(c.App.Writer, "%s offset %d %s %s (%s)\n", verb, f.Offset, cell(f.ID), cell(f.RoutingKey), what)
	}
	span := fmt.Sprintf("from offset %d to the tail (%d now) and on", p.First, p.Tail)
	if p.Until >= 0 {
		span = fmt.Sprintf("from offset %d to offset %d (%s of %s)", p.First, p.Until, count(p.Handled(), "fact"), name)
	}
	if dry {
		fmt.Fprintf(c.App.Writer, "replay %s would read stream %s %s; dry run, nothing changed\n", p.Name, p.Stream, span)
		writeShortReplay(c.App.Writer, p, name, dry)
		return nil
	}
	if err := streamoffset.Apply(ctx, conn, p); err != nil {
		return reportError(stderr, "replay", "", err)
	}
	fmt.Fprintf(c.App.Writer, "replay %s reads stream %s %s: run %s with runtime.WithOffsetName(%q) to read it\n", p.Name, p.Stream, span, name, p.Name)
	writeShortReplay(c.App.Writer, p, name, dry)
	return nil
}

// writeShortReplay says, when the stream held fewer of the consumer's
// facts than --limit asked for, how many it found and that the replay
// ends at the stream's tail as it is now: facts written later are not
// part of it, however many there are when its reader runs.
func writeShortReplay(w io.Writer, p streamoffset.Plan, consumer string, dry bool) {
	if !p.Short() {
		return
	}
	found := "only " + strconv.Itoa(p.Handled())
	if p.Handled() == 0 {
		found = "none"
	}
	ends, part := "ends", "are"
	if dry {
		ends, part = "would end", "would be"
	}
	fmt.Fprintf(w, "note: %s of the %d facts of %s asked for (--limit %d) are in stream %s from offset %d: the replay %s at offset %d, the stream's tail now; facts written later %s no part of it\n",
		found, p.Limit, consumer, p.Limit, p.Stream, p.First, ends, p.Until, part)
}

// dialStreamBroker is dialBroker with the stream protocol's ports.
func dialStreamBroker(c *cli.Context, urls []string, ports streamPorts) (*runtime.Conn, error) {
	// The stream client's own log lines are noise here: what fails is
	// returned as an error and printed once.
	streamoffset.LogTo(slog.New(slog.DiscardHandler))
	return dialBrokerWith(c, runtime.Config{URLs: urls, StreamPort: ports.shared, StreamPorts: ports.each})
}
