package schemadiff

// Rule names one kind of change. Names are stable: CI scripts, reviewers
// and the JSON output rely on them.
type Rule struct {
	Name     string // kebab-case, stable
	Breaking bool   // whether a change of this kind can break a consumer
	Doc      string // one line for --help and documentation
}

// Rule names.
const (
	FactRemoved                = "fact-removed"
	RoutingKeyChanged          = "routing-key-changed"
	VersionLowered             = "version-lowered"
	PropertyRemoved            = "property-removed"
	RequiredPropertyAdded      = "required-property-added"
	PropertyMadeRequired       = "property-made-required"
	PropertyMadeOptional       = "property-made-optional"
	TypeNarrowed               = "type-narrowed"
	TypeChanged                = "type-changed"
	EnumValueRemoved           = "enum-value-removed"
	ConstraintTightened        = "constraint-tightened"
	AdditionalPropertiesClosed = "additional-properties-closed"
	BranchRemoved              = "branch-removed"
	UnclassifiedChange         = "unclassified-change"
	BindingStoppedMatching     = "binding-stopped-matching"

	FactAdded                  = "fact-added"
	FactMoved                  = "fact-moved"
	VersionRaised              = "version-raised"
	PropertyAdded              = "property-added"
	EnumValueAdded             = "enum-value-added"
	ConstraintLoosened         = "constraint-loosened"
	AdditionalPropertiesOpened = "additional-properties-opened"
	BranchAdded                = "branch-added"
	DescriptionChanged         = "description-changed"
	TitleChanged               = "title-changed"
	DeprecatedChanged          = "deprecated-changed"
	DefaultChanged             = "default-changed"
	ConsumerAdded              = "consumer-added"
	ConsumerRemoved            = "consumer-removed"
	BindingStartedMatching     = "binding-started-matching"
)

// Rules lists every rule, breaking ones first. The package documentation
// explains the reasoning behind each classification.
var Rules = []Rule{
	{FactRemoved, true, "a fact is gone; announce it by marking the fact deprecated first"},
	{RoutingKeyChanged, true, "a fact's routing key changed; bindings and queued messages use the old key"},
	{VersionLowered, true, "a fact's x-version went down"},
	{PropertyRemoved, true, "a property consumers may read is gone"},
	{RequiredPropertyAdded, true, "a new property is required; payloads already published lack it"},
	{PropertyMadeRequired, true, "an optional property is now required; payloads that omit it fail"},
	{PropertyMadeOptional, true, "a required property is now optional; consumers relied on it being there"},
	{TypeNarrowed, true, "a type accepts fewer kinds of value (\"number\" -> \"integer\")"},
	{TypeChanged, true, "a type changed or was widened; the generated Go type changes with it"},
	{EnumValueRemoved, true, "an enum value is gone; payloads that use it fail"},
	{ConstraintTightened, true, "a validation keyword accepts less (minimum raised, maxLength lowered, pattern added, ...)"},
	{AdditionalPropertiesClosed, true, "additionalProperties became false; payloads with extra properties fail"},
	{BranchRemoved, true, "a oneOf/anyOf branch is gone; payloads that matched only it fail"},
	{UnclassifiedChange, true, "a keyword changed in a way warren cannot classify; counted as breaking"},
	{BindingStoppedMatching, true, "a consumer's bindings no longer match a fact they matched"},
	{FactAdded, false, "a new fact"},
	{FactMoved, false, "a fact's schema moved to another file, same routing key"},
	{VersionRaised, false, "a fact's x-version went up"},
	{PropertyAdded, false, "a new optional property"},
	{EnumValueAdded, false, "an enum accepts a new value"},
	{ConstraintLoosened, false, "a validation keyword accepts more"},
	{AdditionalPropertiesOpened, false, "additionalProperties is no longer false"},
	{BranchAdded, false, "a oneOf/anyOf branch was added"},
	{DescriptionChanged, false, "a description changed"},
	{TitleChanged, false, "a title changed (the generated Go name changes with it)"},
	{DeprecatedChanged, false, "deprecated was set or cleared"},
	{DefaultChanged, false, "a default value changed"},
	{ConsumerAdded, false, "a new consumer"},
	{ConsumerRemoved, false, "a consumer is gone (its queues stay on the broker until deleted)"},
	{BindingStartedMatching, false, "a consumer's bindings match a fact they did not match"},
}

var breakingRule = func() map[string]bool {
	m := make(map[string]bool, len(Rules))
	for _, r := range Rules {
		m[r.Name] = r.Breaking
	}
	return m
}()
