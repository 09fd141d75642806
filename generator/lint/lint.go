// Package lint finds what is valid in a schema directory but probably
// wrong: a fact named like a command, a binding that matches nothing, a
// property that never says its type. It runs on a directory that loaded
// and modelled without errors; `warren check` runs both and prints every
// finding as
//
//	catalogue/rebuild-index.json:2:20: past-tense: routing key "rebuild.index" reads as a command ("rebuild" ...); a fact states what happened, e.g. "index.rebuilt" (warning)
//
// Every rule has a stable name and a severity ([Rules] lists them). Errors
// fail `warren check` and `warren generate` ([Errors] runs those rules
// alone), warnings fail check only with --strict, and info findings never
// fail.
//
// # Turning a rule off
//
// A schema file turns rules off for the findings located in it with the
// keyword x-warren-lint at its root:
//
//	{
//	  "x-routing-key": "search.reindex-requested",
//	  "x-warren-lint": {"disable": ["fact-unconsumed"]},
//	  ...
//	}
//
// Rules about the manifest (bindings, consumers) cannot be turned off:
// warren.json has no room for the keyword, and those findings are about
// mistakes, not taste. A misspelt rule name in "disable" is itself an error
// (rule lint-keyword), so that a rule is never left on by accident.
package lint

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Severity says how much a finding matters.
type Severity int

const (
	Info    Severity = iota // worth knowing; never fails a check
	Warning                 // probably wrong; fails `warren check --strict`
	Error                   // wrong; fails `warren check` and `warren generate`
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "info"
}

// Finding is one problem found by a rule, located in a file of the schema
// directory.
type Finding struct {
	Rule     string   // stable rule name, e.g. "past-tense"
	Severity Severity // of the rule
	File     string   // slash path relative to the schema directory
	Line     int      // 1-based; 0 when unknown
	Col      int      // 1-based byte column; 0 when unknown
	Pointer  string   // JSON pointer into File
	Message  string   // what is wrong and what would be right
}

// String prints the finding as file:line:col: rule: message (severity).
func (f Finding) String() string {
	where := f.File
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Col)
	}
	return fmt.Sprintf("%s: %s: %s (%s)", where, f.Rule, f.Message, f.Severity)
}

// Rule is one check with a stable name.
type Rule struct {
	Name     string
	Severity Severity
	Doc      string // one line for --help and documentation
	check    func(*pass)
}

// Rule names.
const (
	PastTense                     = "past-tense"
	BindingMatchesNothing         = "binding-matches-nothing"
	ConsumerHandlesNothing        = "consumer-handles-nothing"
	FactUnconsumed                = "fact-unconsumed"
	PropertyWithoutType           = "property-without-type"
	AdditionalPropertiesUndecided = "additional-properties-undecided"
	RequiredNotInProperties       = "required-not-in-properties"
	LintKeyword                   = "lint-keyword"
	GoNameChanged                 = "go-name-changed"
	RefResolvedByPath             = "ref-resolved-by-path"
	MisspeltKeyword               = "misspelt-keyword"
	VendoredDefaultRefused        = "vendored-default-refused"
)

// Rules lists every rule in the order they run.
var Rules = []Rule{
	{PastTense, Warning, "a fact's routing key should end in a verb in the past tense: it states what happened", checkPastTense},
	{BindingMatchesNothing, Error, "a consumer binding that matches no fact is a typo", checkBindings},
	{ConsumerHandlesNothing, Warning, "a consumer whose bindings match no fact has nothing to do", checkConsumers},
	{FactUnconsumed, Info, "a fact that no consumer reads reaches nobody (yet): published, it is unroutable, unless a stream keeps it", checkUnconsumed},
	{PinnedVersionUnpublished, Warning, "a consumer pinned to a version of a fact (consumers.<name>.versions) when neither that version nor an older one is published judges each of those facts by the schema of its pin and poisons what that refuses", checkPinnedVersions},
	{PropertyWithoutType, Warning, "a property without \"type\" (or $ref, enum, const, a combinator) accepts any JSON value", checkPropertyTypes},
	{AdditionalPropertiesUndecided, Info, "an object schema that does not say whether other properties are allowed", checkAdditionalProperties},
	{RequiredNotInProperties, Error, "a required name that no property declares is a typo", checkRequired},
	{MisspeltKeyword, Warning, "a key one slip from a keyword that is written beside it (\"requried\" beside \"required\") or only documents (\"descripton\") is ignored as written", checkMisspelt},
	{GoNameChanged, Warning, "a name that collides with another is given a different Go name (deterministic, documented in docs/GENERATED.md)", checkRenamed},
	{VendoredDefaultRefused, Warning, "a default that its schema refuses, in a vendored file (one the manifest's facts point into), is left out of the generated code", checkDroppedDefaults},
	{RefResolvedByPath, Warning, "a relative $ref that no $id answers was resolved against its file's place in the directory, which tools that follow the specification do not do", checkRefsByPath},
	{RequestPastTense, Warning, "a request's key should end in a verb in the imperative: one in the past tense is a fact in disguise", checkRequestTense},
	{SagaNeverStarts, Error, "a saga none of whose facts starts an instance: its facts can never find one", checkSagaStarts},
	{SagaStartOverridden, Error, "a fact of a saga's \"startsWith\" whose \"whenMissing\" is \"ignore\" or \"poison\" never starts an instance", checkSagaStartRules},
	{SagaCorrelationUnmatched, Warning, "a saga's fact whose correlation names a property no starting fact names can never find an instance", checkSagaCorrelations},
	{SagaStateNotObject, Error, "a saga's state schema must be an object, which can grow fields", checkSagaStates},
	{LintKeyword, Error, "x-warren-lint must be {\"disable\": [rule names]}", nil},
}

