package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

func init() { register(replayCommand) }

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "list a consumer's poison queue, or move its messages back to the work queue; or re-read a stream consumer's stream under a fresh offset name",
		UsageText: "warren replay --consumer NAME [--list | --dry-run] [--from poison|discarded] [--to-exchange] [--limit N] [--id ID] [--routing-key KEY] [--url URL ...] SCHEMA_DIR\nwarren replay --from unroutable [--list | --dry-run] [--limit N] [--id ID] [--routing-key KEY] [--url URL ...] SCHEMA_DIR\nwarren replay --consumer NAME --from stream --offset-name NAME [--offset N | --since TIME] [--limit N] [--dry-run] [--url URL ...] SCHEMA_DIR",
		Description: `With --list, prints the messages of the consumer's poison queue (id, routing
key, attempts, when and why it failed) and leaves them there.

Without it, moves them back to the consumer's work queue, once the cause is
fixed: to that consumer alone (never through the events exchange, which would
hand them again to every other consumer of the routing key), with the attempt
count reset, the failure kept in x-last-failure and the replay recorded in
x-replayed-at and x-replay-count. Each copy is confirmed by the broker before
the poison message is removed. Only the messages in the queue when the replay
starts are moved: one that fails again waits for the next replay.

--dry-run prints what a replay would move and changes nothing.
--format json prints a listing as a JSON array of the messages (id,
routing_key, exchange, attempts, replays, failed_at, failure, headers,
body), and a dry run as one object: dry_run, from, to, messages (as the
listing prints them) and ids_not_found (the --id values no message has).
Headers leave out x-delivery-count, which counts the readings of the lane,
and mask credentials. A replay that moves messages prints text: --format
json without --list or --dry-run is refused.
--from discarded reads the archive that warren discard fills
(<consumer>.discarded) instead of the poison queue, within its retention.
--to-exchange republishes through the events exchange with each message's
original routing key: every consumer bound to that key receives it again.
--from unroutable (without --consumer) reads the lane of delayed facts that
fell due with no consumer bound (<events>.delay.unroutable) and publishes
them through the events exchange, now that their consumer exists (a fact
one consumer deferred goes back to that consumer's work queue alone); one
that still reaches no queue stays in the lane.

--limit, --id and --routing-key select messages for all of them; --limit
must be positive (leave it out to select every message). --id may be
repeated: each selects its message. A replay that finds no message with
one of the ids moves the others and exits 1, naming it.

A dry run, like --list, changes nothing, not even the queue's order: a
replay with the same selection moves the messages it listed. Both read the
whole queue, also with --limit, and hand it back in order. Readings of one
queue take turns (another terminal's, warren console's): one that finds
another under way waits for it to end, up to two minutes.

A replay of a consumer's messages that moved something is recorded in its
history (warren poison history): who (--by), the message's id when it
moved one, from where to where, how many; not a dry run, a list, nor a
replay of the unroutable lane, which belongs to no consumer.

--from stream re-reads a stream consumer's stream, to rebuild a projection,
under a fresh offset name (--offset-name), leaving the consumer's own offset
where it is. It stores on the broker where the replay starts: the first fact
(the default), the first at or after --offset, or the first chunk written at
or after --since (to the second: the broker takes the time in whole seconds);
with --limit N, also where it ends: after N of the consumer's facts, or,
when the stream holds fewer of them from the start, at the stream's tail as
it is then: the output says how many it found of the N, and facts written
later are no part of the replay. It marks the name as the consumer's replay
too (NAME~of~CONSUMER), for warren status. A
process of the consumer started with
runtime.WithOffsetName(NAME) then reads from there, under that name (its
guard claims under it too, so facts already handled are handled again), and
stops handling at the end. The name must be fresh: nothing stored under it,
and no other consumer's replay marked under it. Nor may it be the own name of
any consumer of the manifest: the consumer's own, another stream consumer's
(the replay would position that consumer's offset) or a queue consumer's
(a reader's guard claims facts under its offset name, as that consumer's
does); such a name, and a --consumer that reads a queue or is not in the
manifest, are refused before anything is dialled, exit 2, as a --since that
is no RFC 3339 time (2026-12-01T00:00:00Z, 2026-12-01T01:00:00+01:00) is.
--dry-run prints the offsets the replay would read (with --limit, each fact)
and stores nothing. warren status shows the lag of a replay's name with
--offset-name. A start with nothing at or after it stores nothing and exits
non-zero: 2 for a --since in the future, 1 when the broker says so (an
--offset past the stream's tail, no fact at or after --since, an empty
stream), with a dry run too. A consumer of a super stream is refused: give
the projection to rebuild a consumer of its own, reading the super stream
from "start": "first".

Examples:
   warren replay --consumer order-mailer --list ./events
   warren replay --consumer order-mailer --dry-run ./events
   warren replay --consumer order-mailer --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 ./events
   warren replay --consumer order-mailer --dry-run --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 --id 0190b2c4-8a01-7b2c-8d3e-4f5a6b7c8d9e ./events
   warren replay --consumer order-mailer --routing-key order.placed --limit 10 ./events
   warren replay --consumer order-mailer --from discarded --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 ./events
   warren replay --consumer order-mailer ./events   # all of them
   warren replay --from unroutable --dry-run ./events
   warren replay --consumer order-history --from stream --offset-name order-history.rebuild --dry-run ./events
   warren replay --consumer order-history --from stream --offset-name order-history.rebuild --since 2026-12-01T00:00:00Z ./events
   warren replay --consumer order-history --from stream --offset-name order-history.try --offset 1200 --limit 100 ./events`,
		Flags: append(append(brokerFlags(),
			&cli.StringFlag{Name: "consumer", Usage: "the consumer `NAME`, as in warren.json (required)"},
			&cli.BoolFlag{Name: "list", Usage: "print the queue; change nothing"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would move; change nothing"},
			&cli.StringFlag{Name: "from", Value: "poison", Usage: "read `QUEUE`: poison or discarded, or unroutable (without --consumer), or stream (a stream consumer's stream, under --offset-name)"},
			&cli.BoolFlag{Name: "to-exchange", Usage: "republish through the events exchange to every consumer of the routing key"},
			&cli.IntFlag{Name: "limit", DefaultText: "all", Usage: "at most `N` messages (N > 0)"},
			&cli.GenericFlag{Name: "id", Value: &idList{}, Usage: "only the message with `ID` (its message id, the envelope's id); repeat for several"},
			&cli.StringFlag{Name: "routing-key", Usage: "only messages with routing `KEY` (exact)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "with --list or --dry-run, output `FORMAT`: text or json"},
			&cli.StringFlag{Name: "by", Usage: "who replays (`WHO`), recorded in the consumer's history (warren poison history)"},
		), streamReplayFlags()...),
		Action: runReplay,
	}
}

