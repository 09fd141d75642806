package gogen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// genPublisher writes the typed publisher: one method per fact, each a
// call of runtime.Publisher.Publish, which validates the payload.
func (e *emitter) genPublisher(f *jen.File) {
	e.genPublisherType(f)
	for _, fact := range e.m.OwnFacts() {
		f.Line()
		e.genPublish(f, fact)
		f.Line()
		e.genPublishAsync(f, fact)
	}
}

// publisherDirect is genPublisher with the methods of the facts written
// directly (gofile), unless a fact is published in several versions.
func (e *emitter) publisherDirect(g *gofile) {
	facts := e.m.OwnFacts()
	if slices.ContainsFunc(facts, (*model.Fact).PublishesOlder) {
		g.ok = false
		return
	}
	g.jen(e.genPublisherType)
	recv := "func (p *" + names.PublisherType + ") "
	for _, fact := range facts {
		params := "(ctx " + g.q(contextPath, "Context") + ", v " + fact.Type.GoName + ")"
		g.decl()
		g.doc(0, docLines(fmt.Sprintf("%s publishes v and waits for the confirm.", fact.PublishName()), deprecated(fact.Deprecated)))
		g.line(0, recv+fact.PublishName()+params+" (messageID string, err error) {")
		g.line(1, "return p.p.Publish(ctx, "+fact.VarName()+", &v)")
		g.line(0, "}")
		name := fact.PublishName() + "Async"
		g.decl()
		g.doc(0, docLines(fmt.Sprintf("%s publishes v; Wait reports the confirm.", name), deprecated(fact.Deprecated)))
		g.line(0, recv+name+params+" (*"+g.q(runtimePath, "Pending")+", error) {")
		g.line(1, "return p.p.PublishAsync(ctx, "+fact.VarName()+", &v)")
		g.line(0, "}")
	}
}

// genPublisherType writes the Publisher type, its constructor and the
// methods that are not a fact's.
func (e *emitter) genPublisherType(f *jen.File) {
	events := e.m.Exchanges.Events
	for _, c := range docComment(fmt.Sprintf("%s publishes the facts of this package to the events exchange %s, one method per fact. Each payload is validated against its fact's schema before anything is sent, and each call returns once the broker has confirmed the message. A %s is safe for concurrent use: calls are pipelined on one channel. While the connection is down, calls wait for it up to their ctx's deadline.", names.PublisherType, strconv.Quote(events), names.PublisherType)) {
		f.Add(c)
	}
	down := len(e.manualDowncasts()) > 0
	f.Type().Id(names.PublisherType).StructFunc(func(g *jen.Group) {
		g.Id("p").Op("*").Qual(runtimePath, "Publisher")
		if down {
			g.Id("down").Id(downcastersType)
		}
	})
	f.Line()
	doc := fmt.Sprintf("%s returns a %s over conn. Publishing a fact that no queue is bound to is an error matching runtime.ErrUnroutable, unless opts include runtime.AllowUnroutable.", names.PublisherConstructor, names.PublisherType)
	if down {
		doc += fmt.Sprintf(" down writes the older versions the publisher publishes that warren cannot convert by itself (see %s).", downcastersType)
	}
	for _, c := range docComment(doc) {
		f.Add(c)
	}
	f.Func().Id(names.PublisherConstructor).ParamsFunc(func(g *jen.Group) {
		g.Id("conn").Op("*").Qual(runtimePath, "Conn")
		if down {
			g.Id("down").Id(downcastersType)
		}
		g.Id("opts").Op("...").Qual(runtimePath, "PublisherOption")
	}).Params(jen.Op("*").Id(names.PublisherType), jen.Error()).BlockFunc(func(g *jen.Group) {
		if down {
			g.If(jen.Id("down").Op("==").Nil()).Block(jen.Return(jen.Nil(), jen.Qual(errorsPath, "New").Call(jen.Lit("new publisher: nil "+downcastersType))))
		}
		g.List(jen.Id("p"), jen.Err()).Op(":=").Qual(runtimePath, "NewPublisher").Call(jen.Id("conn"), jen.Lit(events), jen.Id("opts").Op("..."))
		g.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
		vals := jen.Dict{jen.Id("p"): jen.Id("p")}
		if down {
			vals[jen.Id("down")] = jen.Id("down")
		}
		g.Return(jen.Op("&").Id(names.PublisherType).Values(vals), jen.Nil())
	})
	f.Line()
	for _, c := range docComment("Close releases the publisher's channel. Call it once no publish is in flight.") {
		f.Add(c)
	}
	f.Func().Params(jen.Id("p").Op("*").Id(names.PublisherType)).Id("Close").Params().Error().Block(
		jen.Return(jen.Id("p").Dot("p").Dot("Close").Call()),
	)
	if e.m.Topology.Delay.Enabled() {
		e.genDelayed(f)
	}
}

// genPublishAsync writes the pipelined form of a fact's publish method, so
// that one goroutine can keep many confirms in flight.
func (e *emitter) genPublishAsync(f *jen.File, fact *model.Fact) {
	name := fact.PublishName() + "Async"
	for _, c := range docComment(
		fmt.Sprintf("%s publishes v; Wait reports the confirm.", name),
		deprecated(fact.Deprecated),
	) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("p").Op("*").Id(names.PublisherType)).Id(name).Params(
		jen.Id("ctx").Qual(contextPath, "Context"),
		jen.Id("v").Id(fact.Type.GoName),
	).Params(jen.Op("*").Qual(runtimePath, "Pending"), jen.Error()).BlockFunc(func(g *jen.Group) {
		if fact.PublishesOlder() {
			publishVersions(g, fact, "PublishVersionsAsync")
			return
		}
		g.Return(jen.Id("p").Dot("p").Dot("PublishAsync").Call(jen.Id("ctx"), jen.Id(fact.VarName()), jen.Op("&").Id("v")))
	})
}

