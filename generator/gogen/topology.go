package gogen

import (
	"reflect"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/names"
)

// genTopology writes the package's topology as data, and Declare.
func (e *emitter) genTopology(f *jen.File) {
	for _, c := range docComment(
		names.TopologyVar+" is the broker topology of this package, built from warren.json: the events, retry and dead exchanges; per consumer its poison queue, work queue and delay queues with their arguments; the bindings; and each consumer's retry ladder and limits. Queue arguments are derived from these fields by topology.Queue.Arguments.",
		"Pass &"+names.TopologyVar+" as runtime.Config.Topology to have it declared on connect and again on every reconnect, or call "+names.DeclareFunc+".",
	) {
		f.Add(c)
	}
	f.Var().Id(names.TopologyVar).Op("=").Add(valueLit(reflect.ValueOf(e.m.Topology)))
	f.Line()
	for _, c := range docComment(names.DeclareFunc + " declares " + names.TopologyVar + " over conn: exchanges, then queues, then bindings. What already exists as declared is left unchanged, so it is safe to repeat; a queue or exchange that exists with other arguments is reported as a *runtime.MismatchError naming it and the argument.") {
		f.Add(c)
	}
	f.Func().Id(names.DeclareFunc).Params(
		jen.Id("ctx").Qual(contextPath, "Context"),
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
	).Error().Block(
		jen.Return(jen.Id("conn").Dot("Declare").Call(jen.Id("ctx"), jen.Id(names.TopologyVar))),
	)
}