// fromUnroutable is --from unroutable: the lane of delayed facts that fell
// due with no consumer bound, shared by every consumer.
const fromUnroutable = "unroutable"

// checkReplayFlags refuses flags that make no sense alone or together.
func checkReplayFlags(c *cli.Context) error {
	if c.String("from") == fromUnroutable {
		if c.String("consumer") != "" {
			return usageError(c, "--from unroutable: the lane belongs to no consumer; its facts go back through the events exchange to whoever binds them now: expected no --consumer")
		}
	} else if c.String("consumer") == "" {
		return usageError(c, "expected --consumer NAME")
	}
	if format := c.String("format"); format != "text" && format != "json" {
		return usageError(c, "--format %q: expected text or json", format)
	}
	if c.IsSet("limit") && c.Int("limit") <= 0 {
		return usageError(c, "--limit %d: expected a positive number; leave --limit out to select every message", c.Int("limit"))
	}
	if c.Bool("list") && (c.Bool("dry-run") || c.Bool("to-exchange")) {
		return usageError(c, "--list changes nothing: expected it without --dry-run and --to-exchange")
	}
	if c.String("format") == "json" && !c.Bool("list") && !c.Bool("dry-run") && c.String("from") != fromStream {
		// A replay that moves messages says what it moved as it goes, in
		// text; JSON is what a listing and a dry run print.
		return usageError(c, "--format json: only with --list or --dry-run, which print the messages as JSON; a replay that moves them prints text")
	}
	return checkStreamReplayFlags(c)
}

