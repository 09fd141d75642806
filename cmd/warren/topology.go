package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/runtime/topology"
)

func init() { register(topologyCommand) }

func topologyCommand() *cli.Command {
	return &cli.Command{
		Name:      "topology",
		Usage:     "export the broker topology as RabbitMQ definitions JSON",
		UsageText: "warren topology [--out FILE] [--vhost NAME] [--rabbitmq 3|4] SCHEMA_DIR",
		Description: `Writes every exchange, queue (with its x-arguments) and binding that the
schema directory declares, in the definitions format that
"rabbitmqctl import_definitions" and the management UI's "Import definitions"
read. Nothing else (users, permissions, policies) is included. The output is
the same for the same directory, so it can be committed and diffed.

Quorum queues need different arguments on RabbitMQ 3 and 4 (on 4, poison
and delay queues get x-delivery-limit -1, "unlimited", instead of 4's default
of 20); --rabbitmq chooses, and "rabbitmq_version" in the output says which
release line the definitions are for. The runtime reads the version from the
broker it connects to and declares the same arguments.

Examples:
   warren topology ./events > definitions.json
   warren topology --out definitions.json ./events && rabbitmqctl import_definitions "$PWD/definitions.json"

rabbitmqctl reads the file in its own working directory, which Debian's and
Ubuntu's wrappers set to /var/lib/rabbitmq: give it an absolute path.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` instead of standard output"},
			&cli.StringFlag{Name: "vhost", Value: "/", Usage: "the virtual host `NAME` every definition is for"},
			&cli.StringFlag{Name: "rabbitmq", Value: "4", Usage: "the RabbitMQ release line, `3 or 4`, the definitions are for"},
		},
		Action: runTopology,
	}
}

func runTopology(c *cli.Context) error {
	dir, err := oneArg(c, "SCHEMA_DIR")
	if err != nil {
		return err
	}
	broker, err := releaseLine(c.String("rabbitmq"))
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", dir, err)
	}
	// Maps are written with sorted keys, so the output is deterministic.
	data, err := encodeJSON(p.Model.Topology.Definitions(c.String("vhost"), broker))
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	if err := writeOutput(c, c.String("out"), data); err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	return nil
}

// releaseLine reads the --rabbitmq flag.
func releaseLine(flag string) (topology.Broker, error) {
	switch flag {
	case "3":
		return topology.RabbitMQ3, nil
	case "4":
		return topology.RabbitMQ4, nil
	}
	return 0, fmt.Errorf("--rabbitmq %q: expected 3 or 4", flag)
}
