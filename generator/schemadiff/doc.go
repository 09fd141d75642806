// Package schemadiff compares two schema directories and says which changes
// can break a consumer. `warren diff` prints its [Report] as text, as a
// Markdown pull-request comment or as JSON.
//
// # What counts as breaking
//
// Warren assumes consumers are deployed before the producers of a new
// schema, as with "backward" compatibility in schema registries. Facts
// published under the old schema keep arriving long after a change: from
// producers not yet redeployed, from retry tiers, from a poison queue being
// replayed. A change is therefore breaking when
//
//   - some payload valid under the old schema fails the new one: a new
//     consumer validates it and sends it to its poison queue (a constraint
//     tightened, a property made required, an enum value removed,
//     additionalProperties closed); or
//   - the shape consumers read changes: a property removed, made optional,
//     or given a different type. Such a change alters the generated Go type
//     and the data a handler relies on, even where it accepts more
//     ("integer" widened to "number").
//
// Values inside the same shape follow the first rule only: adding an enum
// value or loosening a bound is compatible.
//
// A breaking change to a fact is reported as [Intentional] when the fact's
// x-version went up, and as [Breaking] (the diff fails) otherwise. Removing a
// fact is intentional when the old fact was marked "deprecated": true, the
// announcement consumers had. Consumers have no version: a consumer that
// stops receiving a fact is breaking unless the fact's own change was
// announced, because its old binding stays on the broker and the fact then
// reaches a consumer that no longer handles it.
//
// # How schemas are compared
//
// Facts pair up by routing key; a fact whose key changed is recognised by
// its file. Each pair is walked from the root with $refs followed and allOf
// members merged into one effective schema, the way the generator merges
// them, so refactoring a schema into shared definitions is not a change. A
// change inside a shared file is reported once for every fact that reaches
// it, with the path from that fact's root, because each fact is versioned
// on its own. Every change names its rule ([Rules]), the path in the fact
// and the position in the file on the side where it can be seen: the new
// directory, or the old one for something removed.
//
// Some changes cannot be judged in general: a new pattern may or may not
// accept every string the old one did, and keywords such as not,
// if/then/else or patternProperties can narrow in ways that need a proof.
// The first kind is reported as a tightened constraint, the second as
// unclassified-change; both count as breaking, and the message says why.
// Bounds are compared keyword by keyword (minimum against minimum), so
// swapping minimum for an equivalent exclusiveMinimum shows as one
// tightened and one loosened constraint.
package schemadiff