func runReplay(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	ids, err := replayIDs(c)
	if err != nil {
		return err
	}
	if err := checkReplayFlags(c); err != nil {
		return err
	}
	format := c.String("format")
	unroutable := c.String("from") == fromUnroutable
	from := poison.FromPoison
	if c.String("from") == fromStream {
		p, err := generator.Open(c.Context, dir, genOptions(dir))
		if err != nil {
			return reportError(c.App.ErrWriter, "replay", dir, err)
		}
		return runStreamReplay(c, p.Model)
	}
	if !unroutable {
		var err error
		if from, err = poison.ParseSource(c.String("from")); err != nil {
			return usageError(c, "--from: %v (or unroutable, the delayed facts that fell due with no consumer bound)", err)
		}
	}
	stderr := c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(stderr, "replay", dir, err)
	}
	m := p.Model
	var consumer topology.Consumer
	if unroutable {
		if !m.Topology.Delay.Enabled() {
			return reportError(stderr, "replay", dir, errors.New(`--from unroutable: the manifest has no delayed facts ("delayedFacts"), so no unroutable lane`))
		}
		// The lane read as a poison queue: its facts carry the routing key
		// and exchange they were published with.
		consumer = topology.Consumer{Name: "the delay levels", PoisonQueue: m.Topology.Delay.Unroutable}
	} else if consumer, err = flagConsumer(c, m, c.String("consumer")); err != nil {
		return err
	}
	filter := byIDs(poison.Filter{Limit: c.Int("limit"), RoutingKey: c.String("routing-key")}, ids)
	opts := poison.ReplayOptions{From: from}
	src, dst := from.Queue(consumer), consumer.Queue
	if consumer.Ordered() {
		// No work queue: the consumer's hash exchange puts each fact in
		// its key's shard.
		dst = "exchange " + consumer.ShardExchange
	}
	if unroutable {
		// Published now, as the fact was to be when it fell due: to every
		// consumer bound to its routing key by now; one nobody binds yet
		// is refused (mandatory) and stays in the lane.
		opts.Exchange = m.Exchanges.Events
		dst = "exchange " + opts.Exchange + " (a fact one consumer deferred: that consumer's work queue alone)"
	} else if c.Bool("to-exchange") {
		opts.Exchange = m.Exchanges.Events
		dst = "exchange " + opts.Exchange
		fmt.Fprintf(stderr, "warren replay: warning: --to-exchange republishes through %s: every consumer bound to each message's routing key receives it again, not only %s\n", opts.Exchange, consumer.Name)
	}

	conn, err := dialBroker(c, brokerURLs(c))
	if err != nil {
		return reportError(stderr, "replay", "", err)
	}
	defer conn.Close()

	if c.Bool("list") {
		msgs, err := poison.ListFrom(c.Context, conn, consumer, from, filter)
		if err != nil {
			return reportError(stderr, "replay", "", whereMissing(c, conn, err))
		}
		if format == "json" {
			return writePoisonJSON(c.App.Writer, msgs)
		}
		return writePoisonTable(c.App.Writer, src, filter, msgs)
	}
	if c.Bool("dry-run") {
		return dryRunReplay(c, conn, consumer, filter, opts, dst, format)
	}

	done, err := poison.ReplayWith(c.Context, conn, consumer, filter, opts)
	for _, msg := range done {
		fmt.Fprintf(c.App.Writer, "replayed %s %s\n", msg.ID, msg.RoutingKey)
	}
	if !unroutable {
		// The unroutable lane belongs to no consumer, so to no history.
		rec := poison.Action{By: c.String("by"), Action: poison.ActRetry, From: src, To: dst}
		if rerr := poison.RecordMoved(c.Context, conn, consumer, rec, done, err); rerr != nil {
			err = errors.Join(err, rerr) // the messages moved all the same; rerr names the history queue
		}
	}
	if err != nil {
		return reportError(stderr, "replay", "", whereMissing(c, conn, err))
	}
	if len(done) > 0 {
		fmt.Fprintf(c.App.Writer, "%s moved from %s to %s\n", count(len(done), "message"), src, dst)
	}
	if missing := missingIDs(ids, done); len(missing) > 0 {
		var lines []string
		for _, id := range missing {
			lines = append(lines, fmt.Sprintf("warren replay: no message with id %q in %s", id, src))
		}
		return cli.Exit(strings.Join(lines, "\n"), 1)
	}
	if len(done) == 0 {
		fmt.Fprintf(c.App.Writer, "nothing to replay in %s%s\n", src, selection(filter))
	}
	return nil
}