func (e *emitter) genPublish(f *jen.File, fact *model.Fact) {
	for _, c := range docComment(
		fmt.Sprintf("%s publishes v and waits for the confirm.", fact.PublishName()),
		deprecated(fact.Deprecated),
	) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("p").Op("*").Id(names.PublisherType)).Id(fact.PublishName()).Params(
		jen.Id("ctx").Qual(contextPath, "Context"),
		jen.Id("v").Id(fact.Type.GoName),
	).Params(jen.Id("messageID").String(), jen.Err().Error()).BlockFunc(func(g *jen.Group) {
		if fact.PublishesOlder() {
			publishVersions(g, fact, "PublishVersions")
			return
		}
		g.Return(jen.Id("p").Dot("p").Dot("Publish").Call(jen.Id("ctx"), jen.Id(fact.VarName()), jen.Op("&").Id("v")))
	})
}

// genDelayed writes In and At, the two methods that publish any fact of
// the package later through the delay levels (warren.json "delayedFacts").
func (e *emitter) genDelayed(f *jen.File) {
	pub := names.PublisherType
	f.Line()
	for _, c := range docComment(fmt.Sprintf("In returns a %s whose publishes are due after d: each fact is validated now and held by the broker in the delay levels until it is due, then reaches the consumers it would reach if published then. d == 0 publishes now; a negative d or one beyond topology.MaxDelay is an error matching runtime.ErrDelay. See runtime.Publisher.In.", pub)) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("p").Op("*").Id(pub)).Id("In").Params(jen.Id("d").Qual("time", "Duration")).Op("*").Id(pub).Block(
		jen.Return(jen.Op("&").Id(pub).Values(e.withPublisher(jen.Id("p").Dot("p").Dot("In").Call(jen.Id("d"))))),
	)
	f.Line()
	for _, c := range docComment(fmt.Sprintf("At returns a %s whose publishes are due at t, as In with the time left until t; a t that has passed publishes now. See runtime.Publisher.At.", pub)) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("p").Op("*").Id(pub)).Id("At").Params(jen.Id("t").Qual("time", "Time")).Op("*").Id(pub).Block(
		jen.Return(jen.Op("&").Id(pub).Values(e.withPublisher(jen.Id("p").Dot("p").Dot("At").Call(jen.Id("t"))))),
	)
}

// withPublisher is the Publisher literal of a derived runtime publisher,
// keeping the downcasters.
func (e *emitter) withPublisher(p jen.Code) jen.Dict {
	d := jen.Dict{jen.Id("p"): p}
	if len(e.manualDowncasts()) > 0 {
		d[jen.Id("down")] = jen.Id("p").Dot("down")
	}
	return d
}

// publishVersions writes the body of the publish method of a fact
// published in several versions (warren.json "versions"): v, and v cast
// down to each older version, as one fact.
func publishVersions(g *jen.Group, fact *model.Fact, call string) {
	down := func() *jen.Statement { return jen.Id("p").Dot("down") }
	copies := versionCopies(g, fact, down, "publish", zeroOf(call))
	g.Return(jen.Id("p").Dot("p").Dot(call).Call(append([]jen.Code{jen.Id("ctx")}, copies...)...))
}

// versionCopies writes into g the casts of v down to each older version
// the publisher publishes, and returns the runtime.Copy of each version,
// newest first. down is the downcasters' expression; a failed cast
// returns zero and an error that starts with verb.
func versionCopies(g *jen.Group, fact *model.Fact, down func() *jen.Statement, verb string, zero jen.Code) []jen.Code {
	var copies []jen.Code
	vs := fact.Versions()
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		if !slices.Contains(fact.Publish, v.Version) {
			continue
		}
		payload := jen.Id("v")
		if v != fact {
			name := "v" + strconv.Itoa(v.Version)
			payload = jen.Id(name)
			if c := v.Downcast; c.Generated && c.From == fact {
				g.Id(name).Op(":=").Id(castFunc(c)).Call(jen.Id("v"))
				copies = append(copies, jen.Qual(runtimePath, "Copy").Values(jen.Dict{jen.Id("Fact"): jen.Id(v.VarName()), jen.Id("Payload"): jen.Op("&").Add(payload)}))
				continue
			}
			cast := castChain(vs, fact, v, down())
			if c := v.Downcast; c.From == fact {
				cast = down().Dot(c.Method())
			}
			g.List(jen.Id(name), jen.Err()).Op(":=").Add(cast).Call(jen.Id("v"))
			g.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.List(zero, jen.Qual(fmtPath, "Errorf").Call(jen.Lit(fmt.Sprintf("%s %s version %d: %%w", verb, fact.RoutingKey, v.Version)), jen.Err()))))
		}
		copies = append(copies, jen.Qual(runtimePath, "Copy").Values(jen.Dict{jen.Id("Fact"): jen.Id(v.VarName()), jen.Id("Payload"): jen.Op("&").Add(payload)}))
	}
	return copies
}

func zeroOf(call string) jen.Code {
	if strings.HasSuffix(call, "Async") {
		return jen.Nil()
	}
	return jen.Lit("")
}
