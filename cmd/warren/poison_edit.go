package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/schemaset"
)

// editCommand is warren poison edit.
func editCommand(flags func(...cli.Flag) []cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "edit",
		Usage:     "replace one poison message's payload, checked against its fact's schema, and retry it",
		UsageText: "warren poison edit --consumer NAME --id ID --payload FILE [--by WHO] [--url URL ...] SCHEMA_DIR",
		Description: `Reads the new payload from FILE (- for standard input) and checks it against
the schema of the message's fact in SCHEMA_DIR, as the consumer will: a
payload that does not match is refused with the schema's error, and nothing
changes. Otherwise the original is kept in <consumer>.discarded (reason
"edited", who and when), the edited copy is retried to the consumer's work
queue with x-edited-at and x-edited-by beside the replay headers, and the
original leaves the poison queue once the broker confirmed both. The edit is
recorded in the history.

Example:
   warren poison edit --consumer order-mailer --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 --payload fixed.json --by ana ./events`,
		Flags: flags(
			&cli.StringFlag{Name: "id", Usage: "the message `ID` (required)"},
			&cli.StringFlag{Name: "payload", Usage: "the new payload's JSON `FILE`, - for standard input (required)"},
			&cli.StringFlag{Name: "by", Usage: "who edits (`WHO`), recorded on the copy and in the history"},
		),
		Action: runPoisonEdit,
	}
}

// payloadValidator checks payloads against the facts of a schema
// directory by routing key, as the generated code of that directory does.
func payloadValidator(m *model.Model) func(routingKey string, payload []byte) error {
	files := make(map[string]string, len(m.Schemas))
	for _, s := range m.Schemas {
		files[s.Path] = string(s.JSON)
	}
	set := schemaset.NewWith(files, schemaset.Options{IDs: m.SchemaIDs, AssertFormats: m.AssertFormats})
	return func(routingKey string, payload []byte) error {
		var keys []string
		for _, f := range m.Facts {
			if f.RoutingKey == routingKey {
				return set.Validate(f.Location(), payload)
			}
			keys = append(keys, f.RoutingKey)
		}
		return fmt.Errorf("routing key %q is no fact of the schema directory, so its payload cannot be checked; expected one of %s", routingKey, strings.Join(keys, ", "))
	}
}

func runPoisonEdit(c *cli.Context) error {
	if c.String("id") == "" {
		return usageError(c, "expected --id ID")
	}
	path := c.String("payload")
	if path == "" {
		return usageError(c, "expected --payload FILE with the new payload's JSON")
	}
	var payload []byte
	var err error
	if path == "-" {
		payload, err = io.ReadAll(c.App.Reader)
	} else {
		payload, err = os.ReadFile(path)
	}
	if err != nil {
		return reportError(c.App.ErrWriter, commandName(c), "", fmt.Errorf("read the payload: %w", err))
	}
	r, err := openPoison(c)
	if err != nil {
		return err
	}
	defer r.conn.Close()
	m, err := poison.EditMessage(c.Context, r.conn, r.consumer, poison.Edit{
		ID: c.String("id"), Payload: payload, By: c.String("by"), Validate: payloadValidator(r.model),
	})
	if err != nil {
		return r.fail(err)
	}
	dst := poison.RetryDestination(r.consumer)
	a := poison.Action{By: c.String("by"), Action: "edit", ID: m.ID, Cause: poison.CauseOf(m).Text, From: r.consumer.PoisonQueue, To: dst, Matched: 1, Count: 1}
	if err := poison.RecordAction(c.Context, r.conn, r.consumer, a); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "warren %s: warning: %v\n", commandName(c), err)
	}
	fmt.Fprintf(c.App.Writer, "edited %s %s: retried to %s, the original kept in %s\n", m.ID, m.RoutingKey, dst, poison.DiscardQueue(r.consumer))
	return nil
}
