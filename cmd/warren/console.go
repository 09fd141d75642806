package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/console"
	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/docgen"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

func init() { register(consoleCommand) }

// consoleTokenEnv names the environment variable that sets the console's
// token, for a team that shares one; otherwise each start makes its own.
const consoleTokenEnv = "WARREN_CONSOLE_TOKEN"

func consoleCommand() *cli.Command {
	return &cli.Command{
		Name:      "console",
		Usage:     "serve a web page for operators: live figures, poison review, topology, catalogue",
		UsageText: "warren console [--listen ADDR] [--management-url URL] [--outbox-dsn DSN] [--saga-dsn DSN] [--read-only] [--url URL ...] SCHEMA_DIR",
		Description: `Serves, for the consumers of SCHEMA_DIR on the broker:
   - every consumer's work depth, poison depth, consumer count and redelivery
     rate, refreshing live, with the last hour drawn; a consumer with poison,
     or with work and no consumer, stands out;
   - each poison lane: the messages with their failure, headers and payload,
     filtered by routing key and text; replay the ones you pick to the work
     queue, or discard them with a reason (they are kept in
     <consumer>.discarded); each copy is confirmed by the broker first;
   - facts for later: with delayed facts, how many wait in the delay levels
     (per level), the latest the next falls due, and the unroutable lane; with
     --outbox-dsn, the outbox table's pending, failed and scheduled rows and
     the next due time;
   - with --saga-dsn, each saga's instances: running and completed, the
     oldest running one's age, and how many wait on a timeout; a saga's
     view lists its instances (the 200 oldest running by default) with
     their version, age and pending timeouts, due when the outbox
     (--outbox-table, in the same database) says;
   - the topology drawn, and the catalogue and schema of every fact.

Depths and consumer counts come over AMQP. The broker counts redeliveries
only in its management API: give --management-url (credentials from the
URL, else from the broker URL) to show the redelivery rate.

While the broker cannot be reached, the console keeps reconnecting; a
reading or an action of the page waits for it as long as --timeout, then
says so.

Safe by default: it listens on 127.0.0.1 unless --listen says otherwise;
replay and discard need the token printed at start (or set in
$WARREN_CONSOLE_TOKEN) and refuse requests from other sites; --read-only
shows everything and changes nothing. Nothing is loaded from the internet,
and no password is shown.

Examples:
   warren console ./events
   warren console --management-url http://127.0.0.1:15672/ ./events
   warren console --read-only --listen 0.0.0.0:7878 ./events`,
		Flags: append(brokerFlags(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7878", Usage: "serve on `ADDR` (host:port; port 0 picks a free one)"},
			managementFlag("rates and the versions live consumers read"),
			&cli.BoolFlag{Name: "read-only", Usage: "show everything, change nothing"},
			&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "read the figures every `DURATION`"},
			&cli.DurationFlag{Name: "history", Value: time.Hour, Usage: "draw the last `DURATION` of the figures"},
			&cli.StringFlag{Name: "outbox-dsn", EnvVars: []string{"WARREN_OUTBOX_DSN"},
				Usage: "also show the outbox table of this database: `DSN` postgres://... or sqlite:PATH"},
			&cli.StringFlag{Name: "outbox-table", Value: outbox.DefaultTable, Usage: "the outbox `TABLE` of --outbox-dsn, and of --saga-dsn (the sagas' timeouts)"},
			&cli.StringFlag{Name: "saga-dsn", EnvVars: []string{"WARREN_SAGA_DSN"},
				Usage: "also show the sagas' instances kept in this database: `DSN` postgres://... or sqlite:PATH"},
			&cli.StringFlag{Name: "saga-table", Value: saga.DefaultTable, Usage: "the saga instances `TABLE` of --saga-dsn"},
			streamPortFlag(),
		),
		Action: runConsole,
	}
}

