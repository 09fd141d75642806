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
	if direct := len(e.m.Topology.DirectStreams()) > 0; direct || len(e.m.Topology.StreamConsumers()) > 0 {
		// Stream consumers keep their offsets, and a Publisher writes
		// into a stream directly, through runtime/streamoffset, which
		// runtime does not import (its client's dependencies are heavy):
		// importing it here sets it as the default, so that users pass
		// nothing more to runtime.Dial.
		doc := "Stream consumers keep their offsets on the broker through package streamoffset, which imported sets itself as the default runtime.Config.StreamOffsets: users of this package need not pass it to runtime.Dial."
		if direct {
			doc = "Stream consumers keep their offsets on the broker, and publishers write into streams declared with publish \"direct\", through package streamoffset, which imported sets itself as the default runtime.Config.StreamOffsets: users of this package need not pass it to runtime.Dial."
		}
		for _, c := range docComment(doc) {
			f.Add(c)
		}
		f.Var().Id("_").Qual(runtimePath, "OffsetDialer").Op("=").Qual(streamoffsetPath, "Dial")
		f.Line()
	}
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
