package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

func init() { register(poisonCommand) }

func poisonCommand() *cli.Command {
	consumer := &cli.StringFlag{Name: "consumer", Usage: "the consumer `NAME`, as in warren.json (required)"}
	from := &cli.StringFlag{Name: "from", Value: "poison", Usage: "read `QUEUE`: poison or discarded"}
	format := &cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"}
	flags := func(more ...cli.Flag) []cli.Flag { return append(append(brokerFlags(), consumer), more...) }
	subs := append([]*cli.Command{
		{
			Name:      "groups",
			Usage:     "group a consumer's poison queue (or its archive) by cause",
			UsageText: "warren poison groups --consumer NAME [--from poison|discarded] [--format text|json] [--url URL ...] SCHEMA_DIR",
			Description: `Reads the consumer's poison queue (or with --from discarded its archive) and
groups its messages by failure kind and normalised error: for a payload that
does not match its schema, the JSON pointers (array indices as *) and rules;
for a handler's error, its text with uuids, ids, numbers and quoted strings
masked, and the error or exception type it starts with. Each group has its
count, first and last x-failed-at, and routing keys.

The messages stay in the queue, in their order: they are read without an
acknowledgement and handed back when the reading ends (see warren replay).

Example:
   warren poison groups --consumer order-mailer ./events`,
			Flags:  flags(from, format),
			Action: runPoisonGroups,
		},
	}, append(groupCommands(flags), editCommand(flags))...)
	return &cli.Command{
		Name:      "poison",
		Usage:     "a consumer's poison lane by cause: group, retry, discard, export, edit, history",
		UsageText: "warren poison groups|retry|discard|export|edit|history --consumer NAME [options] SCHEMA_DIR",
		Description: `Groups the messages of a consumer's poison queue by why they failed, and acts
on a whole group at once. A group's id is a hash of its normalised cause, so
it stays the same from one listing to the next while messages come and go.

Examples:
   warren poison groups --consumer order-mailer ./events
   warren poison retry --consumer order-mailer --group 3fa2b1c09e4d --dry-run ./events
   warren poison discard --consumer order-mailer --group 3fa2b1c09e4d --reason "test orders" --by ana ./events
   warren poison export --consumer order-mailer --group 3fa2b1c09e4d ./events > group.jsonl
   warren poison edit --consumer order-mailer --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 --payload fixed.json --by ana ./events
   warren poison history --consumer order-mailer ./events`,
		Subcommands: subs,
	}
}

// poisonRun is what every poison subcommand starts from: the schema
// directory's model, the consumer, and a connection.
type poisonRun struct {
	c        *cli.Context
	dir      string
	model    *model.Model
	consumer topology.Consumer
	from     poison.Source // --from, where the subcommand has it
	conn     *runtime.Conn
}

// commandName is how errors name the subcommand: "poison groups".
func commandName(c *cli.Context) string { return strings.TrimPrefix(c.Command.HelpName, "warren ") }

// fail reports err, a queue that does not exist named with the broker
// and vhost asked.
func (r *poisonRun) fail(err error) error {
	return reportError(r.c.App.ErrWriter, commandName(r.c), "", whereMissing(r.c, r.conn, err))
}

// openPoison checks the flags every subcommand has, reads the schema
// directory and dials the broker; the caller closes the connection.
func openPoison(c *cli.Context) (*poisonRun, error) {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return nil, err
	}
	if c.String("consumer") == "" {
		return nil, usageError(c, "expected --consumer NAME")
	}
	if c.IsSet("format") {
		if f := c.String("format"); f != "text" && f != "json" {
			return nil, usageError(c, "--format %q: expected text or json", f)
		}
	}
	r := &poisonRun{c: c, dir: dir, from: poison.FromPoison}
	if c.IsSet("from") {
		if r.from, err = poison.ParseSource(c.String("from")); err != nil {
			return nil, usageError(c, "--from: %v", err)
		}
	}
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return nil, reportError(c.App.ErrWriter, commandName(c), dir, err)
	}
	r.model = p.Model
	if r.consumer, err = flagConsumer(c, r.model, c.String("consumer")); err != nil {
		return nil, err
	}
	if r.conn, err = dialBroker(c, brokerURLs(c)); err != nil {
		return nil, r.fail(err)
	}
	return r, nil
}

func runPoisonGroups(c *cli.Context) error {
	r, err := openPoison(c)
	if err != nil {
		return err
	}
	defer r.conn.Close()
	queue := r.from.Queue(r.consumer)
	groups, err := poison.Groups(c.Context, r.conn, r.consumer, r.from)
	if errors.Is(err, poison.ErrNoQueue) && r.from == poison.FromDiscarded {
		groups, err = nil, nil // the first discard declares the archive
	}
	if err != nil {
		return r.fail(err)
	}
	if c.String("format") == "json" {
		total := 0
		for _, g := range groups {
			total += g.Count
		}
		data, err := encodeJSON(map[string]any{"consumer": r.consumer.Name, "queue": queue, "messages": total, "groups": nonNilGroups(groups)})
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(data)
		return err
	}
	return writeGroupsTable(c.App.Writer, queue, groups)
}

func nonNilGroups(g []poison.Group) []poison.Group {
	if g == nil {
		return []poison.Group{}
	}
	return g
}

func writeGroupsTable(w io.Writer, queue string, groups []poison.Group) error {
	if len(groups) == 0 {
		_, err := fmt.Fprintf(w, "no messages in %s\n", queue)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tKIND\tCOUNT\tFIRST SEEN\tLAST SEEN\tROUTING KEYS\tCAUSE")
	total := 0
	for _, g := range groups {
		total += g.Count
		kind := g.Cause.Kind
		if g.Cause.Exception != "" {
			kind += " (" + g.Cause.Exception + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", g.ID, cell(kind), g.Count, timeOrDash(g.FirstSeen), timeOrDash(g.LastSeen), cell(keysText(g.RoutingKeys)), cell(g.Cause.Text))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s in %s, %s\n", count(total, "message"), queue, count(len(groups), "group"))
	return err
}

// keysText lists a group's routing keys with their counts, the first few.
func keysText(keys []poison.KeyCount) string {
	const shown = 3
	var parts []string
	for i, k := range keys {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", k.Key, k.Count))
	}
	return strings.Join(parts, ", ")
}
