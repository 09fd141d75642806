package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/console"
	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/delaystat"
	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
)

func init() { register(statusCommand) }

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show each consumer's queue depths and consumer count",
		UsageText: "warren status [--url URL ...] [--format text|json] [--fail-on CONDITIONS [--max-lag OFFSETS]] SCHEMA_DIR",
		Description: `Prints, per consumer of SCHEMA_DIR, the figures to watch:
   WORK       messages ready in the work queue; one that climbs and does not come down is the earliest honest signal
   CONSUMERS  consumers attached to the work queue, in every process; 0 with work waiting is a deploy that half-happened
   RETRYING   messages waiting in the delay queues for another attempt, per delay
   POISON     messages given up on, waiting for warren replay; alert on anything above 0
A batch consumer's name is followed by its batch: "(batches of 100, 200ms)".
With stream consumers, a table of how far each is behind its stream:
   STORED     the offset stored under the consumer's name (its last settled fact)
   TAIL       the offset of the stream's last fact, read exactly over the stream
              protocol (attached at the last chunk); "-" when the stream holds none
   LAG        offsets after STORED up to TAIL: the facts not settled yet, and the
              stream's own offset-tracking records among them (one per store)
A consumer that has stored nothing yet counts its lag from where it reads:
"N (nothing stored yet; from offset F)", F the stream's first fact for
"start": "first", the declared offset (or the first fact, when retention
removed it), or the first fact written at or after the declared time. A
"next" or "last" is fixed at the consumer's first start, to the tail of
then: before it the lag is "- (nothing stored yet; "next" is fixed at its
first start)". --format json has "start" and "from" on such a row.
--offset-name NAME adds a replay's name (warren replay --from stream) on each
stream where something is stored under it (its offset, its bound, or warren
replay's mark of whose replay it is), with the consumer it reads for; a name
with nothing stored on any stream is said so on stderr (a replay from a
stream's first fact stores nothing but its mark until its reader settles a
fact). A replay with a bound (--limit) also shows how many offsets it has
left to it, and "replay done" once its reader is there.
With delayed facts ("delayedFacts" in the manifest), a second table:
   DELAYED    facts published for later, waiting in the delay levels, per level
   NEXT DUE WITHIN  the latest the next of them falls due (the levels' counts bound it;
              a fact's own due time is not read off the broker)
   UNROUTABLE facts that fell due with no consumer bound to them, waiting for a person
With a fact in several versions side by side, a table of which versions each
consumer reads: as the schema directory builds it (its own, and older ones
through upcasts), and, with --management-url, as the processes attached to
its queues announce it to the broker (LIVE: each announcement and how many
processes made it); beside them the versions the publisher publishes
(warren.json "versions"). Below it, for each fact, which published versions
no consumer needs any more and can be retired: every live process (or, with
none attached, the schema's build) reads another published version. Without
--management-url only the schema's build is known, which reads an old version
through upcasts as soon as a new one is added while older builds still
deployed may read the old one alone: such a version is said to be unneeded by
the directory's consumers, to be retired once LIVE shows no process reading it.
Only the management API lists what consumers announce: it is the
rabbitmq_management plugin (rabbitmq-plugins enable rabbitmq_management).
With --outbox-dsn, a further table: the outbox table's rows (see warren outbox
status), its facts scheduled for later among them, and when the next falls due.

The broker is asked by passive declare, so no management plugin is needed
but for LIVE (--management-url).
Without it the broker does not count redeliveries: RETRYING is what it can
tell of failing handlers, and the redelivery rate is counted by each consuming
process (runtime Conn.Figures).

A consumer of a super stream keeps an offset per partition: it has a row
per partition (STREAM names the partition) for each offset name. A row
whose lag cannot be read says "not read" and the rest is read and
printed; the command then says on stderr which and why, and exits 1,
whatever --fail-on says, since the figures are incomplete. So too for a
management API that does not answer (LIVE says "not read", and no version
is called retirable without it) and an outbox table that cannot be read.
The management API is asked only with a fact in several versions. A stream that
does not exist shows "(not declared)" and counts as missing.

Exit status 1 when a condition of --fail-on holds, each named on stderr:
   missing    a queue or stream does not exist: the topology is not declared
              (warren declare), or the schema directory is not the one the
              services run
   poison     a poison queue holds a message
   idle       a work queue holds messages and no consumer is attached
   unroutable a delayed fact fell due and no consumer was bound to it
   lag        a stream consumer is more than --max-lag offsets behind its
              stream's tail (default 10000; a super stream's consumer: the
              sum over its partitions); a lag not known does not count
The default is --fail-on missing; --fail-on missing,poison,idle drives an alert.

Examples:
   warren status ./events
   watch -n 5 warren status ./events
   warren status --fail-on missing,poison,idle ./events   # as a monitoring check
   warren status --fail-on missing,lag --max-lag 50000 ./events   # stream consumers falling behind
   warren status --format json ./events | jq '.consumers[] | select(.poison > 0)'
   warren status --management-url http://127.0.0.1:15672/ ./events   # versions live consumers read`,
		Flags: append(brokerFlags(),
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"},
			failOnFlag(),
			maxLagFlag(),
			managementFlag("the versions live consumers read"),
			&cli.StringFlag{Name: "outbox-dsn", EnvVars: []string{"WARREN_OUTBOX_DSN"},
				Usage: "also show the outbox table of this database: `DSN` postgres://... or sqlite:PATH"},
			&cli.StringFlag{Name: "outbox-table", Value: outbox.DefaultTable, Usage: "the outbox `TABLE` of --outbox-dsn"},
			&cli.StringSliceFlag{Name: "offset-name", Usage: "also show the lag of offset `NAME` (a replay's, see warren replay --from stream); repeat for several"},
			streamPortFlag(),
		),
		Action: runStatus,
	}
}

