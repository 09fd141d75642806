package main

import (
	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/runtime/topology"
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
	m, _, err := loadModel(c.Context, dir)
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", dir, err)
	}
	data, err := definitionsJSON(m.Topology, c.String("vhost"))
	if err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	if err := writeOutput(c, c.String("out"), data); err != nil {
		return reportError(c.App.ErrWriter, "topology", "", err)
	}
	return nil
}

// definitions is the subset of RabbitMQ's definitions format that a
// topology fills. Field names are the broker's.
type definitions struct {
	Exchanges []definedExchange `json:"exchanges"`
	Queues    []definedQueue    `json:"queues"`
	Bindings  []definedBinding  `json:"bindings"`
}

type definedExchange struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
}

type definedQueue struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Arguments  map[string]any `json:"arguments"`
}

type definedBinding struct {
	Source          string         `json:"source"`
	Vhost           string         `json:"vhost"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"`
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
}

// definitionsJSON renders t in topology order (a queue before what is
// bound to it), with the queue arguments runtime.Declare sends; maps are
// written with sorted keys, so the output is deterministic.
func definitionsJSON(t topology.Topology, vhost string) ([]byte, error) {
	defs := definitions{Exchanges: []definedExchange{}, Queues: []definedQueue{}, Bindings: []definedBinding{}}
	for _, e := range t.Exchanges {
		defs.Exchanges = append(defs.Exchanges, definedExchange{Name: e.Name, Vhost: vhost, Type: e.Kind, Durable: e.Durable, Arguments: map[string]any{}})
	}
	for _, q := range t.Queues {
		defs.Queues = append(defs.Queues, definedQueue{Name: q.Name, Vhost: vhost, Durable: true, Arguments: q.Arguments()})
	}
	for _, b := range t.Bindings {
		defs.Bindings = append(defs.Bindings, definedBinding{
			Source: b.Exchange, Vhost: vhost, Destination: b.Queue, DestinationType: "queue",
			RoutingKey: b.Key, Arguments: map[string]any{},
		})
	}
	return encodeJSON(defs)
}
