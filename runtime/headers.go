package runtime

// Message headers of the wire contract. They are exported so that tools
// (replay, status) and consumers written with other AMQP clients read the
// same names.
const (
	// HeaderFactVersion carries the fact's schema version (x-version) on
	// every published fact, as an integer.
	HeaderFactVersion = "x-fact-version"
	// HeaderAttempts counts the handler attempts that failed so far, as an
	// integer. A retry copy carries it so the count survives the delay queue
	// and broker restarts; a poison copy carries the final count; a
	// deferred copy ([Defer]) carries it unchanged. Absent means no attempt
	// has failed yet.
	HeaderAttempts = "x-attempts"
	// HeaderOriginalRoutingKey and HeaderOriginalExchange record where a fact
	// was first published. A retry returns through the default exchange with
	// the consumer's name as routing key, so the delivery itself no longer
	// says.
	HeaderOriginalRoutingKey = "x-original-routing-key"
	HeaderOriginalExchange   = "x-original-exchange"
	// HeaderFailure (at most 500 bytes of the last error, cut on a UTF-8
	// boundary), HeaderFailedAt (RFC 3339, UTC) and HeaderConsumer (the
	// consumer that gave up) are set on poison copies only.
	HeaderFailure  = "x-failure"
	HeaderFailedAt = "x-failed-at"
	HeaderConsumer = "x-consumer"
	// HeaderDiscarded marks a tombstone: what a discard from the poison
	// queue of an ordered consumer with onPoison park sends the consumer in
	// place of the discarded fact, its value the reason. The consumer lifts
	// the park of the fact's ordering key if the key waits behind that
	// fact, and acks the tombstone without calling a handler.
	HeaderDiscarded = "x-discarded"
)

// maxFailureLen bounds x-failure: a poison queue is read by people, and a
// huge error (a response body, a stack) would bloat every message in it.
const maxFailureLen = 500