// consumerStatus is one consumer's row, and its shape in --format json.
type consumerStatus struct {
	Consumer  string       `json:"consumer"`
	Work      int          `json:"work"`      // ready in the work queue
	Consumers int          `json:"consumers"` // attached to the work queue
	Retrying  int          `json:"retrying"`  // waiting in delay queues
	Tiers     []tierStatus `json:"tiers"`     // the delay queues, in ladder order
	Poison    int          `json:"poison"`    // in the poison queue
	Missing   []string     `json:"missing"`   // queues that do not exist; the figures are incomplete
	// Reads are the facts with several versions that the consumer
	// receives, with the versions it reads; absent when there are none.
	Reads []liveversions.Reads `json:"reads,omitempty"`
	Batch *batchStatus         `json:"batch,omitempty"` // a batch consumer's batch; absent for the others
}

// batchStatus is a batch consumer's batch: its handler takes up to Size
// facts, each batch closing Wait after its first fact at the latest.
type batchStatus struct {
	Size int    `json:"size"`
	Wait string `json:"wait"`
}

// batchOf returns c's batch for status, nil when c takes one fact at a time.
func batchOf(c *topology.Consumer) *batchStatus {
	if !c.Batched() {
		return nil
	}
	return &batchStatus{Size: c.Batch.Size, Wait: c.Batch.Wait.String()}
}

// versionReads lists the facts with several versions that consumer mc
// receives, as the schema directory builds it.
func versionReads(mc *model.Consumer) []liveversions.Reads {
	var out []liveversions.Reads
	for _, f := range mc.Facts {
		latest := f.Latest()
		if len(latest.Older) == 0 {
			continue
		}
		queues := []string{mc.Topology.Queue}
		if mc.Topology.Ordered() {
			queues = mc.Topology.Shards
		}
		fr := liveversions.Reads{Consumer: mc.Name, Queues: queues, Fact: f.RoutingKey, Published: latest.Publish}
		for _, v := range f.Versions() {
			fr.Schema = append(fr.Schema, v.Version)
		}
		if fr.Published == nil {
			fr.Published = []int{latest.Version}
		}
		out = append(out, fr)
	}
	return out
}

// readsVersions reports whether any consumer reads a fact in several
// versions: only then does status ask the management API.
func readsVersions(rows []consumerStatus) bool {
	for _, r := range rows {
		if len(r.Reads) > 0 {
			return true
		}
	}
	return false
}

// liveReads fills in, from the management API, what the processes attached
// to each consumer's queues announce they read; without mgmt, or when it
// does not answer, the rows say the broker was not asked.
func liveReads(ctx context.Context, mgmt *console.Management, rows []consumerStatus) error {
	var attached []liveversions.Attached
	if mgmt != nil {
		consumers, err := mgmt.Consumers(ctx)
		if err != nil {
			// The rows still say what the schema's build reads, as
			// without the management API.
			for i := range rows {
				rows[i].Reads = liveversions.Live(rows[i].Reads, nil, false)
			}
			return err
		}
		attached = console.Announcements(consumers)
	}
	for i := range rows {
		rows[i].Reads = liveversions.Live(rows[i].Reads, attached, mgmt != nil)
	}
	return nil
}

