package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL, for --dsn postgres://...
	"github.com/urfave/cli/v2"
	_ "modernc.org/sqlite" // SQLite, for --dsn sqlite:PATH

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

func init() { register(outboxCommand) }

func outboxCommand() *cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag {
		return append([]cli.Flag{
			&cli.StringFlag{Name: "dsn", EnvVars: []string{"WARREN_OUTBOX_DSN"},
				Usage: "the service's database: `DSN` postgres://... (or postgresql://...), or sqlite:PATH"},
			&cli.StringFlag{Name: "table", Value: outbox.DefaultTable, Usage: "the outbox `TABLE` (schema.table on PostgreSQL)"},
		}, extra...)
	}
	resolve := func(name, verb string) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     verb + " failed rows, with a reason kept on each",
			UsageText: "warren outbox " + name + " --dsn DSN --reason TEXT (--all | ID ...)",
			Description: fmt.Sprintf(`%s the rows the relay marked failed after its last attempt, named by id
or all of them with --all. The reason is kept in each row's note. Rows that
are not failed are left alone; the count of rows changed is printed, and an
id named that is not a failed row is named on stderr, with exit status 1.

Example:
   warren outbox %s --dsn "$DATABASE_URL" --reason "queue limit raised" --all`, verb, name),
			Flags: flags(
				&cli.StringFlag{Name: "reason", Usage: "why, in a few words (`TEXT`)"},
				&cli.BoolFlag{Name: "all", Usage: "every failed row"},
			),
			Action: func(c *cli.Context) error { return runOutboxResolve(c, name) },
		}
	}
	return &cli.Command{
		Name:      "outbox",
		Usage:     "inspect a transactional outbox table; retry or discard its failed rows, list or cancel its scheduled facts",
		UsageText: "warren outbox status|failed|retry|discard|scheduled|cancel --dsn DSN [options]",
		Description: `The outbox table of runtime/outbox holds the facts written in business
transactions and not yet published, and the facts scheduled for later
(written through In or At) until they fall due.

Examples:
   warren outbox status --dsn "$DATABASE_URL"
   warren outbox failed --dsn sqlite:/var/lib/shop/shop.db
   warren outbox retry --dsn "$DATABASE_URL" --reason "queue limit raised" --all
   warren outbox scheduled --dsn "$DATABASE_URL" --routing-key order.reminder
   warren outbox cancel --dsn "$DATABASE_URL" 0192f1d2-8c4e-7a31-9b7d-2f5c0e4a6b18`,
		Subcommands: []*cli.Command{
			{
				Name:      "status",
				Usage:     "count pending, retrying, failed and scheduled rows; age of the oldest pending row",
				UsageText: "warren outbox status --dsn DSN [--table TABLE] [--fail-on-failed]",
				Description: `Prints the rows of the outbox table by state:
   PENDING     rows due and still to be published, of which RETRYING were refused at least once
   OLDEST      how long the longest-waiting pending row has been due: the relay's lag, or its absence
   FAILED      rows refused MaxAttempts times, waiting for warren outbox retry or discard
   DISCARDED   rows given up on, kept with their reason until pruned
   PUBLISHED   published rows kept (RelayConfig.KeepPublished)
   SCHEDULED   facts written for later that are not due yet
   NEXT DUE    when the first of those falls due

Exit status 1 with --fail-on-failed when a row is failed.

Example:
   warren outbox status --dsn "$DATABASE_URL"`,
				Flags:  flags(&cli.BoolFlag{Name: "fail-on-failed", Usage: "exit 1 when a row is failed"}),
				Action: runOutboxStatus,
			},
			{
				Name:      "failed",
				Usage:     "list failed rows with their last error",
				UsageText: "warren outbox failed --dsn DSN [--table TABLE] [--limit N]",
				Description: `Lists the rows marked failed, oldest first, with the error of their last attempt.

Example:
   warren outbox failed --dsn "$DATABASE_URL"`,
				Flags:  flags(&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most `N` rows"}),
				Action: runOutboxFailed,
			},
			resolve("retry", "Makes pending again (attempts reset)"),
			resolve("discard", "Gives up"),
			{
				Name:      "scheduled",
				Usage:     "list the scheduled facts not published yet, soonest due first",
				UsageText: "warren outbox scheduled --dsn DSN [--table TABLE] [--routing-key KEY] [--limit N]",
				Description: `Lists the facts written for later (through In or At) that the relay has
not published yet, soonest due first, with their ids for warren outbox
cancel. Facts already due but not yet published are listed too.

Example:
   warren outbox scheduled --dsn "$DATABASE_URL" --routing-key order.reminder`,
				Flags: flags(
					&cli.StringFlag{Name: "routing-key", Usage: "only the facts of routing `KEY`"},
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most `N` rows"},
				),
				Action: runOutboxScheduled,
			},
			{
				Name:      "cancel",
				Usage:     "cancel scheduled facts before they are published",
				UsageText: "warren outbox cancel --dsn DSN [--table TABLE] ID ...",
				Description: `Deletes the scheduled facts named by id that the relay has not published
yet, and prints how many it cancelled. An id that is unknown, already
published, or of a fact written to be published at once is left alone and
named, and the exit status is then 1.

Example:
   warren outbox cancel --dsn "$DATABASE_URL" 0192f1d2-8c4e-7a31-9b7d-2f5c0e4a6b18`,
				Flags:  flags(),
				Action: runOutboxCancel,
			},
		},
	}
}

