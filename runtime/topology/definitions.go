package topology

import "fmt"

// Definitions is a topology in RabbitMQ's definitions format, the JSON that
// "rabbitmqctl import_definitions" and the management UI's "Import
// definitions" read. It holds only what a topology fills (no users,
// permissions or policies); field names and JSON keys are the broker's.
// The broker does not read rabbitmq_version on import: it tells people
// which release line ("3.x" or "4.x") the queue arguments are for.
type Definitions struct {
	RabbitMQVersion string            `json:"rabbitmq_version"`
	Exchanges       []DefinedExchange `json:"exchanges"`
	Queues          []DefinedQueue    `json:"queues"`
	Bindings        []DefinedBinding  `json:"bindings"`
}

// DefinedExchange is one exchange of [Definitions].
type DefinedExchange struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
}

// DefinedQueue is one queue of [Definitions].
type DefinedQueue struct {
	Name       string         `json:"name"`
	Vhost      string         `json:"vhost"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Arguments  map[string]any `json:"arguments"`
}

// DefinedBinding is one binding of [Definitions].
type DefinedBinding struct {
	Source          string         `json:"source"`
	Vhost           string         `json:"vhost"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"`
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
}

// Definitions returns t as RabbitMQ definitions for the virtual host vhost,
// in declaration order (a queue before what is bound to it), each queue with
// the arguments [Queue.ArgumentsFor] gives it on release line b, which are
// what the runtime declares on a broker of that line. Empty lists and argument maps are empty, never nil, so that the
// JSON has [] and {} where the broker expects them.
func (t Topology) Definitions(vhost string, b Broker) Definitions {
	defs := Definitions{
		RabbitMQVersion: fmt.Sprintf("%d.x", b),
		Exchanges:       []DefinedExchange{}, Queues: []DefinedQueue{}, Bindings: []DefinedBinding{},
	}
	for _, e := range t.Exchanges {
		args := e.Arguments()
		if args == nil {
			args = map[string]any{}
		}
		defs.Exchanges = append(defs.Exchanges, DefinedExchange{Name: e.Name, Vhost: vhost, Type: e.Kind, Durable: e.Durable, Arguments: args})
	}
	for _, q := range t.Queues {
		defs.Queues = append(defs.Queues, DefinedQueue{Name: q.Name, Vhost: vhost, Durable: true, Arguments: q.ArgumentsFor(b)})
	}
	for _, b := range t.Bindings {
		dest, kind := b.Queue, "queue"
		if b.ToExchange != "" {
			dest, kind = b.ToExchange, "exchange"
		}
		args := b.Arguments()
		if args == nil {
			args = map[string]any{}
		}
		defs.Bindings = append(defs.Bindings, DefinedBinding{
			Source: b.Exchange, Vhost: vhost, Destination: dest, DestinationType: kind,
			RoutingKey: b.Key, Arguments: args,
		})
	}
	return defs
}
