package runtime

// Fact describes one kind of fact to the runtime. Generated code declares
// one Fact value per schema; publishers and consumers use it to route,
// version and validate payloads without reflection on the Go type.
type Fact struct {
	RoutingKey string                     // the routing key facts of this kind are published with
	Version    int                        // the schema's x-version, sent as header x-fact-version
	Validate   func(payload []byte) error // checks a JSON payload against the fact's embedded schema
}