// openOutbox opens the database --dsn names and the outbox of --table.
func openOutbox(c *cli.Context) (*outbox.Outbox, sqldb.DB, func(), error) {
	dsn := c.String("dsn")
	if dsn == "" {
		return nil, nil, nil, usageError(c, "expected --dsn (or WARREN_OUTBOX_DSN): the service's database")
	}
	return openOutboxAt(c, dsn, c.String("table"), "--dsn", "--table")
}

// openOutboxAt opens the database dsn and the outbox of table, naming the
// flags they came from in its errors.
func openOutboxAt(c *cli.Context, dsn, table, dsnFlag, tableFlag string) (*outbox.Outbox, sqldb.DB, func(), error) {
	driver, source, dialect := "", dsn, outbox.Dialect("")
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		driver, dialect = "pgx", outbox.Postgres
	case strings.HasPrefix(dsn, "sqlite:"):
		driver, dialect, source = "sqlite", outbox.SQLite, strings.TrimPrefix(dsn, "sqlite:")
	default:
		return nil, nil, nil, usageError(c, "%s %s: expected postgres://..., postgresql://... or sqlite:PATH", dsnFlag, secret.Text(dsn))
	}
	ob, err := outbox.New(outbox.Config{Dialect: dialect, Table: table})
	if err != nil {
		return nil, nil, nil, usageError(c, "%s: %v", tableFlag, err)
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, nil, nil, secret.Error(err)
	}
	return ob, sqldb.FromSQL(db), func() { _ = db.Close() }, nil
}

func runOutboxStatus(c *cli.Context) error {
	ob, db, closeDB, err := openOutbox(c)
	if err != nil {
		return err
	}
	defer closeDB()
	st, err := ob.Status(c.Context, db)
	if err != nil {
		return outboxError(c, err)
	}
	printOutboxStatus(c.App.Writer, ob.Table(), st, time.Now())
	if c.Bool("fail-on-failed") && st.Failed > 0 {
		fmt.Fprintf(c.App.ErrWriter, "warren outbox status: %s: %d failed rows (warren outbox failed lists them)\n", ob.Table(), st.Failed)
		return errReported
	}
	return nil
}

func printOutboxStatus(w io.Writer, table string, st outbox.Status, now time.Time) {
	oldest := "-"
	if !st.OldestPending.IsZero() {
		oldest = now.Sub(st.OldestPending).Round(time.Second).String()
	}
	next := "-"
	if !st.NextDue.IsZero() {
		next = dueIn(st.NextDue, now)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tPENDING\tRETRYING\tOLDEST\tFAILED\tDISCARDED\tPUBLISHED\tSCHEDULED\tNEXT DUE")
	fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%s\n", table, st.Pending, st.Retrying, oldest, st.Failed, st.Discarded, st.Published, st.Scheduled, next)
	_ = tw.Flush()
}

// dueIn renders a due time for a person: the time in UTC to the second,
// and how far off it is.
func dueIn(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	rel := "in " + d.String()
	if d < 0 {
		rel = (-d).String() + " ago"
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
}

func runOutboxScheduled(c *cli.Context) error {
	ob, db, closeDB, err := openOutbox(c)
	if err != nil {
		return err
	}
	defer closeDB()
	rows, err := ob.Scheduled(c.Context, db, c.String("routing-key"), c.Int("limit"))
	if err != nil {
		return outboxError(c, err)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROUTING KEY\tDUE\tWRITTEN\tATTEMPTS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.ID, r.RoutingKey, dueIn(r.DueAt, now), r.CreatedAt.UTC().Format(time.RFC3339), r.Attempts)
	}
	return tw.Flush()
}

func runOutboxCancel(c *cli.Context) error {
	ids := c.Args().Slice()
	if len(ids) == 0 {
		return usageError(c, "expected the ids of scheduled facts (warren outbox scheduled lists them)")
	}
	if err := checkIDs(ids, "scheduled facts", "scheduled"); err != nil {
		return usageError(c, "%s", err)
	}
	ob, db, closeDB, err := openOutbox(c)
	if err != nil {
		return err
	}
	defer closeDB()
	cancelled, missed := 0, []string(nil)
	// One transaction per id, so that the count can name the ids left
	// alone: each DELETE says whether its fact was still waiting.
	for _, id := range ids {
		n, err := cancelOne(c.Context, ob, db, id)
		if err != nil {
			return outboxError(c, err)
		}
		if n == 0 {
			missed = append(missed, id)
		}
		cancelled += int(n)
	}
	fmt.Fprintf(c.App.Writer, "cancelled %d scheduled facts of %s\n", cancelled, ob.Table())
	if len(missed) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "warren outbox cancel: not waiting (unknown, already published, or not scheduled): %s\n", strings.Join(missed, ", "))
		return errReported
	}
	return nil
}