type tierStatus struct {
	Queue    string `json:"queue"`
	Delay    string `json:"delay"`
	Messages int    `json:"messages"`
}

type statusJSON struct {
	Broker    string           `json:"broker"` // redacted
	Consumers []consumerStatus `json:"consumers"`
	Streams   []streamLag      `json:"streams,omitempty"` // only with stream consumers
	Delayed   *delayedStatus   `json:"delayed,omitempty"` // only with delayed facts
	Outbox    *outboxStatus    `json:"outbox,omitempty"`  // only with --outbox-dsn
	// LiveError is why the management API could not tell what live
	// consumers read; absent when it was read or not needed.
	LiveError string `json:"live_error,omitempty"`
	// Unstored lists the --offset-name names with nothing stored under
	// them on any stream: they have no row in Streams.
	Unstored []string `json:"offset_names_not_stored,omitempty"`
}

// outboxStatus is the outbox table's figures in --format json.
type outboxStatus struct {
	Table         string     `json:"table"`
	Pending       int64      `json:"pending"` // due and not yet published
	Retrying      int64      `json:"retrying"`
	Failed        int64      `json:"failed"`
	OldestPending *time.Time `json:"oldest_pending,omitempty"` // when the longest-waiting pending row became due
	Scheduled     int64      `json:"scheduled"`                // written for later, not due yet
	NextDue       *time.Time `json:"next_due,omitempty"`
	// Error is why the table could not be read; the figures are then 0
	// and not to be believed.
	Error string `json:"error,omitempty"`
}

// readOutbox reads the outbox table of --outbox-dsn; nil without it.
func readOutbox(c *cli.Context) (*outboxStatus, error) {
	dsn := c.String("outbox-dsn")
	if dsn == "" {
		return nil, nil
	}
	ob, db, closeDB, err := openOutboxAt(c, dsn, c.String("outbox-table"), "--outbox-dsn", "--outbox-table")
	if err != nil {
		return nil, err
	}
	defer closeDB()
	st, err := ob.Status(c.Context, db)
	if err != nil {
		return nil, secret.Error(err)
	}
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	return &outboxStatus{Table: ob.Table(), Pending: st.Pending, Retrying: st.Retrying, Failed: st.Failed,
		OldestPending: at(st.OldestPending), Scheduled: st.Scheduled, NextDue: at(st.NextDue)}, nil
}

// delayedStatus is what the delay levels hold.
type delayedStatus = delaystat.Levels

