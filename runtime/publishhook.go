package runtime

import "context"

// Outgoing is a fact about to be published, as [PublishMiddleware] sees
// it. Exchange, RoutingKey and MessageID are for reading: the fact is
// published with the ones its Publish call gave.
type Outgoing struct {
	Exchange   string
	RoutingKey string
	MessageID  string
	// Headers go out as the message's AMQP headers. Middleware may add
	// entries (strings, integers, booleans, times, nested maps): consumers
	// see them in [Delivery.Headers], and retry, poison and replay copies
	// keep them. Entries the runtime sets (x-fact-version) must stay.
	Headers map[string]any
}

// PublishFunc publishes m and waits for the broker's confirm.
type PublishFunc func(ctx context.Context, m *Outgoing) error

// PublishMiddleware wraps every publish of a [Publisher], for tracing or
// logging: it can add headers before calling next and sees the outcome
// (the confirm, or the error) after. The first listed runs outermost. next
// runs once per Publish call, however often the runtime republishes after
// a channel loss.
type PublishMiddleware func(next PublishFunc) PublishFunc

// WithPublishMiddleware adds middleware around every publish.
func WithPublishMiddleware(m ...PublishMiddleware) PublisherOption {
	return func(o *publisherOptions) { o.middleware = append(o.middleware, m...) }
}
