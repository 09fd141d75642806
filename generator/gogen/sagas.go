package gogen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
	"github.com/warrenbus/warren/runtime/topology"
)

// sagaPath is the runtime package sagas run on.
const sagaPath = "github.com/warrenbus/warren/runtime/saga"

func hasSagas(m *model.Model) bool { return len(m.Sagas) > 0 }

// genSagas writes, per saga, its handler interface and the constructor
// that binds a handler to runtime/saga. The state's type is declared with
// the other types of its schema file; everything else is runtime/saga's.
func (e *emitter) genSagas(f *jen.File) {
	f.ImportName(sagaPath, "saga")
	for i, s := range e.m.Sagas {
		if i > 0 {
			f.Line()
		}
		e.genSagaInterface(f, s)
		f.Line()
		e.genSagaConstructor(f, s)
	}
}

func (e *emitter) genSagaInterface(f *jen.File, s *model.Saga) {
	var keys []string
	for _, sf := range s.Facts {
		keys = append(keys, sf.Fact.RoutingKey)
	}
	for _, l := range docComment(
		fmt.Sprintf("%s handles the facts and timeouts of saga %q: one method per fact and per timeout, each given the instance's state and returning its next step (saga.Next). %s binds it to the runtime.", s.InterfaceName(), s.Name, s.ConstructorName()),
		"A method returns the new state with the facts to publish and the timeouts to schedule or cancel; they are written in one transaction, with the fact's claim, only if no other handling changed the instance meanwhile (else the method is called again with the new state), so a method must do nothing but compute its step. An error rolls the step back and retries the fact; one marked with runtime.Permanent sends it to the poison queue.",
		s.Description,
		"Facts: "+strings.Join(keys, ", "),
	) {
		f.Add(l)
	}
	state := jen.Id(s.State.GoName)
	instance := jen.Qual(sagaPath, "Instance").Types(state)
	step := jen.Qual(sagaPath, "Step").Types(state)
	f.Type().Id(s.InterfaceName()).InterfaceFunc(func(g *jen.Group) {
		for i, sf := range s.Facts {
			if i > 0 {
				g.Line()
			}
			for _, l := range docComment(fmt.Sprintf("%s is called with each %s fact (routing key %s) of an instance, found at %s in its payload; with no instance it %s, with one it %s.", sf.Fact.MethodName(), sf.Fact.GoName, sf.Fact.RoutingKey, sf.Correlation, missingText[sf.WhenMissing], existsText[sf.WhenExists])) {
				g.Add(l)
			}
			g.Id(sf.Fact.MethodName()).Params(
				jen.Id("ctx").Qual(contextPath, "Context"),
				jen.Id("in").Add(instance),
				jen.Id("fact").Add(factQual(sf.Fact, sf.Fact.Type.GoName)),
			).Params(step, jen.Error())
		}
		for _, t := range s.Timeouts {
			g.Line()
			for _, l := range docComment(fmt.Sprintf("%s is called when timeout %q of an instance fires, unless the instance completed or cancelled it first.", t.MethodName(), t.Name), t.Description) {
				g.Add(l)
			}
			g.Id(t.MethodName()).Params(
				jen.Id("ctx").Qual(contextPath, "Context"),
				jen.Id("in").Add(instance),
			).Params(step, jen.Error())
		}
	})
}

var missingText = map[string]string{"start": "starts one", "ignore": "is ignored", "poison": "goes to the poison queue"}
var existsText = map[string]string{"handle": "is handled", "ignore": "is ignored", "poison": "goes to the poison queue"}

func (e *emitter) genSagaConstructor(f *jen.File, s *model.Saga) {
	index := slices.IndexFunc(e.m.Topology.Consumers, func(tc topology.Consumer) bool { return tc.Name == s.QueueName() })
	for _, l := range docComment(fmt.Sprintf("%s returns saga %q: a consumer of the queue %s whose facts move the instances kept in store, with the prefetch, concurrency and retry ladder of %s. Start it with Run.", s.ConstructorName(), s.Name, s.Topology.Queue, names.TopologyVar)) {
		f.Add(l)
	}
	rule := func(r string) jen.Code { return jen.Qual(sagaPath, strings.ToUpper(r[:1])+r[1:]) }
	def := jen.Dict{
		jen.Id("Name"):          jen.Lit(s.Name),
		jen.Id("ValidateState"): jen.Id(schemaSetVar).Dot("Validator").Call(jen.Lit(s.StateLocation)),
	}
	if s.KeepCompleted > 0 {
		def[jen.Id("KeepCompleted")] = durationLit(s.KeepCompleted)
	}
	f.Func().Id(s.ConstructorName()).Params(
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
		jen.Id("store").Op("*").Qual(sagaPath, "Store"),
		jen.Id("h").Id(s.InterfaceName()),
		jen.Id("opts").Op("...").Qual(runtimePath, "ConsumerOption"),
	).Params(jen.Op("*").Qual(runtimePath, "Consumer"), jen.Error()).Block(
		jen.If(jen.Id("h").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual(errorsPath, "New").Call(jen.Lit(fmt.Sprintf("new saga %q: nil %s", s.Name, s.InterfaceName())))),
		),
		jen.Return(jen.Qual(sagaPath, "New").Call(
			jen.Id("conn"), jen.Id("store"),
			jen.Qual(sagaPath, "Definition").Values(def),
			jen.Id(names.TopologyVar).Dot("Consumers").Index(jen.Lit(index)),
			jen.Index().Qual(sagaPath, "Binding").Types(jen.Id(s.State.GoName)).ValuesFunc(func(g *jen.Group) {
				for _, sf := range s.Facts {
					g.Line().Qual(sagaPath, "On").Call(factQual(sf.Fact, sf.Fact.VarName()), jen.Lit(sf.Correlation), rule(sf.WhenMissing), rule(sf.WhenExists), jen.Id("h").Dot(sf.Fact.MethodName()))
				}
				for _, t := range s.Timeouts {
					g.Line().Qual(sagaPath, "OnTimeout").Call(jen.Lit(t.Name), jen.Id("h").Dot(t.MethodName()))
				}
				g.Line()
			}),
			jen.Id("opts").Op("..."),
		)),
	)
}
