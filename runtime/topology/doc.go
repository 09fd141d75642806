// Package topology turns a warren spec (exchanges and consumers) into the
// complete broker topology: every exchange, queue, queue argument and
// binding, plus the per-consumer facts the runtime needs (queue names, the
// retry ladder, attempt limits).
//
// The package is pure data and naming: it never talks to a broker. The
// generator renders a [Topology] as a Go literal, and the runtime declares
// it on every connect. Keeping the naming here, in one place, is what lets
// generated code, the runtime and the CLI agree on queue names.
//
// # Names
//
// For a consumer C, with events, retry and dead exchanges E, R and D:
//
//   - C is the work queue. It is bound to E once per binding pattern and
//     dead-letters to D with routing key C. A quorum work queue also has a
//     delivery limit, so a message that kills its consumer before the ack
//     ends in C.poison instead of looping forever.
//   - C.retry.<delay> is a delay queue, one per distinct delay of C's
//     ladder. It is bound to R with the routing key C.retry.<delay> (its own
//     name), holds each message for its TTL and then dead-letters it through
//     the default exchange with routing key C, back to C alone. A retry
//     never travels through E, which would hand it again to every other
//     consumer bound to the same key.
//   - C.poison is bound to D with routing key C. Nothing consumes it.
//
// With Spec.Delays the topology also has the delay levels of delayed
// facts, shared by all consumers: E.delay.<k> for k from 0 to 35,
// E.delay.deliver and E.delay.unroutable (see delay.go).
//
// A delay is written as a whole number of the largest unit that divides it
// exactly, among h, m, s and ms: 20ms, 1500ms, 4s, 90s, 1m, 2h. The format
// is part of the wire contract: changing it would rename queues.
package topology
