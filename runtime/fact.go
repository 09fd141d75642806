package runtime

import "time"

// Fact describes one kind of fact to the runtime. Generated code declares
// one Fact value per schema; publishers and consumers use it to route,
// version and validate payloads without reflection on the Go type.
type Fact struct {
	RoutingKey string                     // the routing key facts of this kind are published with
	Version    int                        // the schema's x-version, sent as header x-fact-version
	Validate   func(payload []byte) error // checks a JSON payload against the fact's embedded schema
	// Priority is the AMQP priority facts of this kind are published with
	// (0, the default, is the lowest). It matters only to consumers whose
	// work queue has a maxPriority; [Fact.WithPriority] overrides it for
	// one publish.
	Priority uint8
	// OrderingKey is a JSON pointer into the payload ("/order_id") whose
	// value the publisher sends as header [HeaderOrderingKey], with the
	// fact's number in its key's sequence ([HeaderSequence]); "" for facts
	// without an ordering key. Ordered consumers hash on it and handle the
	// facts of one key in publish order.
	OrderingKey string
	// KeyOf reads the ordering key from a payload that is a pointer to
	// the fact's generated type (as generated publishers pass it), spelled as [HeaderOrderingKey] carries it, and reports false
	// for any other payload (raw JSON), whose key is read from its bytes.
	// Generated code sets it, so the publisher does not parse the JSON it
	// just wrote to find the key.
	KeyOf func(payload any) (key string, ok bool)

	sequenced *Sequenced    // set by WithSequence for one publish
	dueAt     *time.Time    // set by WithDueAt for one publish
	versions  string        // HeaderFactVersions, set by PublishVersions for one publish
	copies    []versionCopy // the newer versions' envelopes, set by PublishVersions
}

// WithPriority returns f with priority p, for one publish call that must
// overtake (or yield to) the usual facts of its kind:
//
//	pub.Publish(ctx, OrderPlaced.WithPriority(9), order)
func (f Fact) WithPriority(p uint8) Fact {
	f.Priority = p
	return f
}
