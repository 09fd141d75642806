// Package schemadiff compares two schema directories and says which changes
// can break a consumer. `warren diff` prints its [Report] as text, as a
// Markdown pull-request comment or as JSON.
//
// # Both directions
//
// Producers and consumers deploy on their own schedules, and facts outlive
// deploys in queues, poison queues and outboxes. Every change is therefore
// judged in two directions:
//
//   - forward: a consumer built from the old schema receives facts written
//     under the new one (the producer deployed first);
//   - backward: a consumer built from the new schema receives facts written
//     under the old one (still queued, replayed from poison, relayed from an
//     outbox, or from a producer not yet deployed).
//
// The rules follow from what a warren consumer does with a delivery: it
// looks up the handler for the routing key (none: poisoned as not
// handled), validates the payload against the schema compiled into it
// (invalid: poisoned), and decodes it into the generated type, which
// matches that schema. So a change breaks forward when the new schema
// accepts a payload the old one rejects (a property added to a closed
// object, an enum value added, a type widened, a constraint loosened, a
// required property made optional) or when an old consumer's bindings
// newly route a fact it has no handler for (a new fact under an existing
// binding). It breaks backward when the new schema rejects a payload the
// old one accepted (a property removed from a closed object, a new
// required property, a type narrowed, a constraint tightened) or when a
// consumer stops handling a fact that is still queued for it. A new
// optional property on an open object breaks neither. Where a keyword
// changed so that neither side provably contains the other (a pattern, a
// const), both directions count as broken.
//
// The fact's x-fact-version header does not change this: a consumer that
// receives a newer version than it was generated from logs and counts it
// (runtime.NewerVersion) and then validates the payload against its own
// schema exactly as above, so a raised x-version announces a break but
// does not soften it.
//
// # Modes and verdicts
//
// A compatibility mode, as Confluent Schema Registry names them, says which
// directions must keep working: BACKWARD, FORWARD, FULL (both; the
// default), each also _TRANSITIVE, and NONE. The manifest's
// "compatibility" sets it for every fact and a fact's "x-compatibility"
// for itself; consumer settings are judged in the manifest's mode. A
// change that breaks a direction its mode requires is [Breaking] (the diff
// fails), or [Intentional] when the fact's x-version went up, the
// announcement consumers get. Removing a fact is intentional when the old
// fact was marked "deprecated": true. A change that breaks only a
// direction the mode does not require is [Ordered]: Report.Deploys says
// which side deploys first. A lowered x-version, and a queue type or
// delivery limit the broker will refuse to redeclare, are breaking in
// every mode, and so is a stream changed in place (see below). With a
// _TRANSITIVE mode the new schema is also compared with every version of
// the fact since its x-version was last raised ([CompareHistory];
// `warren diff --base` reads them from git history).
//
// # How facts are published
//
// A stream of "publish": "direct" in warren.json makes the generated
// publish calls write the facts only it binds straight into it, past the
// events exchange. The generator refuses that for a fact anything else in
// the directory binds, but other services bind facts on the exchange in
// manifests of their own, and those queues stop receiving a fact written
// directly, with no error anywhere. So a fact that existed before and is
// now written directly is stream-publish-direct: it breaks forward
// (consumers bound before, facts written after), judged in the fact's
// mode like a changed routing key, and filed under the fact so that
// [CompareImport] shows it to the services that bind it. Its deploy order
// is consumers first, moved to read the stream; a version window does not
// ship it. A fact published through the exchange again breaks nobody
// (stream-publish-exchange).
//
// # Streams
//
// The broker keeps a stream as first declared, and the runtime's Declare
// (which Dial runs on the generated topology) checks what exists before it
// declares anything. A super stream's partition count changed
// (stream-partitions-changed: runtime.PartitionCountError) or a stream's
// maxAge, maxBytes or segmentBytes (stream-retention-changed: a
// runtime.MismatchError) makes it refuse the whole topology, so no deploy
// of the directory starts; a plain stream turned into a super stream, or
// back (stream-kind-changed), is declared beside the old one, which keeps
// the consumers' offsets and what they had not read. No deploy order or
// version ships them: they break in every mode, filed under
// "stream <name>", and each message says what to do instead (a policy for
// retention, a stream of another name). A stream consumer's start applies
// only before it has an offset on the broker, so a changed start is a
// note (stream-start-changed), and a removed stream consumer leaves its
// offset and its queues, not facts piling up (its work queue is bound to
// nothing). A consumer that reads another stream than before, or moved
// between its queue and a stream (stream-consumer-moved), has no offset
// on the new stream: its start applies there, and it reads again what it
// handled or skips what it had not read, while during the deploy both
// builds handle what reaches both. That fails whatever the mode, filed
// under the consumer, and its message says how to move (a start at the
// time of the change, a guard, a replay under a fresh offset name).
//
// # How schemas are compared
//
// Facts pair up by routing key; a fact whose key changed is recognised by
// its file. Each pair is walked from the payload schema (the file's root,
// or where the manifest's "facts" points) with $refs followed and allOf
// members merged into one effective schema, so refactoring a schema into
// shared definitions is not a change. The merge keeps what a value must
// satisfy to satisfy every member: properties and required united, types
// intersected, the strictest bound, the least common multiple of
// multipleOf, the values every enum admits, every pattern and format (a
// set, judged by inclusion), and one schema for what several members say
// of one property or of an array's elements. A keyword that cannot be
// merged (not, if, a second oneOf) is compared member by member: any
// change to one is unclassified-change.
// The walk reads the loader's typed schema nodes, on which the differences
// between drafts are settled: a draft-04 file and a 2020-12 file compare by
// what their keywords mean (an exclusive bound however it is spelt, a
// const as an enum of one, the keywords draft-07 ignores beside $ref). A
// format is a constraint only where the side's consumers check it (its
// manifest's assertFormats, and date-time, read into a time.Time);
// elsewhere it is an annotation and breaks nobody. The keywords that
// bound, divide, match or format a value are judged by the generator's
// judgement (model.JudgeConstraint), the one that decides whether an
// upcast or a downcast between two versions is generated or hand-written,
// so diff and the generator agree about what narrows and what widens; the
// migration of a fact whose versions sit side by side reads each cast
// from the generator's model, and an enum of strings or integers is
// judged to be a Go type of its own in each version as the generator
// declares it (model.EnumBase).
//
// Before they are compared, both sides are read for the values they
// accept (normalize.go): a const or an enum admits the types of its
// values, with "type" or without; a oneOf or anyOf of branches that only
// list values is the enum of those values; "number" with a whole
// multipleOf is "integer"; and a keyword that accepts every value (a
// minLength, minItems or minProperties of 0, a pattern that matches every
// string) is no keyword. Where both sides admit integers alone, bounds
// and multipleOf are read for the integers they admit (exclusiveMinimum 0
// is minimum 1, multipleOf 2.5 is multipleOf 5), and a change the
// integers do not see is none. So a schema rewritten into an equivalent
// one breaks nobody, and an enum narrowed to a const breaks backward
// alone. (The generator judges such keywords as written: a version that
// only adds one, or rewrites an integer's bound, may get a hand-written
// upcast where diff sees no change.)
//
// A change inside a shared file is reported once for every fact that
// reaches it, with the path from that fact's root, because each fact is
// versioned on its own. Every change names its rule ([Rules]), the path in
// the fact and the position in the file on the side where it can be seen:
// the new directory, or the old one for something removed.
//
// Some changes cannot be judged in general: a new pattern may or may not
// accept every string the old one did, and keywords such as not,
// if/then/else or patternProperties can narrow in ways that need a proof.
// The first kind is reported as constraint-changed, the second as
// unclassified-change; both count as breaking both ways, and the message
// says why.
package schemadiff
