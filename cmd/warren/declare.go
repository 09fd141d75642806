package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

func init() { register(declareCommand) }

func declareCommand() *cli.Command {
	return &cli.Command{
		Name:      "declare",
		Usage:     "declare the topology of a schema directory on the broker",
		UsageText: "warren declare [--url URL ...] [--consumer NAME ...] [--prune] SCHEMA_DIR",
		Description: `Declares every exchange, queue and binding of SCHEMA_DIR, exactly as the
runtime does when it connects. Declaring is idempotent: what exists with the
same arguments is left alone. A queue that exists with other arguments is an
error naming the queue and the argument; RabbitMQ never changes the arguments
of an existing queue.

Declare keeps a record of what it declared on the broker, in the queue
warren.declared.<events exchange>, and reports the warren-owned queues and
bindings SCHEMA_DIR no longer has: the delay queues of an old retry ladder, the
queues of a removed consumer, a binding removed from the manifest (a
consumer's: what it routes is poisoned as not handled; a stream's: it still
appends those facts to the stream). With --prune it deletes the orphaned queues
that are empty and unused, each after the orphaned queues that feed it,
unbinds a removed consumer's work queue that still holds facts (nobody reads
it), removes the orphaned bindings, and lists the queues it kept; they are
reported again until they are gone. A stream is never
deleted (it holds facts that reading does not remove): --prune unbinds it and
prints the command that deletes it deliberately.

Examples:
   warren declare ./events
   warren declare --url amqps://svc:$PASSWORD@rabbit-1:5671/ --url amqps://svc:$PASSWORD@rabbit-2:5671/ ./events
   warren declare --consumer search-indexer ./events   # only its queues (and the exchanges)
   warren declare --prune ./events   # and delete what an old version left behind, once empty
   warren declare --stream-port 5591 ./events   # a broker whose stream protocol is not at 5552`,
		Flags: append(brokerFlags(),
			&cli.StringSliceFlag{Name: "consumer", Usage: "declare only the queues of consumer `NAME` (repeatable); the exchanges always"},
			&cli.BoolFlag{Name: "prune", Usage: "delete orphaned warren-owned queues that are empty and unused (never a stream), and remove orphaned bindings"},
			// Declaring stream consumers or direct streams checks the
			// stream protocol first, at this port.
			streamPortFlag(),
		),
		Action: runDeclare,
	}
}

func runDeclare(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(stderr, "declare", dir, err)
	}
	m := p.Model
	top := m.Topology
	var scope []string // nil: every consumer
	if names := c.StringSlice("consumer"); len(names) > 0 {
		scope = names
		for _, n := range names {
			if _, err := flagConsumer(c, m, n); err != nil {
				return err
			}
		}
		top = top.Part(names...)
	}

	urls := brokerURLs(c)
	prune := c.Bool("prune")
	if err := declareOn(c.Context, c, urls, top, func(conn *runtime.Conn) error {
		fmt.Fprintf(c.App.Writer, "declared %s, %s and %s on %s\n",
			count(len(top.Exchanges), "exchange"), count(len(top.Queues), "queue"), count(len(top.Bindings), "binding"), shownURLs(urls))
		return reconcile(c.Context, conn, c.App.Writer, stderr, top, scope, prune)
	}); err != nil {
		if mismatches := runtime.Mismatches(err); len(mismatches) > 0 {
			// Each with what to do about it: a stream's retention is
			// changed with a policy, a queue's type never changes.
			for _, m := range mismatches {
				fmt.Fprintf(stderr, "warren declare: %s %q exists on the broker with a different %s: %s\n", m.Kind, m.Name, m.Argument, m.Broker)
				if m.Advice != "" {
					fmt.Fprintf(stderr, "%s.\n", upperFirst(m.Advice))
				}
			}
			fmt.Fprintln(stderr, "Nothing was declared.")
			return errReported
		}
		return reportError(stderr, "declare", "", err)
	}
	return nil
}

// upperFirst returns s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// declareOn connects through the runtime, so that the declaration is the
// one every service makes on connect, declares t, then runs after on the
// same connection.
func declareOn(ctx context.Context, c *cli.Context, urls []string, t topology.Topology, after func(*runtime.Conn) error) error {
	ports, err := streamPortsOf(c, urls)
	if err != nil {
		return err
	}
	conn, err := dialStreamBroker(c, urls, ports)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Declare(ctx, t); err != nil {
		return err
	}
	return after(conn)
}
