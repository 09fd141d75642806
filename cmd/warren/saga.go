package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
)

func init() { register(sagaCommand) }

func sagaCommand() *cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag {
		return append([]cli.Flag{
			&cli.StringFlag{Name: "dsn", EnvVars: []string{"WARREN_SAGA_DSN"},
				Usage: "the service's database: `DSN` postgres://... (or postgresql://...), or sqlite:PATH"},
			&cli.StringFlag{Name: "table", Value: saga.DefaultTable, Usage: "the saga instances `TABLE` (schema.table on PostgreSQL)"},
			&cli.StringFlag{Name: "outbox-table", Value: outbox.DefaultTable, Usage: "the outbox `TABLE` the sagas schedule their timeouts in"},
		}, extra...)
	}
	return &cli.Command{
		Name:      "saga",
		Usage:     "list, show or delete the instances of sagas (runtime/saga)",
		UsageText: "warren saga list|show|delete --dsn DSN [options]",
		Description: `A saga keeps one row per instance in its store's table: its state, its
version, its pending timeouts, when it started and when it completed.

Examples:
   warren saga list --dsn "$DATABASE_URL" --saga checkout
   warren saga show --dsn sqlite:/var/lib/shop/shop.db checkout order-17
   warren saga delete --dsn "$DATABASE_URL" checkout order-17`,
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list instances, running ones first, oldest first, with their age and pending timeouts",
				UsageText: "warren saga list --dsn DSN [--saga NAME] [--limit N]",
				Flags: flags(
					&cli.StringFlag{Name: "saga", Usage: "only the instances of saga `NAME`"},
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most `N` instances"},
				),
				Action: runSagaList,
			},
			{
				Name:      "show",
				Usage:     "show one instance: its state, version and pending timeouts",
				UsageText: "warren saga show --dsn DSN SAGA INSTANCE",
				Flags:     flags(),
				Action:    runSagaShow,
			},
			{
				Name:      "delete",
				Usage:     "delete one instance and cancel its pending timeouts",
				UsageText: "warren saga delete --dsn DSN SAGA INSTANCE",
				Description: `Deletes the instance and cancels its pending timeouts in the outbox, in one
transaction. A fact of the instance that arrives later finds none and
follows its rule (start, ignore or poison). Exit status 1 when there was no
such instance.`,
				Flags:  flags(),
				Action: runSagaDelete,
			},
		},
	}
}

// openSagaAdmin opens the database --dsn names and the admin of --table.
func openSagaAdmin(c *cli.Context) (*saga.Admin, func(), error) {
	dsn := c.String("dsn")
	if dsn == "" {
		return nil, nil, usageError(c, "expected --dsn (or WARREN_SAGA_DSN): the service's database")
	}
	ob, db, closeDB, err := openOutboxAt(c, dsn, c.String("outbox-table"), "--dsn", "--outbox-table")
	if err != nil {
		return nil, nil, err
	}
	a, err := saga.NewAdmin(db, sagaDialect(dsn), c.String("table"), ob)
	if err != nil {
		closeDB()
		return nil, nil, usageError(c, "--table: %v", err)
	}
	return a, closeDB, nil
}

func sagaDialect(dsn string) outbox.Dialect {
	if strings.HasPrefix(dsn, "sqlite:") {
		return outbox.SQLite
	}
	return outbox.Postgres
}

// sagaArgs returns SAGA INSTANCE.
func sagaArgs(c *cli.Context) (string, string, error) {
	if c.Args().Len() != 2 {
		return "", "", usageError(c, "expected SAGA INSTANCE: the saga's name and the instance's id (warren saga list shows them)")
	}
	return c.Args().Get(0), c.Args().Get(1), nil
}

func runSagaList(c *cli.Context) error {
	a, closeDB, err := openSagaAdmin(c)
	if err != nil {
		return err
	}
	defer closeDB()
	rows, err := a.List(c.Context, c.String("saga"), c.Int("limit"))
	if err != nil {
		return sagaError(c, err)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SAGA\tINSTANCE\tVERSION\tSTATUS\tAGE\tUPDATED\tTIMEOUTS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s ago\t%s\n", r.Saga, r.Instance, r.Version, sagaStatus(r), now.Sub(r.CreatedAt).Round(time.Second), now.Sub(r.UpdatedAt).Round(time.Second), orDash(strings.Join(r.TimeoutNames(), ", ")))
	}
	return tw.Flush()
}

// sagaStatus is "running" or "completed".
func sagaStatus(r saga.InstanceRow) string {
	if r.CompletedAt.IsZero() {
		return "running"
	}
	return "completed"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runSagaShow(c *cli.Context) error {
	name, id, err := sagaArgs(c)
	if err != nil {
		return err
	}
	a, closeDB, err := openSagaAdmin(c)
	if err != nil {
		return err
	}
	defer closeDB()
	r, ok, err := a.Show(c.Context, name, id)
	if err != nil {
		return sagaError(c, err)
	}
	if !ok {
		fmt.Fprintf(c.App.ErrWriter, "warren saga show: no instance %q of saga %q in %s\n", id, name, a.Table())
		return errReported
	}
	w := c.App.Writer
	fmt.Fprintf(w, "saga:      %s\ninstance:  %s\nversion:   %d\nstatus:    %s\n", r.Saga, r.Instance, r.Version, sagaStatus(r))
	fmt.Fprintf(w, "started:   %s\nupdated:   %s\n", r.CreatedAt.UTC().Format(time.RFC3339), r.UpdatedAt.UTC().Format(time.RFC3339))
	if !r.CompletedAt.IsZero() {
		fmt.Fprintf(w, "completed: %s\n", r.CompletedAt.UTC().Format(time.RFC3339))
	}
	for _, n := range r.TimeoutNames() {
		fmt.Fprintf(w, "timeout:   %s (outbox message %s)\n", n, r.Timeouts[n])
	}
	var state bytes.Buffer
	if err := json.Indent(&state, r.State, "", "  "); err != nil {
		state.Reset()
		state.Write(r.State)
	}
	fmt.Fprintf(w, "state:\n%s\n", state.String())
	return nil
}

func runSagaDelete(c *cli.Context) error {
	name, id, err := sagaArgs(c)
	if err != nil {
		return err
	}
	a, closeDB, err := openSagaAdmin(c)
	if err != nil {
		return err
	}
	defer closeDB()
	deleted, err := a.Delete(c.Context, name, id)
	if err != nil {
		return sagaError(c, err)
	}
	if !deleted {
		fmt.Fprintf(c.App.ErrWriter, "warren saga delete: no instance %q of saga %q in %s\n", id, name, a.Table())
		return errReported
	}
	fmt.Fprintf(c.App.Writer, "deleted instance %q of saga %q, its pending timeouts cancelled\n", id, name)
	return nil
}

func sagaError(c *cli.Context, err error) error {
	fmt.Fprintf(c.App.ErrWriter, "warren saga %s: %v\n", c.Command.Name, secret.Error(err))
	return errReported
}
