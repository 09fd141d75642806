package main

import (
	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
)

func init() { register(topologyCommand) }

func topologyCommand() *cli.Command {
	return &cli.Command{
		Name:      "topology",
		Usage:     "export the broker topology as RabbitMQ definitions JSON",
		UsageText: "warren topology [--out FILE] [--vhost NAME] SCHEMA_DIR",
		Description: `Writes every exchange, queue (with its x-arguments) and binding that the
schema directory declares, in the definitions format that
"rabbitmqctl import_definitions" and the management UI's "Import definitions"
read. Nothing else (users, permissions, policies) is included. The output is
the same for the same directory, so it can be committed and diffed.

Examples:
   warren topology ./events > definitions.json
   warren topology --out definitions.json ./events && rabbitmqctl import_definitions definitions.json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` instead of standard output"},
			&cli.StringFlag{Name: "vhost", Value: "/", Usage: "the virtual host `NAME` every definition is for"},
		},
		Action: runTopology,
	}
}

func runTopology(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	m, err := generator.Model(c.Context, dir)
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", dir, err)
	}
	// Maps are written with sorted keys, so the output is deterministic.
	data, err := encodeJSON(m.Topology.Definitions(c.String("vhost")))
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	if err := writeOutput(c, c.String("out"), data); err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	return nil
}