func runStatus(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return usageError(c, "--format %q: expected text or json", format)
	}
	failOn, err := parseFailOn(c)
	if err != nil {
		return err
	}
	maxLag, err := parseMaxLag(c, failOn)
	if err != nil {
		return err
	}
	urls := brokerURLs(c)
	ports, err := streamPortsOf(c, urls)
	if err != nil {
		return err
	}
	// A malformed --management-url is a wrong command line, told before
	// the broker is dialled.
	mgmt, err := managementOf(c, urls[0])
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(stderr, "status", dir, err)
	}
	conn, err := dialStreamBroker(c, urls, ports)
	if err != nil {
		return reportError(stderr, "status", "", err)
	}
	defer conn.Close()
	shown := conn.URL()
	for _, name := range c.StringSlice("offset-name") {
		if err := runtime.CheckOffsetName(name); err != nil {
			return usageError(c, "--offset-name: %v", err)
		}
	}
	// A lag that cannot be read is shown in its row and on stderr, and
	// fails the command once everything else is printed.
	streams, unstored, lagErrs := readStreamLags(c.Context, conn, p.Model.Topology, c.StringSlice("offset-name"))

	rows, err := readStatus(c.Context, conn, p.Model)
	if err != nil {
		return reportError(stderr, "status", "", err)
	}
	// The management API and the outbox table are read like the lags: one
	// that cannot be read is marked in the table and named on stderr, and
	// the rest is printed; the command then exits 1.
	var readErrs []string
	liveErr := ""
	if mgmt != nil && !readsVersions(rows) {
		// The management API only tells what the versions table's LIVE
		// shows: with no fact in several versions there is nothing to ask.
		mgmt = nil
	}
	if err := liveReads(c.Context, mgmt, rows); err != nil {
		liveErr = secret.Text(err.Error())
		readErrs = append(readErrs, "LIVE not read: "+liveErr)
	}
	delayed, err := delaystat.Read(c.Context, conn, p.Model.Topology)
	if err != nil {
		return reportError(stderr, "status", "", err)
	}
	ob, err := readOutbox(c)
	if err != nil {
		if ec := cli.ExitCoder(nil); errors.As(err, &ec) {
			return err // a usage error, already worded
		}
		ob = &outboxStatus{Table: c.String("outbox-table"), Error: secret.Text(err.Error())}
		readErrs = append(readErrs, fmt.Sprintf("outbox table %s not read: %s", ob.Table, ob.Error))
	}
	if format == "json" {
		out, err := encodeJSON(statusJSON{Broker: shown, Consumers: rows, Streams: streams, Unstored: unstored, Delayed: delayed, Outbox: ob, LiveError: liveErr})
		if err != nil {
			return err
		}
		if _, err := c.App.Writer.Write(out); err != nil {
			return err
		}
	} else if err := writeStatusTable(c.App.Writer, rows, streams, delayed, ob, liveErr != ""); err != nil {
		return err
	}

	var version string
	if ep, err := conn.StreamEndpoint(); err == nil {
		version = ep.BrokerVersion
	}
	failed := alerts(stderr, rows, missingStreams(streams), delayed, failOn, dir, declareHint(p.Model.Topology, version, dir), shown)
	if failOn[failLag] && lagAlerts(stderr, streams, maxLag) {
		failed = true
	}
	for _, n := range unstored {
		// Not a failure: a replay from a stream's first fact stores
		// nothing but its mark until its reader settles a fact.
		fmt.Fprintf(stderr, "warren status: offset name %q: nothing stored under it on any stream (no warren replay positioned it, or its reader has settled nothing yet): no row\n", n)
	}
	for _, e := range append(lagErrs, readErrs...) {
		fmt.Fprintf(stderr, "warren status: %s\n", e)
	}
	if failed || len(lagErrs) > 0 || len(readErrs) > 0 {
		return errReported
	}
	return nil
}

