package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/runtime/poison"
)

// groupFlags are the flags of the subcommands that act on a group.
func groupFlags(more ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "group", Usage: "the group `ID`, as warren poison groups lists it (required)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "say how many messages would move; change nothing"},
		&cli.IntFlag{Name: "expect", Usage: "refuse unless the group holds exactly `N` messages now; move at most N"},
		&cli.StringFlag{Name: "by", Usage: "who acts (`WHO`), recorded in the history"},
	}, more...)
}

// groupCommands are poison retry, discard and export.
func groupCommands(flags func(...cli.Flag) []cli.Flag) []*cli.Command {
	from := &cli.StringFlag{Name: "from", Value: "poison", Usage: "read `QUEUE`: poison or discarded"}
	const changed = `
The group is taken as it is when the command runs: it says how many messages
match now and acts on those (a message that joins while it runs waits for
the next run). With --expect N it refuses, and changes nothing, unless the
group holds exactly N messages now, and moves at most N.

Each action is recorded (who, when, what, how many) in the queue
<consumer>.poison-history: see warren poison history.`
	return []*cli.Command{
		{
			Name:      "retry",
			Usage:     "move a group's messages back to the consumer's work queue",
			UsageText: "warren poison retry --consumer NAME --group ID [--from poison|discarded] [--dry-run] [--expect N] [--by WHO] [--url URL ...] SCHEMA_DIR",
			Description: `Moves every message of the group back to the consumer's work queue, as
warren replay does: to that consumer alone, attempts reset, the failure kept
in x-last-failure, each copy confirmed before the poison message is removed.
` + changed + `

Example:
   warren poison retry --consumer order-mailer --group 3fa2b1c09e4d --expect 120 --by ana ./events`,
			Flags:  flags(groupFlags(from)...),
			Action: func(c *cli.Context) error { return runPoisonGroupAction(c, "retry") },
		},
		{
			Name:      "discard",
			Usage:     "move a group's messages to the consumer's archive, with a reason",
			UsageText: "warren poison discard --consumer NAME --group ID --reason TEXT [--dry-run] [--expect N] [--by WHO] [--url URL ...] SCHEMA_DIR",
			Description: `Moves every message of the group to <consumer>.discarded, as warren discard
does, recording the reason, who and when, and the group and how many it held
(x-discard-group, x-discard-batch) on each.
` + changed + `

Example:
   warren poison discard --consumer order-mailer --group 3fa2b1c09e4d --reason "test orders" --by ana ./events`,
			Flags:  flags(groupFlags(&cli.StringFlag{Name: "reason", Usage: "why, in `TEXT` the next person to look will read (required)"})...),
			Action: func(c *cli.Context) error { return runPoisonGroupAction(c, "discard") },
		},
		{
			Name:      "export",
			Usage:     "write a group's messages as JSON lines, leaving them where they are",
			UsageText: "warren poison export --consumer NAME --group ID [--from poison|discarded] [--dry-run] [--expect N] [--by WHO] [--url URL ...] SCHEMA_DIR > group.jsonl",
			Description: `Writes one JSON object per line for each message of the group: its id,
routing key, headers and payload (the envelope's payload; the whole body as
a string when it is not JSON). The messages stay in the queue, in their
order.

The export is output: the values of headers whose names say they carry
credentials (authorization, cookie, x-api-key, names with token, secret or
password in them, ...) are masked as xxxxx, and so is a URL's password in
any other header. What it masks it does not hold: an export cannot bring
the original back. warren poison retry moves the messages themselves,
headers as they are.
` + changed + `

Example:
   warren poison export --consumer order-mailer --group 3fa2b1c09e4d ./events > group.jsonl`,
			Flags:  flags(groupFlags(from)...),
			Action: func(c *cli.Context) error { return runPoisonGroupAction(c, "export") },
		},
		{
			Name:      "history",
			Usage:     "what was done to a consumer's poison lane: who, when, what, how many",
			UsageText: "warren poison history --consumer NAME [--format text|json] [--url URL ...] SCHEMA_DIR",
			Description: `Lists the actions recorded in <consumer>.poison-history, oldest first: group
retries, discards and exports, and edits. The queue keeps the latest 10000.

Example:
   warren poison history --consumer order-mailer ./events`,
			Flags:  flags(&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"}),
			Action: runPoisonHistory,
		},
	}
}

func runPoisonGroupAction(c *cli.Context, action string) error {
	if c.String("group") == "" {
		return usageError(c, "expected --group ID (warren poison groups lists them)")
	}
	if action == poison.ActDiscard && strings.TrimSpace(c.String("reason")) == "" {
		return usageError(c, "expected --reason TEXT: it is what the next person to look will read")
	}
	if c.IsSet("expect") && c.Int("expect") <= 0 {
		return usageError(c, "--expect %d: expected a positive number of messages", c.Int("expect"))
	}
	r, err := openPoison(c)
	if err != nil {
		return err
	}
	defer r.conn.Close()
	w := bufio.NewWriter(c.App.Writer)
	act := poison.GroupAct{
		Action: action, Group: c.String("group"), From: r.from, Expect: c.Int("expect"),
		By: c.String("by"), Reason: c.String("reason"), DryRun: c.Bool("dry-run"),
		Export: func(m poison.Message) error { return writeExportLine(w, m) },
	}
	g, done, err := poison.ActOnGroup(c.Context, r.conn, r.consumer, act)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	stderr := c.App.ErrWriter
	if g.ID != "" {
		match := "messages match"
		if g.Count == 1 {
			match = "message matches"
		}
		fmt.Fprintf(stderr, "group %s (%s: %s): %d %s in %s now\n", g.ID, g.Cause.Kind, cell(g.Cause.Text), g.Count, match, done.From)
	}
	if errors.Is(err, poison.ErrNoGroup) {
		return r.fail(fmt.Errorf("%w; warren poison groups --consumer %s lists them", err, r.consumer.Name))
	}
	if err != nil {
		if g.ID != "" && !errors.Is(err, poison.ErrExpect) {
			fmt.Fprintf(stderr, "%s of group %s done before the error\n", count(done.Count, "message"), g.ID)
		}
		return r.fail(err)
	}
	to := done.To
	if to == "" {
		to = "standard output"
	}
	if act.DryRun {
		fmt.Fprintf(c.App.Writer, "%s would %s from %s to %s; dry run, nothing changed\n", count(g.Count, "message"), action, done.From, to)
		return nil
	}
	verb := map[string]string{poison.ActRetry: "retried", poison.ActDiscard: "discarded", poison.ActExport: "exported"}[action]
	summary := fmt.Sprintf("%s %s of group %s from %s", verb, count(done.Count, "message"), g.ID, done.From)
	if done.To != "" {
		summary += " to " + done.To
	}
	if done.Count != g.Count {
		summary += fmt.Sprintf(" (%d matched when counted: the group changed meanwhile)", g.Count)
	}
	out := c.App.Writer
	if action == poison.ActExport {
		out = stderr // standard output holds the export
	}
	fmt.Fprintln(out, summary)
	return nil
}

// writeExportLine writes one message as a line of JSON.
func writeExportLine(w io.Writer, m poison.Message) error {
	line, err := poison.ExportLine(m)
	if err != nil {
		return err
	}
	_, err = w.Write(line)
	return err
}

func runPoisonHistory(c *cli.Context) error {
	r, err := openPoison(c)
	if err != nil {
		return err
	}
	defer r.conn.Close()
	actions, err := poison.History(c.Context, r.conn, r.consumer)
	if err != nil {
		return r.fail(err)
	}
	if c.String("format") == "json" {
		if actions == nil {
			actions = []poison.Action{}
		}
		data, err := encodeJSON(actions)
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(data)
		return err
	}
	if len(actions) == 0 {
		fmt.Fprintf(c.App.Writer, "nothing recorded for %s\n", r.consumer.Name)
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tBY\tACTION\tGROUP\tMESSAGES\tFROM\tTO\tREASON")
	for _, a := range actions {
		what := a.Group
		if a.ID != "" {
			what = "id " + a.ID
		}
		n := fmt.Sprintf("%d of %d", a.Count, a.Matched)
		if a.Error != "" {
			n += " (stopped: " + a.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", timeOrDash(a.At), cell(a.By), a.Action, cell(what), cell(n), cell(a.From), cell(a.To), cell(a.Reason))
	}
	return tw.Flush()
}
