package main

import (
	"context"
	"errors"
	"fmt"

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
		UsageText: "warren declare [--url URL ...] [--consumer NAME ...] SCHEMA_DIR",
		Description: `Declares every exchange, queue and binding of SCHEMA_DIR, exactly as the
runtime does when it connects. Declaring is idempotent: what exists with the
same arguments is left alone. A queue that exists with other arguments is an
error naming the queue and the argument; RabbitMQ never changes the arguments
of an existing queue.

Examples:
   warren declare ./events
   warren declare --url amqps://svc:$PASSWORD@rabbit-1:5671/ --url amqps://svc:$PASSWORD@rabbit-2:5671/ ./events
   warren declare --consumer search-indexer ./events   # only its queues (and the exchanges)`,
		Flags: append(brokerFlags(),
			&cli.StringSliceFlag{Name: "consumer", Usage: "declare only the queues of consumer `NAME` (repeatable); the exchanges always"},
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
	m, err := generator.Model(c.Context, dir)
	if err != nil {
		return reportError(stderr, "declare", dir, err)
	}
	top := m.Topology
	if names := c.StringSlice("consumer"); len(names) > 0 {
		for _, n := range names {
			if _, err := consumerOf(m, n); err != nil {
				return reportError(stderr, "declare", "", err)
			}
		}
		top = top.Part(names...)
	}

	urls := brokerURLs(c)
	if err := declareOn(c.Context, c, urls, top); err != nil {
		var mismatch *runtime.MismatchError
		if errors.As(err, &mismatch) {
			fmt.Fprintf(stderr, "warren declare: %s %q exists on the broker with a different %s: %s\n", mismatch.Kind, mismatch.Name, mismatch.Argument, mismatch.Broker)
			fmt.Fprintf(stderr, "RabbitMQ never changes the arguments of an existing %s: drain and delete it (it is declared again the next time), or change the schema back.\n", mismatch.Kind)
			return errReported
		}
		return reportError(stderr, "declare", "", err)
	}
	fmt.Fprintf(c.App.Writer, "declared %s, %s and %s on %s\n",
		count(len(top.Exchanges), "exchange"), count(len(top.Queues), "queue"), count(len(top.Bindings), "binding"), shownURLs(urls))
	return nil
}

// declareOn connects through the runtime, so that the declaration is the
// one every service makes on connect, and declares t.
func declareOn(ctx context.Context, c *cli.Context, urls []string, t topology.Topology) error {
	conn, err := dialBroker(c, urls)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Declare(ctx, t)
}
