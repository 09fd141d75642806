package topology

// Definitions is a topology in RabbitMQ's definitions format, the JSON that
// "rabbitmqctl import_definitions" and the management UI's "Import
// definitions" read. It holds only what a topology fills (no users,
// permissions or policies); field names and JSON keys are the broker's.
type Definitions struct {
	Exchanges []DefinedExchange `json:"exchanges"`
	Queues    []DefinedQueue    `json:"queues"`
	Bindings  []DefinedBinding  `json:"bindings"`
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
// the arguments [Queue.Arguments] gives it, which are what the runtime
// declares. Empty lists and argument maps are empty, never nil, so that the
// JSON has [] and {} where the broker expects them.
func (t Topology) Definitions(vhost string) Definitions {
	defs := Definitions{Exchanges: []DefinedExchange{}, Queues: []DefinedQueue{}, Bindings: []DefinedBinding{}}
	for _, e := range t.Exchanges {
		defs.Exchanges = append(defs.Exchanges, DefinedExchange{Name: e.Name, Vhost: vhost, Type: e.Kind, Durable: e.Durable, Arguments: map[string]any{}})
	}
	for _, q := range t.Queues {
		defs.Queues = append(defs.Queues, DefinedQueue{Name: q.Name, Vhost: vhost, Durable: true, Arguments: q.Arguments()})
	}
	for _, b := range t.Bindings {
		defs.Bindings = append(defs.Bindings, DefinedBinding{
			Source: b.Exchange, Vhost: vhost, Destination: b.Queue, DestinationType: "queue",
			RoutingKey: b.Key, Arguments: map[string]any{},
		})
	}
	return defs
}
