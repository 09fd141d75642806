package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/runtime/poison"
)

func init() { register(discardCommand) }

func discardCommand() *cli.Command {
	return &cli.Command{
		Name:      "discard",
		Usage:     "move poison messages to the consumer's archive, with a recorded reason",
		UsageText: "warren discard --consumer NAME (--id ID ... | --routing-key KEY | --limit N | --all) --reason TEXT [--by WHO] [--url URL ...] SCHEMA_DIR",
		Description: `Takes messages a consumer will never handle out of its poison queue and keeps
them in the archive queue <consumer>.discarded, with the reason, who (--by)
and when in x-discard-reason, x-discarded-by and x-discarded-at. Each copy is
confirmed by the broker before the poison message is removed: nothing is
deleted without a record.

For an ordered consumer with "onPoison": "park" the discard also sends the
consumer a tombstone of each message (marked x-discarded, through its hash
exchange into the message's shard, as a replay would): the consumer lifts
the park its ordering key has behind the message and acks the tombstone
without handling it, so the facts parked behind it can then be replayed.

The archive keeps a message for 30 days and at most 100000 messages; when it
is full a discard fails and leaves the messages in the poison queue. Read it
with warren replay --from discarded --list; bring a message back with
warren replay --from discarded --id ID.

A selection is required: --id, --routing-key, --limit, or --all for every
message of the poison queue. --id may be repeated, each selecting its
message; a discard that finds no message with one of the ids moves the
others and exits 1, naming each id it did not find.

Examples:
   warren discard --consumer order-mailer --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 --reason "test order" --by ana ./events
   warren discard --consumer order-mailer --id ID1 --id ID2 --reason "test orders" ./events
   warren discard --consumer order-mailer --routing-key order.placed --reason "sku retired" ./events`,
		Flags: append(brokerFlags(),
			&cli.StringFlag{Name: "consumer", Usage: "the consumer `NAME`, as in warren.json (required)"},
			&cli.StringFlag{Name: "reason", Usage: "why, in `TEXT` the next person to look will read (required)"},
			&cli.StringFlag{Name: "by", Usage: "who decided (`WHO`), recorded with the reason and in the consumer's history (warren poison history)"},
			&cli.IntFlag{Name: "limit", Usage: "at most `N` messages (N > 0)"},
			&cli.GenericFlag{Name: "id", Value: &idList{}, Usage: "only the message with `ID` (its message id, the envelope's id); repeat for several"},
			&cli.StringFlag{Name: "routing-key", Usage: "only messages with routing `KEY` (exact)"},
			&cli.BoolFlag{Name: "all", Usage: "every message of the poison queue"},
		),
		Action: runDiscard,
	}
}

func runDiscard(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	if c.String("consumer") == "" {
		return usageError(c, "expected --consumer NAME")
	}
	if strings.TrimSpace(c.String("reason")) == "" {
		return usageError(c, "expected --reason TEXT: it is what the next person to look will read")
	}
	if c.IsSet("limit") && c.Int("limit") <= 0 {
		return usageError(c, "--limit %d: expected a positive number", c.Int("limit"))
	}
	ids, err := replayIDs(c)
	if err != nil {
		return err
	}
	selected := c.IsSet("id") || c.IsSet("routing-key") || c.IsSet("limit")
	if selected == c.Bool("all") {
		return usageError(c, "expected --id, --routing-key or --limit to select messages, or --all alone for every one")
	}
	stderr := c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(stderr, "discard", dir, err)
	}
	consumer, err := flagConsumer(c, p.Model, c.String("consumer"))
	if err != nil {
		return err
	}
	filter := byIDs(poison.Filter{Limit: c.Int("limit"), RoutingKey: c.String("routing-key")}, ids)
	conn, err := dialBroker(c, brokerURLs(c))
	if err != nil {
		return reportError(stderr, "discard", "", err)
	}
	defer conn.Close()

	archive := poison.DiscardQueue(consumer)
	done, err := poison.DiscardAs(c.Context, conn, consumer, filter, poison.Record{Reason: c.String("reason"), By: c.String("by")})
	for _, msg := range done {
		fmt.Fprintf(c.App.Writer, "discarded %s %s\n", msg.ID, msg.RoutingKey)
	}
	rec := poison.Action{By: c.String("by"), Action: poison.ActDiscard, From: consumer.PoisonQueue, To: archive, Reason: c.String("reason")}
	if rerr := poison.RecordMoved(c.Context, conn, consumer, rec, done, err); rerr != nil {
		err = errors.Join(err, rerr) // the messages moved all the same; rerr names the history queue
	}
	if err != nil {
		return reportError(stderr, "discard", "", whereMissing(c, conn, err))
	}
	if len(done) > 0 {
		fmt.Fprintf(c.App.Writer, "%s moved from %s to %s\n", count(len(done), "message"), consumer.PoisonQueue, archive)
	}
	if missing := missingIDs(ids, done); len(missing) > 0 {
		var lines []string
		for _, id := range missing {
			lines = append(lines, fmt.Sprintf("warren discard: no message with id %q in %s", id, consumer.PoisonQueue))
		}
		return cli.Exit(strings.Join(lines, "\n"), 1)
	}
	if len(done) == 0 {
		fmt.Fprintf(c.App.Writer, "nothing to discard in %s%s\n", consumer.PoisonQueue, selection(filter))
	}
	return nil
}
