package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/asyncapi"
)

func init() { register(asyncapiCommand) }

func asyncapiCommand() *cli.Command {
	return &cli.Command{
		Name:      "asyncapi",
		Usage:     "write an AsyncAPI 3.0 document of the facts, consumers and exchange",
		UsageText: "warren asyncapi [--out FILE] [--check] [--info-version VERSION] SCHEMA_DIR",
		Description: `Describes SCHEMA_DIR for the AsyncAPI ecosystem (catalogues, visualisers,
code generators for other languages) as one AsyncAPI 3.0.0 document in JSON:
a channel per fact, addressed by its routing key, with the AMQP 0-9-1 binding
of the events exchange (topic, durable); a message per fact, its payload the
JSON envelope with the fact's schema inside (schema files are carried under
components.schemas, $refs pointing into the document); a send operation per
fact and a receive operation per consumer and fact it handles, which names the
consumer's work queue in x-warren-queue. A stream gets a channel of its own
(its queue of type stream, or a super stream's exchange and partitions), and
a stream consumer receives on its stream's channel: it reads the stream from
its start, then from the offset the broker keeps for it. The same directory
gives the same bytes, so the document can be committed and kept fresh with
--check.

Examples:
   warren asyncapi ./events > asyncapi.json
   warren asyncapi --out docs/asyncapi.json --info-version 1.4.0 ./events
   warren asyncapi --check --out docs/asyncapi.json ./events   # in CI`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` instead of standard output"},
			checkFlag(),
			&cli.StringFlag{Name: "info-version", Value: "0.0.0", Usage: "info.version of the document: the `VERSION` of the described API"},
		},
		Action: runAsyncAPI,
	}
}

func runAsyncAPI(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(stderr, "asyncapi", dir, err)
	}
	doc, err := p.AsyncAPI(asyncapi.Options{Version: c.String("info-version")})
	if err != nil {
		return reportError(stderr, "asyncapi", dir, err)
	}
	fix := fmt.Sprintf("warren asyncapi --out %s %s", c.String("out"), dir)
	if err := writeOrCheck(c, doc, fix); err != nil {
		if _, reported := err.(cli.ExitCoder); reported {
			return err
		}
		return reportError(stderr, "asyncapi", "", err)
	}
	return nil
}
