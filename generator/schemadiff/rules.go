package schemadiff

// Rule names one kind of change. Names are stable: CI scripts, reviewers
// and the JSON output rely on them.
type Rule struct {
	Name string // kebab-case, stable
	// Breaks is the directions a change of this kind can break. A few
	// rules depend on the object around the change (a property added to a
	// closed object breaks forward, to an open one nothing); their Doc
	// says when, and each Change carries what it does break.
	Breaks Direction
	// Always marks changes that fail whatever the mode and cannot be
	// announced with x-version: a lowered version, a queue the broker will
	// refuse to redeclare.
	Always bool
	Doc    string // one line for --help and documentation
}

// Breaking reports whether the rule can break a consumer in some direction.
func (r Rule) Breaking() bool { return r.Breaks != Neither }

// Rule names.
const (
	FactRemoved                = "fact-removed"
	RoutingKeyChanged          = "routing-key-changed"
	VersionLowered             = "version-lowered"
	VersionRetired             = "version-retired"
	PropertyRemoved            = "property-removed"
	RequiredPropertyAdded      = "required-property-added"
	PropertyMadeRequired       = "property-made-required"
	PropertyMadeOptional       = "property-made-optional"
	TypeNarrowed               = "type-narrowed"
	TypeWidened                = "type-widened"
	TypeChanged                = "type-changed"
	EnumValueRemoved           = "enum-value-removed"
	EnumValueAdded             = "enum-value-added"
	ConstraintTightened        = "constraint-tightened"
	ConstraintLoosened         = "constraint-loosened"
	ConstraintChanged          = "constraint-changed"
	AdditionalPropertiesClosed = "additional-properties-closed"
	AdditionalPropertiesOpened = "additional-properties-opened"
	BranchRemoved              = "branch-removed"
	BranchAdded                = "branch-added"
	UnclassifiedChange         = "unclassified-change"
	BindingStoppedMatching     = "binding-stopped-matching"
	BindingStartedMatching     = "binding-started-matching"
	QueueTypeChanged           = "queue-type-changed"
	DeliveryLimitChanged       = "delivery-limit-changed"
	StreamPublishDirect        = "stream-publish-direct"
	StreamPartitionsChanged    = "stream-partitions-changed"
	StreamRetentionChanged     = "stream-retention-changed"
	StreamKindChanged          = "stream-kind-changed"
	StreamConsumerMoved        = "stream-consumer-moved"
	VersionUnpublished         = "version-unpublished"

	PropertyAdded         = "property-added"
	FactAdded             = "fact-added"
	FactMoved             = "fact-moved"
	VersionRaised         = "version-raised"
	DescriptionChanged    = "description-changed"
	TitleChanged          = "title-changed"
	DeprecatedChanged     = "deprecated-changed"
	DefaultChanged        = "default-changed"
	ConsumerAdded         = "consumer-added"
	ConsumerRemoved       = "consumer-removed"
	RetryLadderChanged    = "retry-ladder-changed"
	FormatAnnotation      = "format-annotation-changed"
	StreamPublishExchange = "stream-publish-exchange"
	SagaQueueRenamed      = "saga-queue-renamed"
	StreamStartChanged    = "stream-start-changed"
)

