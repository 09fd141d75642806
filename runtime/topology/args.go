package topology

// Arguments returns the queue's x-arguments, typed as the broker expects
// them (strings and int64), ready to pass to a queue declaration.
//
// x-overflow: reject-publish accompanies at-least-once dead-lettering
// because RabbitMQ ignores the strategy without it: with drop-head overflow
// a full queue would discard messages that are still waiting to be
// dead-lettered.
func (q Queue) Arguments() map[string]any {
	args := map[string]any{"x-queue-type": string(q.Type)}
	if q.MessageTTL > 0 {
		args["x-message-ttl"] = q.MessageTTL.Milliseconds()
	}
	if dl := q.DeadLetter; dl != nil {
		args["x-dead-letter-exchange"] = dl.Exchange
		args["x-dead-letter-routing-key"] = dl.RoutingKey
		if dl.AtLeastOnce {
			args["x-dead-letter-strategy"] = "at-least-once"
			args["x-overflow"] = "reject-publish"
		}
	}
	if q.DeliveryLimit > 0 {
		args["x-delivery-limit"] = int64(q.DeliveryLimit)
	}
	return args
}