func runConsole(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	if c.Duration("interval") <= 0 || c.Duration("history") < c.Duration("interval") {
		return usageError(c, "--interval %s, --history %s: expected positive durations, the history at least one interval", c.Duration("interval"), c.Duration("history"))
	}
	urls := brokerURLs(c)
	ports, err := streamPortsOf(c, urls)
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(stderr, "console", dir, err)
	}
	docs, err := p.Docs()
	if err != nil {
		return reportError(stderr, "console", "", err)
	}
	catalogue := docs[docgen.CatalogueFile]
	cfg := console.Config{
		Topology: p.Model.Topology, Catalogue: catalogue, Schemas: factSchemas(p), Validate: versionValidator(p.Model), Versions: consoleVersions(p.Model),
		ReadOnly: c.Bool("read-only"), Interval: c.Duration("interval"), History: c.Duration("history"),
		// A page waits for a lost broker as long as connecting does.
		BrokerWait: c.Duration("timeout"),
		Logger:     slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if cfg.Management, err = managementOf(c, urls[0]); err != nil {
		return reportError(stderr, "console", "", err)
	}
	if !cfg.ReadOnly {
		if cfg.Token = os.Getenv(consoleTokenEnv); cfg.Token == "" {
			if cfg.Token, err = console.NewToken(); err != nil {
				return reportError(stderr, "console", "", err)
			}
		}
	}
	if dsn := c.String("outbox-dsn"); dsn != "" {
		ob, db, closeDB, err := openOutboxAt(c, dsn, c.String("outbox-table"), "--outbox-dsn", "--outbox-table")
		if err != nil {
			return err
		}
		defer closeDB()
		cfg.Outbox = outboxReader{ob: ob, db: db}
	}
	if dsn := c.String("saga-dsn"); dsn != "" {
		// The outbox of the sagas' database is read for when their timeouts
		// are due; the Admin deletes nothing here (SagaReader only reads).
		ob, db, closeDB, err := openOutboxAt(c, dsn, c.String("outbox-table"), "--saga-dsn", "--outbox-table")
		if err != nil {
			return err
		}
		defer closeDB()
		a, err := saga.NewAdmin(db, sagaDialect(dsn), c.String("saga-table"), ob)
		if err != nil {
			return usageError(c, "--saga-table: %v", err)
		}
		cfg.Sagas = a
	}
	conn, err := dialStreamBroker(c, urls, ports)
	if err != nil {
		return reportError(stderr, "console", "", err)
	}
	defer conn.Close()
	cfg.Broker, cfg.BrokerURL = conn, conn.URL()
	lags := streamoffset.NewLagReader(conn)
	defer lags.Close()
	cfg.StreamLag = func(ctx context.Context, sc topology.Consumer) []streamoffset.LagResult {
		return lags.ReadEach(ctx, sc)
	}

	l, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return reportError(stderr, "console", "", fmt.Errorf("--listen: %w", err))
	}
	cfg.AllowedHosts = console.LoopbackHosts(l.Addr())
	srv, err := console.New(cfg)
	if err != nil {
		_ = l.Close()
		return reportError(stderr, "console", "", err)
	}
	announce(c, l.Addr(), cfg)
	return serveConsole(c.Context, srv, l)
}

// outboxReader is the console's view of an outbox table in a database.
type outboxReader struct {
	ob *outbox.Outbox
	db sqldb.DB
}

func (r outboxReader) Table() string { return r.ob.Table() }
func (r outboxReader) Status(ctx context.Context) (outbox.Status, error) {
	return r.ob.Status(ctx, r.db)
}

// announce prints where the console is; the token goes in the address's
// fragment, which the browser keeps to itself.
func announce(c *cli.Context, addr net.Addr, cfg console.Config) {
	w := c.App.Writer
	page := "http://" + addr.String() + "/"
	switch {
	case cfg.ReadOnly:
		fmt.Fprintf(w, "warren console: %s (read-only)\n", page)
	case os.Getenv(consoleTokenEnv) != "":
		fmt.Fprintf(w, "warren console: %s (actions need the token in $%s)\n", page, consoleTokenEnv)
	default:
		fmt.Fprintf(w, "warren console: %s#token=%s\n", page, cfg.Token)
		fmt.Fprintf(w, "replay and discard need this token; it changes on every start (set $%s to keep one)\n", consoleTokenEnv)
	}
	if cfg.Management == nil {
		fmt.Fprintln(w, "no --management-url: the redelivery rate is not shown")
	}
}

// serveConsole serves until ctx ends, then shuts the server down.
func serveConsole(ctx context.Context, srv *console.Server, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Sample(ctx)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// factSchemas returns each fact's schema as written: the whole file, or
// (for a fact declared by pointing into a file) the part it points at.
func factSchemas(p *generator.Project) []console.Schema {
	var out []console.Schema
	s := p.Schemas
	for _, f := range p.Model.Facts {
		cs := console.Schema{RoutingKey: f.RoutingKey, Title: f.GoName, Version: f.Version, Source: f.Source, Description: f.Description}
		if doc, ok := s.Doc(f.Type.Source); ok {
			if f.Type.Pointer == "" {
				cs.JSON = string(doc.Src)
			} else if v, ok := doc.Lookup(f.Type.Pointer); ok {
				b, _ := json.MarshalIndent(v, "", "  ")
				cs.JSON = string(b)
				cs.Source += "#" + f.Type.Pointer
			}
		}
		out = append(out, cs)
	}
	return out
}

// consoleVersions lists, per consumer, the versions it reads of each fact
// with several, as warren status shows them.
func consoleVersions(m *model.Model) []liveversions.Reads {
	var out []liveversions.Reads
	for _, c := range m.Consumers {
		out = append(out, versionReads(c)...)
	}
	return out
}