// Rules lists every rule, those that can break first. The package
// documentation explains how each classification follows from the way a
// consumer handles a delivery.
var Rules = []Rule{
	{FactRemoved, Backward, false, "a fact is gone; its facts still queued reach consumers that no longer handle them (announce it by marking the fact deprecated first)"},
	{RoutingKeyChanged, Both, false, "a fact's routing key changed; bindings and queued messages use the old key (a raised x-version does not announce it: every version of a fact shares its routing key)"},
	{VersionLowered, Both, true, "a fact's x-version went down"},
	{VersionRetired, Backward, false, "an older version of a fact kept side by side is gone: consumers built from the new directory no longer read its facts still queued, in poison or in outboxes (retire it once the old directory neither publishes it nor has a consumer pinned to it)"},
	{VersionUnpublished, Forward, false, "an older version of a fact that the publisher published beside the newest (warren.json \"versions\") is no longer published: consumers of the old directory pinned to it read no version published now: each fact is judged by their own version's schema and poisoned where it refuses it (keep publishing it until every consumer pinned to it is moved to a published version and deployed)"},
	{PropertyRemoved, Both, false, "a property is gone: forward when it was required (old consumers require it), backward when the object is closed (old facts carry it)"},
	{RequiredPropertyAdded, Both, false, "a new property is required; old facts lack it (and, on a closed object, old consumers reject it)"},
	{PropertyMadeRequired, Backward, false, "an optional property is now required; old facts that omit it fail"},
	{PropertyMadeOptional, Forward, false, "a required property is now optional; old consumers reject new facts that omit it"},
	{TypeNarrowed, Backward, false, "a type accepts fewer kinds of value (\"number\" -> \"integer\"); old facts may not fit"},
	{TypeWidened, Forward, false, "a type accepts more kinds of value (\"integer\" -> \"number\"); old consumers reject the new ones"},
	{TypeChanged, Both, false, "a type changed to another kind of value"},
	{EnumValueRemoved, Backward, false, "an enum value is gone; old facts that use it fail"},
	{EnumValueAdded, Forward, false, "an enum accepts a new value; old consumers reject facts that use it"},
	{ConstraintTightened, Backward, false, "a validation keyword accepts less (minimum raised, maxLength lowered, format added, ...); old facts may fail"},
	{ConstraintLoosened, Forward, false, "a validation keyword accepts more; old consumers reject the facts it newly allows"},
	{ConstraintChanged, Both, false, "a validation keyword changed so that each side accepts values the other rejects (pattern, format, const, multipleOf)"},
	{AdditionalPropertiesClosed, Backward, false, "additionalProperties became false; old facts with other properties fail"},
	{AdditionalPropertiesOpened, Forward, false, "additionalProperties is no longer false; old consumers reject facts with other properties"},
	{BranchRemoved, Backward, false, "a oneOf/anyOf branch is gone; old facts that matched only it fail"},
	{BranchAdded, Both, false, "a oneOf/anyOf branch was added; old consumers reject facts that match only it (and under oneOf, an old fact that also matches it fails)"},
	{UnclassifiedChange, Both, false, "a keyword changed in a way warren cannot classify; counted as breaking both ways"},
	{BindingStoppedMatching, Backward, false, "a consumer's bindings no longer match a fact: the facts already queued for it, and those its old binding still routes, are poisoned as not handled"},
	{BindingStartedMatching, Forward, false, "a consumer's bindings match a fact they did not (a new fact, or a new binding): running old consumers poison it as not handled"},
	{PropertyAdded, Forward, false, "a new optional property: breaks forward on a closed object, nothing on an open one"},
	{QueueTypeChanged, Both, true, "a consumer's queue type changed; the broker refuses to redeclare the existing queues"},
	{DeliveryLimitChanged, Both, true, "a consumer's delivery limit changed; the broker refuses to redeclare the existing work queue"},
	{StreamPartitionsChanged, Both, true, "a super stream's partition count changed: it cannot change in place (ordering keys would hash to other partitions than the ones holding their earlier facts), so Declare refuses it before declaring anything (runtime.PartitionCountError) and the service does not start (keep the count, or declare a super stream of another name and move its consumers there)"},
	{StreamRetentionChanged, Both, true, "a stream's maxAge, maxBytes or segmentBytes changed: the broker refuses to redeclare a stream with other arguments, so Declare refuses it before declaring anything (runtime.MismatchError) and the service does not start (keep the declared value and change the retention with a policy on the broker, keys max-age and max-length-bytes; a segment size cannot change)"},
	{StreamKindChanged, Both, true, "a plain stream became a super stream, or the other way round: the new kind is declared beside the old one, which stays bound and keeps the consumers' offsets, so they start on the new one from their start and leave behind what they had not read (declare it under another name and move the consumers)"},
	{StreamConsumerMoved, Both, true, "a consumer reads another stream than before, or moved between its queue and a stream: its offset is kept in the stream it reads, under its name, so on the new stream it starts from its start, reading again facts it handled or skipping facts it had not read, and while both builds run a fact that reaches both is handled twice (set its start to a time before the switch and give it a guard, or replay what it skipped under a fresh offset name)"},
	{StreamPublishDirect, Forward, false, "a fact that was published through the events exchange is written directly into a stream (\"publish\": \"direct\"): the queues other services bind to it on the exchange stop receiving it"},
	{FactAdded, Neither, false, "a new fact (consumers whose bindings match it are reported as binding-started-matching)"},
	{FactMoved, Neither, false, "a fact's schema moved to another file, same routing key"},
	{VersionRaised, Neither, false, "a fact's x-version went up"},
	{DescriptionChanged, Neither, false, "a description changed"},
	{TitleChanged, Neither, false, "a title changed (the generated Go name changes with it)"},
	{DeprecatedChanged, Neither, false, "deprecated was set or cleared"},
	{DefaultChanged, Neither, false, "a default value changed"},
	{ConsumerAdded, Neither, false, "a new consumer"},
	{ConsumerRemoved, Neither, false, "a consumer is gone (its queues and bindings stay on the broker: warren declare --prune; a stream consumer's work queue is bound to nothing, and what stays is its offset stored in the stream and its retry and poison queues)"},
	{SagaQueueRenamed, Neither, false, "a saga's work queue has another name (\"queue\"); the old queue and its bindings stay on the broker, where the saga's facts keep piling up (warren declare --prune)"},
	{FormatAnnotation, Neither, false, "a format changed that neither side asserts (assertFormats; a date-time, read into a time.Time, is always checked): an annotation"},
	{RetryLadderChanged, Neither, false, "a consumer's retry ladder changed; delay queues it no longer uses stay behind (warren declare --prune)"},
	{StreamPublishExchange, Neither, false, "a fact that was written directly into a stream is published through the events exchange again, which reaches every queue bound to it and the stream"},
	{StreamStartChanged, Neither, false, "a stream consumer's start changed: it applies only before the consumer has an offset stored on the broker, so a consumer that has run goes on from its offset and the change has no effect (replay under a fresh offset name to read from elsewhere)"},
}

var ruleOf = func() map[string]Rule {
	m := make(map[string]Rule, len(Rules))
	for _, r := range Rules {
		m[r.Name] = r
	}
	return m
}()
