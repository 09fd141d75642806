package lint

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// Rule names of sagas.
const (
	SagaNeverStarts          = "saga-never-starts"
	SagaStartOverridden      = "saga-start-overridden"
	SagaCorrelationUnmatched = "saga-correlation-unmatched"
	SagaStateNotObject       = "saga-state-not-object"
)

// checkSagaStarts reports a saga none of whose facts starts an instance:
// every fact it handles then looks for an instance that cannot exist.
func checkSagaStarts(p *pass) {
	doc := p.in.Schemas.Manifest.Doc
	for _, sg := range p.in.Schemas.Manifest.Sagas {
		if slices.ContainsFunc(sg.Facts, func(f *load.SagaFact) bool { return f.WhenMissing == "start" }) {
			continue
		}
		for _, f := range sg.Facts {
			p.report(doc, f.Pointer, "saga %q: fact %s can never find an instance: no fact of the saga starts one (every \"whenMissing\" is \"ignore\" or \"poison\"); let a fact of \"startsWith\" start it", sg.Name, f.RoutingKey)
		}
	}
}

// checkSagaStartRules reports a fact of a saga's "startsWith" whose
// "whenMissing" says "ignore" or "poison": "startsWith" says the fact
// starts an instance, "whenMissing" that it never does, and the generated
// code follows "whenMissing" (saga.Ignore, saga.Poison), so the fact is
// dropped or poisoned where an instance was meant to begin.
func checkSagaStartRules(p *pass) {
	doc := p.in.Schemas.Manifest.Doc
	for _, sg := range p.in.Schemas.Manifest.Sagas {
		for _, f := range sg.Facts {
			if f.WhenMissing == "start" || !slices.Contains(sg.StartsWith, f.RoutingKey) {
				continue
			}
			p.report(doc, load.Append(f.Pointer, "whenMissing"), "saga %q: fact %s is in \"startsWith\", but its \"whenMissing\" is %q, so it never starts an instance (it %s the fact when none exists): expected \"start\", or no \"whenMissing\" (a fact of \"startsWith\" starts one by default); to have it only move instances that exist, remove it from \"startsWith\"", sg.Name, f.RoutingKey, f.WhenMissing, missingVerb[f.WhenMissing])
		}
	}
}

// missingVerb says what a "whenMissing" rule other than "start" does.
var missingVerb = map[string]string{"ignore": "acks and drops", "poison": "poisons"}

// checkSagaCorrelations reports a fact that does not start instances and
// whose correlation names a property no starting fact names: it most
// likely identifies another entity (a payment, not an order) and will
// never find an instance the starting facts made.
func checkSagaCorrelations(p *pass) {
	doc := p.in.Schemas.Manifest.Doc
	for _, sg := range p.in.Schemas.Manifest.Sagas {
		// The properties the starting facts find instances by, each
		// once: two facts that start by "order_id" name it once.
		var starters []string
		for _, f := range sg.Facts {
			if name := path.Base(f.Correlation); f.WhenMissing == "start" && !slices.Contains(starters, name) {
				starters = append(starters, name)
			}
		}
		if len(starters) == 0 {
			continue // saga-never-starts says so
		}
		for _, f := range sg.Facts {
			if f.WhenMissing == "start" || slices.Contains(starters, path.Base(f.Correlation)) {
				continue
			}
			p.report(doc, load.Append(f.Pointer, "correlation"), "saga %q: fact %s finds its instance by property %q, which no fact that starts an instance uses (%s): it can never find an instance unless the two name the same thing", sg.Name, f.RoutingKey, path.Base(f.Correlation), strings.Join(quoted(starters), ", "))
		}
	}
}

// checkSagaStates reports a state schema that does not describe an object:
// a state is a record of where the process stands, and grows new fields.
func checkSagaStates(p *pass) {
	for _, sg := range p.in.Schemas.Manifest.Sagas {
		n := sg.State
		if n == nil || isObject(n) {
			continue
		}
		p.report(p.in.Schemas.Manifest.Doc, load.Append(sg.Pointer, "state"), "saga %q: its state schema %s is not an object (\"type\": \"object\" with properties): a state records where an instance stands, and must be able to grow fields that old states lack", sg.Name, n.Location())
	}
}

// isObject reports whether schema n, or what its $refs lead to, says
// "type": "object".
func isObject(n *load.Schema) bool {
	for seen := map[*load.Schema]bool{}; n != nil && !seen[n]; n = n.Ref {
		seen[n] = true
		v, _ := n.Doc.Lookup(n.Pointer)
		m, _ := v.(map[string]any)
		if t, _ := m["type"].(string); t == "object" {
			return true
		}
	}
	return false
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