// idList is a repeatable --id: each value is one id, whole (a comma is
// part of it, as it may be of a message id).
type idList []string

func (l *idList) Set(id string) error {
	*l = append(*l, id)
	return nil
}

func (l *idList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ", ")
}

// replayIDs returns the ids given with --id, each once, in the order given.
// An empty id is a usage error: a filter with no id selects every message,
// so `--id ""` (an unset shell variable) would act on the whole lane.
func replayIDs(c *cli.Context) ([]string, error) {
	l, _ := c.Generic("id").(*idList)
	if l == nil {
		return nil, nil
	}
	var out []string
	for _, id := range *l {
		if id == "" {
			return nil, usageError(c, "--id \"\": expected a message id")
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// byIDs narrows f to the messages with the given ids.
func byIDs(f poison.Filter, ids []string) poison.Filter {
	if len(ids) == 1 {
		f.ID = ids[0]
	} else if len(ids) > 1 {
		f.IDs = ids
	}
	return f
}

// missingIDs returns the ids of want that no message of done has.
func missingIDs(want []string, done []poison.Message) []string {
	var out []string
	for _, id := range want {
		if !slices.ContainsFunc(done, func(m poison.Message) bool { return m.ID == id }) {
			out = append(out, id)
		}
	}
	return out
}

// dryRunJSON is `warren replay --dry-run --format json`: what a replay
// with the same selection would move, from where to where.
type dryRunJSON struct {
	DryRun   bool         `json:"dry_run"` // always true: nothing changed
	From     string       `json:"from"`
	To       string       `json:"to"`
	Messages []poisonJSON `json:"messages"` // as --list --format json prints them
	// IDsNotFound are the ids given with --id that no message has: the
	// replay would move the others and exit 1.
	IDsNotFound []string `json:"ids_not_found"`
}

// dryRunReplay prints what a replay with the same selection would move,
// reading the source as --list does, so nothing changes; in format
// "json", as one dryRunJSON.
func dryRunReplay(c *cli.Context, conn *runtime.Conn, consumer topology.Consumer, f poison.Filter, o poison.ReplayOptions, dst, format string) error {
	src := o.From.Queue(consumer)
	msgs, err := poison.ListFrom(c.Context, conn, consumer, o.From, f)
	if err != nil {
		return reportError(c.App.ErrWriter, "replay", "", whereMissing(c, conn, err))
	}
	if format == "json" {
		out := dryRunJSON{DryRun: true, From: src, To: dst, Messages: poisonJSONOf(msgs), IDsNotFound: []string{}}
		if len(f.IDs) > 0 {
			out.IDsNotFound = append(out.IDsNotFound, missingIDs(f.IDs, msgs)...)
		} else if f.ID != "" && len(msgs) == 0 {
			out.IDsNotFound = append(out.IDsNotFound, f.ID)
		}
		data, err := encodeJSON(out)
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(data)
		return err
	}
	for _, msg := range msgs {
		fmt.Fprintf(c.App.Writer, "would replay %s %s\n", msg.ID, msg.RoutingKey)
	}
	if len(f.IDs) > 0 {
		// Several ids, some not there: the replay would say so, and exit 1.
		for _, id := range missingIDs(f.IDs, msgs) {
			fmt.Fprintf(c.App.Writer, "no message with id %q in %s\n", id, src)
		}
	}
	if len(msgs) == 0 {
		fmt.Fprintf(c.App.Writer, "nothing to replay in %s%s; dry run, nothing changed\n", src, selection(f))
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s would move from %s to %s; dry run, nothing changed\n", count(len(msgs), "message"), src, dst)
	return nil
}

// selection describes a filter's conditions for a message that says
// nothing matched, e.g. " with routing key order.placed".
func selection(f poison.Filter) string {
	var parts []string
	if f.ID != "" {
		parts = append(parts, "id "+f.ID)
	}
	if len(f.IDs) > 0 {
		parts = append(parts, "ids "+strings.Join(f.IDs, ", "))
	}
	if f.RoutingKey != "" {
		parts = append(parts, "routing key "+f.RoutingKey)
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}

func writePoisonTable(w io.Writer, queue string, f poison.Filter, msgs []poison.Message) error {
	if len(msgs) == 0 {
		_, err := fmt.Fprintf(w, "no messages in %s%s\n", queue, selection(f))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROUTING KEY\tATTEMPTS\tFAILED AT\tFAILURE")
	for _, m := range msgs {
		attempts := strconv.Itoa(m.Attempts)
		if m.Replays > 0 {
			attempts += fmt.Sprintf(" (replayed %d)", m.Replays)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(m.ID), cell(m.RoutingKey), attempts, timeOrDash(m.FailedAt), cell(m.Failure))
	}
	return tw.Flush()
}

// poisonJSON is one message in `warren replay --list --format json` (and
// --dry-run). Its headers are output, as poison.ShownHeaders gives them:
// credentials masked, and no x-delivery-count, which counts the readings
// of the lane.
type poisonJSON struct {
	ID         string          `json:"id"`
	RoutingKey string          `json:"routing_key"`
	Exchange   string          `json:"exchange"`
	Attempts   int             `json:"attempts"`
	Replays    int             `json:"replays"`
	FailedAt   *time.Time      `json:"failed_at"`
	Failure    string          `json:"failure"`
	Headers    map[string]any  `json:"headers"`
	Body       json.RawMessage `json:"body"` // the envelope; a JSON string when the body is not JSON
}

func writePoisonJSON(w io.Writer, msgs []poison.Message) error {
	data, err := encodeJSON(poisonJSONOf(msgs))
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// poisonJSONOf is msgs as --format json prints them; never nil, so that
// no message prints as [].
func poisonJSONOf(msgs []poison.Message) []poisonJSON {
	out := []poisonJSON{}
	for _, m := range msgs {
		p := poisonJSON{
			ID: m.ID, RoutingKey: m.RoutingKey, Exchange: m.Exchange, Attempts: m.Attempts,
			Replays: m.Replays, Failure: m.Failure, Headers: poison.ShownHeaders(m.Headers), Body: m.Body,
		}
		if !m.FailedAt.IsZero() {
			at := m.FailedAt
			p.FailedAt = &at
		}
		if !json.Valid(m.Body) {
			p.Body, _ = json.Marshal(string(m.Body))
		}
		out = append(out, p)
	}
	return out
}

// cell puts s on one line of printable text, "-" when empty: a failure
// text with line breaks or tabs cannot break the table, and one with
// terminal escape sequences (they come from payloads, which anyone may
// publish) cannot reach the terminal.
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if s = strings.Join(strings.Fields(s), " "); s == "" {
		return "-"
	}
	return s
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
