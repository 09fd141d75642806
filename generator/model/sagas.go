package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
	"github.com/warrenbus/warren/runtime/topology"
)

// Saga is one saga of the manifest: the facts that move its instances,
// how each finds its instance, the Go type of its state and its timeouts.
type Saga struct {
	Name        string
	Description string
	// State is the state's Go type; StateLocation is what stored states
	// are validated against ("file" or "file#pointer").
	State         *Type
	StateLocation string
	Facts         []*SagaFact // sorted by routing key
	Timeouts      []SagaTimeout
	// KeepCompleted is how long a completed instance is kept; 0 means the
	// runtime's default.
	KeepCompleted time.Duration
	// Topology is the saga's queue in Model.Topology, named QueueName.
	Topology *topology.Consumer

	decl *load.Saga
}

// SagaFact is one fact a saga handles.
type SagaFact struct {
	Fact *Fact
	// Correlation is the JSON pointer to the instance id in the payload,
	// checked to reach a required string or integer.
	Correlation string
	WhenMissing string // "start", "ignore" or "poison"
	WhenExists  string // "handle", "ignore" or "poison"
}

// SagaTimeout is one of a saga's timeouts.
type SagaTimeout struct {
	Name        string
	Description string
}

// MethodName returns the name of the handler method for the timeout.
func (t SagaTimeout) MethodName() string { return "Timeout" + names.Exported(t.Name) }

// QueueName returns the name of the saga's work queue: the manifest's
// "queue", or "saga.<name>".
func (s *Saga) QueueName() string { return s.decl.QueueName() }

// TimeoutKey returns the routing key of the saga's timeouts, a fact of its
// own that only its queue binds.
func (s *Saga) TimeoutKey() string { return "saga." + s.Name + ".timeout" }

// InterfaceName returns the name of the saga's handler interface.
func (s *Saga) InterfaceName() string { return names.Exported(s.Name) + "Saga" }

// ConstructorName returns the name of the function that binds a handler
// of the saga to the runtime.
func (s *Saga) ConstructorName() string { return "New" + s.InterfaceName() }

// addSagas finds the facts of each saga, and checks each correlation
// pointer against the fact's payload type.
func (b *builder) addSagas(m *Model) {
	man := b.s.Manifest
	byKey := map[string]*Fact{}
	for _, f := range m.Facts {
		byKey[f.RoutingKey] = f
	}
	for i, ls := range man.Sagas {
		s := m.Sagas[i]
		for _, lf := range ls.Facts {
			f := byKey[lf.RoutingKey]
			if f == nil {
				b.errs.Add(man.Doc.KeyErrorf(lf.Pointer, "saga %s handles %s, but no fact has that routing key (routing keys: %s)", strconv.Quote(ls.Name), strconv.Quote(lf.RoutingKey), routingKeys(m.Facts)))
				continue
			}
			if f.Type == nil {
				continue // its payload's problem is reported already
			}
			ptr := load.Append(lf.Pointer, "correlation")
			if why := correlationProblem(f.Type, lf.Correlation); why != "" {
				b.errs.Add(man.Doc.Errorf(ptr, "saga %s: correlation %s of fact %s (%s): %s", strconv.Quote(ls.Name), strconv.Quote(lf.Correlation), f.RoutingKey, f.Location(), why))
				continue
			}
			s.Facts = append(s.Facts, &SagaFact{Fact: f, Correlation: lf.Correlation, WhenMissing: lf.WhenMissing, WhenExists: lf.WhenExists})
		}
	}
}

// sagaStates creates a Saga per manifest entry with its state's type,
// before types are named, so the state's enums and fields are named like
// every other type's.
func (b *builder) sagaStates(m *Model) {
	for _, ls := range b.s.Manifest.Sagas {
		s := &Saga{Name: ls.Name, Description: ls.Description, KeepCompleted: ls.KeepCompleted, decl: ls}
		methods := map[string]string{} // method name -> the timeout it was made from
		for _, t := range ls.Timeouts {
			st := SagaTimeout{Name: t.Name, Description: t.Description}
			// Two names that differ in a '-' or '_' make one Go method:
			// the generated interface would not compile.
			if prev, ok := methods[st.MethodName()]; ok {
				b.errs.Add(b.s.Manifest.Doc.Errorf(load.Append(load.Append(ls.Pointer, "timeouts"), t.Name), "saga %s: timeout %s: Go name %s of its handler method is already taken by timeout %s; rename one of them", strconv.Quote(ls.Name), strconv.Quote(t.Name), strconv.Quote(st.MethodName()), strconv.Quote(prev)))
				continue
			}
			methods[st.MethodName()] = t.Name
			s.Timeouts = append(s.Timeouts, st)
		}
		if ls.State != nil {
			s.State = b.sagaState(ls)
			s.StateLocation = location(ls.State.Doc.Path, ls.State.Pointer)
		}
		m.Sagas = append(m.Sagas, s)
	}
}