// Input is what the rules read: the loaded directory, and the consumers
// with the facts each binding matches.
type Input struct {
	Schemas   *load.Schemas
	Consumers []Consumer // in manifest order; nil when the model was not built
	// Renamed are the Go names the generator chose to resolve
	// collisions; nil when the model was not built.
	Renamed []model.Renamed
	// DroppedDefaults are the vendored files' defaults that their schema
	// refuses, which the generated code leaves out; nil when the model
	// was not built.
	DroppedDefaults []model.DroppedDefault
}

// Consumer is one consumer of the manifest with its bindings matched.
type Consumer struct {
	Name     string
	Bindings []Binding
}

// Binding is one binding pattern and the routing keys of the facts it
// matches, as the generator's binding matcher decided.
type Binding struct {
	Pattern string
	Facts   []string
}

// Run applies every rule and returns the findings that no x-warren-lint
// keyword disabled, sorted by file, position and rule.
func Run(in Input) []Finding { return run(in, Info) }

// Errors applies the rules of severity Error alone, as Run does: what
// makes a directory whose generated code cannot work as written (a saga
// that never starts), which `warren generate` refuses. A misspelt rule
// name in x-warren-lint is one of them.
func Errors(in Input) []Finding { return run(in, Error) }

// run applies the rules of severity least and above.
func run(in Input, least Severity) []Finding {
	p := &pass{in: in}
	disabled := p.readDisable()
	for _, r := range Rules {
		if r.check == nil || r.Severity < least {
			continue
		}
		p.rule = r
		r.check(p)
	}
	out := slices.DeleteFunc(p.out, func(f Finding) bool {
		return f.Rule != LintKeyword && disabled[f.File][f.Rule]
	})
	if in.Schemas != nil {
		// A file of an imported directory is named where the user can
		// open it, as errors name it, not by its place in this
		// directory's view ("imports/...").
		for i := range out {
			out[i].File = in.Schemas.UserPath(out[i].File)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return out
}

// Count returns how many findings have each severity.
func Count(fs []Finding) (errors, warnings, infos int) {
	for _, f := range fs {
		switch f.Severity {
		case Error:
			errors++
		case Warning:
			warnings++
		default:
			infos++
		}
	}
	return errors, warnings, infos
}

// pass carries the state of one run.
type pass struct {
	in   Input
	rule Rule // the rule running now
	out  []Finding
}

// report adds a finding of the running rule at pointer in doc.
func (p *pass) report(doc *load.Document, pointer, format string, args ...any) {
	p.reportAs(p.rule, doc, pointer, format, args...)
}

func (p *pass) reportAs(r Rule, doc *load.Document, pointer, format string, args ...any) {
	f := Finding{Rule: r.Name, Severity: r.Severity, File: doc.Path, Pointer: pointer, Message: fmt.Sprintf(format, args...)}
	f.Line, f.Col, _ = doc.Position(pointer)
	p.out = append(p.out, f)
}

// reportKey is reportAs at the member's name rather than its value, where
// an editor should put the cursor for "rename or remove this".
func (p *pass) reportKey(r Rule, doc *load.Document, pointer, format string, args ...any) {
	f := Finding{Rule: r.Name, Severity: r.Severity, File: doc.Path, Pointer: pointer, Message: fmt.Sprintf(format, args...)}
	f.Line, f.Col, _ = doc.KeyPosition(pointer)
	p.out = append(p.out, f)
}

// readDisable reads x-warren-lint from the root of every schema file and
// returns, per file, the rules it turns off.
func (p *pass) readDisable() map[string]map[string]bool {
	known := map[string]bool{}
	for _, r := range Rules {
		known[r.Name] = true
	}
	keyword := Rules[slices.IndexFunc(Rules, func(r Rule) bool { return r.Name == LintKeyword })]
	out := map[string]map[string]bool{}
	for _, doc := range p.in.Schemas.Docs {
		root, _ := doc.Value.(map[string]any)
		v, ok := root["x-warren-lint"]
		if !ok {
			continue
		}
		const at = "/x-warren-lint"
		obj, ok := v.(map[string]any)
		if !ok {
			p.reportAs(keyword, doc, at, `expected an object such as {"disable": ["past-tense"]}`)
			continue
		}
		for _, k := range load.SortedKeys(obj) {
			if k != "disable" {
				p.reportKey(keyword, doc, load.Append(at, k), `unknown key %q: the only key is "disable"`, k)
			}
		}
		list, ok := obj["disable"].([]any)
		if _, has := obj["disable"]; has && !ok {
			p.reportAs(keyword, doc, load.Append(at, "disable"), "expected an array of rule names")
			continue
		}
		for i, x := range list {
			name, _ := x.(string)
			if !known[name] || name == LintKeyword {
				p.reportAs(keyword, doc, load.AppendIndex(load.Append(at, "disable"), i), "unknown rule %s: expected one of %s", describe(x), ruleNames())
				continue
			}
			if out[doc.Path] == nil {
				out[doc.Path] = map[string]bool{}
			}
			out[doc.Path][name] = true
		}
	}
	return out
}

func ruleNames() string {
	var s string
	for _, r := range Rules {
		if r.check == nil {
			continue
		}
		if s != "" {
			s += ", "
		}
		s += r.Name
	}
	return s
}

func describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}
