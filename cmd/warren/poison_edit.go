package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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
		UsageText: "warren poison edit --consumer NAME --id ID [--copy N] --payload FILE [--by WHO] [--url URL ...] SCHEMA_DIR",
		Description: `Reads the new payload from FILE (- for standard input) and checks it against
the schema of the message's fact in SCHEMA_DIR, in the version the message
was written under (its x-fact-version header, which the retried copy keeps;
version 1 when it has none), as the consumer will: a payload that does not
match is refused with the schema's error, and nothing changes. A message of
a version whose schema SCHEMA_DIR does not have is refused too. Otherwise the original is kept in <consumer>.discarded (reason
"edited", who and when), the edited copy is retried to the consumer's work
queue with x-edited-at and x-edited-by beside the replay headers, and the
original leaves the poison queue once the broker confirmed both. The edit is
recorded in the history.

A lane can hold two messages with one id (a fact published twice, or
poisoned again while an older copy stayed). Then the edit is refused,
listing them (position, routing key, failed-at, x-failure), and nothing
changes: --copy N edits the Nth of them in the lane, and leaves the others
where they are.

Example:
   warren poison edit --consumer order-mailer --id 0190b2c4-7d7e-7c1a-9f5e-2b8d1c0e4a11 --payload fixed.json --by ana ./events`,
		Flags: flags(
			&cli.GenericFlag{Name: "id", Value: &idList{}, Usage: "the message `ID` (required; one: an edit replaces one message's payload)"},
			&cli.IntFlag{Name: "copy", Usage: "which of several messages with the id to edit: the `N`th in the lane, from 1 (required when the id has more than one)"},
			&cli.StringFlag{Name: "payload", Usage: "the new payload's JSON `FILE`, - for standard input (required)"},
			&cli.StringFlag{Name: "by", Usage: "who edits (`WHO`), recorded on the copy and in the history"},
		),
		Action: runPoisonEdit,
	}
}

// versionValidator checks payloads against the facts of a schema
// directory by routing key and version, as a consumer generated from the
// directory reads them: the version's own schema (the message's
// x-fact-version); with no version (0), version 1, which is how a
// consumer reads a message without the header, or the fact's only or
// newest version when the directory has no version 1. A version the
// directory does not have is an error that says which it has. It is the
// check of an edited payload for warren poison edit
// (poison.Edit.ValidateVersion) and for warren console's edit
// (console.Config.Validate), so that both refuse and accept alike.
func versionValidator(m *model.Model) func(routingKey string, version int, payload []byte) error {
	files := make(map[string]string, len(m.Schemas))
	for _, s := range m.Schemas {
		files[s.Path] = string(s.JSON)
	}
	set := schemaset.NewWith(files, schemaset.Options{IDs: m.SchemaIDs, AssertFormats: m.AssertFormats})
	return func(routingKey string, version int, payload []byte) error {
		var keys []string
		for _, f := range m.Facts {
			if f.RoutingKey != routingKey {
				keys = append(keys, f.RoutingKey)
				continue
			}
			want := max(version, 1)
			var have []string
			for _, v := range f.Versions() {
				if v.Version == want {
					return set.Validate(v.Location(), payload)
				}
				have = append(have, strconv.Itoa(v.Version))
			}
			if version == 0 {
				return set.Validate(f.Location(), payload)
			}
			versions := "versions"
			if len(have) == 1 {
				versions = "version"
			}
			return fmt.Errorf("the message is %s version %d (x-fact-version), and the schema directory has %s %s of it: no schema to check the payload against",
				routingKey, version, versions, strings.Join(have, ", "))
		}
		return fmt.Errorf("routing key %q is no fact of the schema directory, so its payload cannot be checked; expected one of %s", routingKey, strings.Join(keys, ", "))
	}
}

func runPoisonEdit(c *cli.Context) error {
	ids, err := replayIDs(c)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usageError(c, "expected --id ID")
	}
	if len(ids) > 1 {
		return usageError(c, "--id given %d times: an edit replaces one message's payload; expected one --id", len(ids))
	}
	if c.IsSet("copy") && c.Int("copy") < 1 {
		return usageError(c, "--copy %d: expected 1 or more, the copy's number as the refused edit listed it", c.Int("copy"))
	}
	path := c.String("payload")
	if path == "" {
		return usageError(c, "expected --payload FILE with the new payload's JSON")
	}
	var payload []byte
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
		ID: ids[0], Copy: c.Int("copy"), Payload: payload, By: c.String("by"), ValidateVersion: versionValidator(r.model),
	})
	if errors.Is(err, poison.ErrSeveralCopies) {
		err = fmt.Errorf("%w; say which to edit with --copy N, then edit or discard the others", err)
	}
	if err != nil {
		return r.fail(err)
	}
	dst := poison.RetryDestination(r.consumer)
	a := poison.Action{By: c.String("by"), Action: "edit", ID: m.ID, Cause: poison.CauseOf(m).Text, From: r.consumer.PoisonQueue, To: dst, Matched: 1, Count: 1}
	if err := poison.RecordAction(c.Context, r.conn, r.consumer, a); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "warren %s: warning: %v\n", commandName(c), err)
	}
	which := ""
	if n := c.Int("copy"); n > 0 {
		which = fmt.Sprintf(" (copy %d)", n)
	}
	fmt.Fprintf(c.App.Writer, "edited %s%s %s: retried to %s, the original kept in %s\n", m.ID, which, m.RoutingKey, dst, poison.DiscardQueue(r.consumer))
	return nil
}