// readStatus inspects every queue of every consumer.
func readStatus(ctx context.Context, conn *runtime.Conn, m *model.Model) ([]consumerStatus, error) {
	rows := []consumerStatus{}
	for _, mc := range m.Consumers {
		tc := mc.Topology
		row := consumerStatus{Consumer: tc.Name, Tiers: []tierStatus{}, Missing: []string{}, Reads: versionReads(mc), Batch: batchOf(tc)}
		// inspect records a missing queue and reports whether it exists.
		inspect := func(name string) (amqp.Queue, bool, error) {
			q, err := amqpmsg.InspectQueue(ctx, conn, name)
			if errors.Is(err, amqpmsg.ErrNoQueue) {
				row.Missing = append(row.Missing, name)
				return q, false, nil
			}
			return q, err == nil, err
		}
		// An ordered consumer's work queues are its shards: summed.
		work := []string{tc.Queue}
		if tc.Ordered() {
			work = tc.Shards
		}
		for _, name := range work {
			if q, ok, err := inspect(name); err != nil {
				return nil, err
			} else if ok {
				row.Work, row.Consumers = row.Work+q.Messages, row.Consumers+q.Consumers
			}
		}
		for _, tier := range tc.DistinctTiers() {
			q, ok, err := inspect(tier.Queue)
			if err != nil {
				return nil, err
			}
			if ok {
				row.Tiers = append(row.Tiers, tierStatus{Queue: tier.Queue, Delay: topology.FormatDelay(tier.Delay), Messages: q.Messages})
				row.Retrying += q.Messages
			}
		}
		if q, ok, err := inspect(tc.PoisonQueue); err != nil {
			return nil, err
		} else if ok {
			row.Poison = q.Messages
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// writeStatusTable writes the tables; liveFailed says the management API
// was asked and did not answer, so LIVE is marked not read.
func writeStatusTable(w io.Writer, rows []consumerStatus, streams []streamLag, delayed *delayedStatus, ob *outboxStatus, liveFailed bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tWORK\tCONSUMERS\tRETRYING\tPOISON")
	for _, r := range rows {
		name := r.Consumer
		if r.Batch != nil {
			name += fmt.Sprintf(" (batches of %d, %s)", r.Batch.Size, r.Batch.Wait)
		}
		if len(r.Missing) > 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t(not declared)\n", name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\n", name, r.Work, r.Consumers, retrying(r), r.Poison)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeStreamTable(w, streams); err != nil {
		return err
	}
	if err := writeVersionsTable(w, rows, liveFailed); err != nil {
		return err
	}
	if delayed != nil {
		if err := writeDelayedTable(w, delayed); err != nil {
			return err
		}
	}
	if ob == nil {
		return nil
	}
	fmt.Fprintln(w)
	now := time.Now()
	oldest, next := "-", "-"
	if ob.OldestPending != nil {
		oldest = now.Sub(*ob.OldestPending).Round(time.Second).String()
	}
	if ob.NextDue != nil {
		next = dueIn(*ob.NextDue, now)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTBOX\tPENDING\tRETRYING\tOLDEST\tFAILED\tSCHEDULED\tNEXT DUE")
	if ob.Error != "" {
		// Why is on stderr and in --format json, as for a lag.
		fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t(not read)\n", ob.Table)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\n", ob.Table, ob.Pending, ob.Retrying, oldest, ob.Failed, ob.Scheduled, next)
	return tw.Flush()
}

// writeVersionsTable writes, for the facts with several versions, which
// versions each consumer reads, by the schema and by its live processes,
// beside those the publisher publishes; then which published versions no
// consumer needs any more.
func writeVersionsTable(w io.Writer, rows []consumerStatus, liveFailed bool) error {
	var all []liveversions.Reads
	for _, r := range rows {
		all = append(all, r.Reads...)
	}
	if len(all) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tFACT\tREADS\tLIVE\tPUBLISHED")
	for _, fr := range all {
		live := liveversions.Describe(fr)
		if liveFailed {
			live = "- (not read)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", fr.Consumer, fr.Fact, liveversions.Range(fr.Schema), live, liveversions.Join(fr.Published))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if liveFailed {
		// The live processes may still read a version the schema's build
		// does not: advice without them could retire one still in use.
		fmt.Fprintln(w, "LIVE not read (the management API did not answer; see stderr): no version is called retirable without it")
		return nil
	}
	retire := liveversions.Retirable(all)
	var facts []string
	for _, fr := range all {
		if !slices.Contains(facts, fr.Fact) {
			facts = append(facts, fr.Fact)
		}
	}
	asked := all[0].Asked
	for _, f := range facts {
		switch vs := retire[f]; {
		case len(vs) > 0 && !asked:
			// The schema's build alone: the processes of older builds
			// still running (the deployed consumers, right after a new
			// version is added) may read nothing else.
			fmt.Fprintf(w, "%s: the consumers of this schema directory no longer need version %s; before retiring it from \"versions\", check that no process of an older build reads it (LIVE, with --management-url)\n", f, liveversions.Join(vs))
		case len(vs) > 0:
			fmt.Fprintf(w, "%s: no consumer needs version %s any more: it can be retired from \"versions\"\n", f, liveversions.Join(vs))
		default:
			fmt.Fprintf(w, "%s: every published version is still needed\n", f)
		}
	}
	if !asked {
		fmt.Fprintln(w, "LIVE needs --management-url: only the management API lists the versions live consumers announce")
	}
	return nil
}

// writeDelayedTable writes what the delay levels hold.
func writeDelayedTable(w io.Writer, delayed *delayedStatus) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DELAYED\tNEXT DUE WITHIN\tUNROUTABLE")
	if len(delayed.Missing) > 0 {
		fmt.Fprintln(tw, "-\t-\t-\t(not declared)")
		return tw.Flush()
	}
	var parts []string
	for _, l := range delayed.Levels {
		parts = append(parts, l.Hold+":"+strconv.Itoa(l.Messages))
	}
	waiting := strconv.Itoa(delayed.Waiting)
	if len(parts) > 0 {
		waiting += " (" + strings.Join(parts, " ") + ")"
	}
	within := delayed.NextDueWithin
	if within == "" {
		within = "-"
	}
	fmt.Fprintf(tw, "%s\t%s\t%d\n", waiting, within, delayed.Unroutable)
	return tw.Flush()
}

// retrying renders the delay-queue figure: the total, then the tiers that
// hold something, e.g. "3 (1s:2 4s:1)".
func retrying(r consumerStatus) string {
	var parts []string
	for _, t := range r.Tiers {
		if t.Messages > 0 {
			parts = append(parts, t.Delay+":"+strconv.Itoa(t.Messages))
		}
	}
	if len(parts) == 0 {
		return strconv.Itoa(r.Retrying)
	}
	return fmt.Sprintf("%d (%s)", r.Retrying, strings.Join(parts, " "))
}
