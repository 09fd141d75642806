package runtime

import (
	"github.com/warrenbus/warren/internal/amqpmsg"
)

// checkVersion compares the fact's x-fact-version header with the version
// of the schema the consumer was generated from. A newer one means its
// producer deployed a schema change first: the consumer counts it
// (NewerVersion) and logs it once per routing key and version, then
// handles the fact exactly as any other. It validates the payload against
// its own schema, so what the change added is accepted or poisoned by that
// schema alone; `warren diff` judges changes on the same assumption. There
// is no tolerant rule (ignoring unknown properties, say): a consumer that
// accepted what its schema rejects would hand its handler data the
// generated type does not describe.
func (c *Consumer) checkVersion(in inbound, f Fact) {
	v := amqpmsg.HeaderInt(in.d.Headers, HeaderFactVersion)
	if v <= f.Version {
		return
	}
	c.count(NewerVersion, in.routingKey)
	if c.firstNewer(versionKey{in.routingKey, v}) {
		c.log.Warn("a fact was written under a newer schema version than this consumer was generated from; it is validated against the consumer's own schema",
			"routing_key", in.routingKey, "fact_version", v, "consumer_version", f.Version, "message_id", in.d.MessageId)
	}
}

// firstNewer reports whether k is seen for the first time, and remembers it.
func (c *Consumer) firstNewer(k versionKey) bool {
	c.newerMu.Lock()
	defer c.newerMu.Unlock()
	if c.newerSeen[k] {
		return false
	}
	if c.newerSeen == nil {
		c.newerSeen = map[versionKey]bool{}
	}
	c.newerSeen[k] = true
	return true
}

// versionKey is a routing key and a version, logged once per consumer.
type versionKey struct {
	routingKey string
	version    int
}