func cancelOne(ctx context.Context, ob *outbox.Outbox, db sqldb.DB, id string) (int64, error) {
	tx, err := db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	n, err := ob.Cancel(ctx, tx, id)
	if err != nil {
		return 0, err
	}
	return n, tx.Commit(ctx)
}

func runOutboxFailed(c *cli.Context) error {
	ob, db, closeDB, err := openOutbox(c)
	if err != nil {
		return err
	}
	defer closeDB()
	rows, err := ob.Failed(c.Context, db, c.Int("limit"))
	if err != nil {
		return outboxError(c, err)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROUTING KEY\tATTEMPTS\tFAILED AT\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.ID, r.RoutingKey, r.Attempts, r.FailedAt.UTC().Format(time.RFC3339), oneLine(r.LastError))
	}
	return tw.Flush()
}

func runOutboxResolve(c *cli.Context, op string) error {
	ids := c.Args().Slice()
	if strings.TrimSpace(c.String("reason")) == "" {
		return usageError(c, "expected --reason: say why, it is kept with the rows")
	}
	if c.Bool("all") == (len(ids) > 0) {
		return usageError(c, "expected --all or the ids of failed rows, not both or neither")
	}
	if err := checkIDs(ids, "failed rows", "failed"); err != nil {
		return usageError(c, "%s", err)
	}
	ob, db, closeDB, err := openOutbox(c)
	if err != nil {
		return err
	}
	defer closeDB()
	do := ob.Retry
	if op == "discard" {
		do = ob.Discard
	}
	past := map[string]string{"retry": "retried", "discard": "discarded"}[op]
	if len(ids) == 0 {
		n, err := do(c.Context, db, c.String("reason"))
		if err != nil {
			return outboxError(c, err)
		}
		fmt.Fprintf(c.App.Writer, "%s %d failed rows of %s\n", past, n, ob.Table())
		return nil
	}
	// One call per id, so that the count can name the ids left alone, as
	// cancel does: an id that is not a failed row is a mistake to tell.
	var done int64
	var missed []string
	for _, id := range ids {
		n, err := do(c.Context, db, c.String("reason"), id)
		if err != nil {
			return outboxError(c, err)
		}
		if n == 0 {
			missed = append(missed, id)
		}
		done += n
	}
	fmt.Fprintf(c.App.Writer, "%s %d failed rows of %s\n", past, done, ob.Table())
	if len(missed) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "warren outbox %s: not failed rows (unknown, not failed, or already retried or discarded; warren outbox failed lists them): %s\n", op, strings.Join(missed, ", "))
		return errReported
	}
	return nil
}

// checkIDs refuses an id that is not a UUID before the database does, in
// its own words (an SQLSTATE): the outbox's ids are UUIDs.
func checkIDs(ids []string, what, lister string) error {
	for _, id := range ids {
		if _, err := uuid.Parse(id); err != nil {
			return fmt.Errorf("%q is not an id of %s: expected a UUID, as warren outbox %s lists them", id, what, lister)
		}
	}
	return nil
}

func outboxError(c *cli.Context, err error) error {
	fmt.Fprintf(c.App.ErrWriter, "warren outbox %s: %v\n", c.Command.Name, secret.Error(err))
	return errReported
}

// oneLine keeps an error on its table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