// correlationProblem says why pointer does not find an instance id in
// every payload of type t, or "" when it does: it must reach a required,
// never-null string or integer, the two kinds of value that name one
// instance one way.
func correlationProblem(t *Type, pointer string) string {
	path, why := keyPath(t, pointer)
	if why != "" {
		// keyPath words it for ordering keys, which may be booleans too.
		return strings.Replace(why, "a string, integer or boolean property", "a string or integer property", 1)
	}
	r := path[len(path)-1].Type
	for r.Kind == Named && (r.Type.Kind == Defined || r.Type.Kind == Enum) {
		r = r.Type.Base
	}
	if r.Kind != String && r.Kind != Int {
		return fmt.Sprintf("expected it to reach a string or integer property; %s is no instance id", describeRef(r))
	}
	return ""
}

// sagaState declares the Go type of a saga's state: the schema's title,
// else the saga's name + "State". Like a fact's payload it must be a type
// of its own, since it carries the codec's methods.
func (b *builder) sagaState(ls *load.Saga) *Type {
	n := payloadNode(ls.State)
	man := b.s.Manifest.Doc
	if prev, ok := b.factByNode[n]; ok {
		b.errs.Add(man.Errorf(load.Append(ls.Pointer, "state"), "saga %s: its state schema %s is already the type of %s; give the state a schema of its own", strconv.Quote(ls.Name), n.Location(), prev.RoutingKey))
		return nil
	}
	name := names.Exported(ls.Name) + "State"
	if n.Title != "" && names.Type(n.Title) != "" {
		name = names.Type(n.Title)
	}
	b.factByNode[n] = &Fact{RoutingKey: "the state of saga " + strconv.Quote(ls.Name), GoName: name}
	ref := b.typeOf(n)
	if ref.Kind != Named || ref.Type.Kind == Alias {
		b.errs.Add(man.Errorf(load.Append(ls.Pointer, "state"), "saga %s: expected the state schema %s to say what it holds (an object with properties), not only another name for another type", strconv.Quote(ls.Name), n.Location()))
		return nil
	}
	return ref.Type
}

// sagaSpecs are the saga queues' consumer specs: bound to the facts each
// saga handles and to its timeouts, with /defaults applied.
// A queue another consumer or saga has already is one error, at the
// saga's "queue", and the saga is left out of the topology rather than
// reported again for each queue of its retry ladder.
func (b *builder) sagaSpecs() []topology.ConsumerSpec {
	man := b.s.Manifest
	taken := map[string]string{}
	for _, c := range man.Consumers {
		taken[c.Name] = "consumer " + strconv.Quote(c.Name)
	}
	var out []topology.ConsumerSpec
	for _, ls := range man.Sagas {
		if by, ok := taken[ls.QueueName()]; ok {
			b.errs.Add(man.Doc.Errorf(load.Append(ls.Pointer, "queue"), "saga %s: queue %s is the work queue of %s already: expected a name of its own", strconv.Quote(ls.Name), strconv.Quote(ls.QueueName()), by))
			continue
		}
		taken[ls.QueueName()] = "saga " + strconv.Quote(ls.Name)
		c := &load.Consumer{Name: ls.QueueName(), Pointer: ls.Pointer, Settings: ls.Settings, Bindings: sagaBindings(ls)}
		out = append(out, ConsumerSpec(c, man.Defaults))
	}
	return out
}

// sagaBindings are the routing keys a saga's queue binds on the events
// exchange: the facts it handles, and its timeouts when it has any.
func sagaBindings(ls *load.Saga) []string {
	var out []string
	for _, f := range ls.Facts {
		out = append(out, f.RoutingKey)
	}
	if len(ls.Timeouts) > 0 {
		out = append(out, "saga."+ls.Name+".timeout")
	}
	return out
}

// linkSagas points each saga at its queue in the topology.
func (m *Model) linkSagas() {
	for _, s := range m.Sagas {
		for i := range m.Topology.Consumers {
			if m.Topology.Consumers[i].Name == s.QueueName() {
				s.Topology = &m.Topology.Consumers[i]
			}
		}
	}
}

// claimSagas claims the package-level names each saga declares.
func (b *builder) claimSagas(m *Model, claim func(string, ident)) {
	man := b.s.Manifest.Doc
	for _, s := range m.Sagas {
		ptr := load.Pointer("sagas", s.Name)
		fix := "rename the saga or set a \"title\" on the other"
		claim(s.InterfaceName(), ident{"interface of saga " + strconv.Quote(s.Name), man, ptr, fix})
		claim(s.ConstructorName(), ident{"constructor of saga " + strconv.Quote(s.Name), man, ptr, fix})
	}
}
