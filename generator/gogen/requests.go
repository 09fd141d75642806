package gogen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

func hasRequests(m *model.Model) bool { return len(m.Requests) > 0 }

// genRequests writes the request side of the package: per request its key
// constant and runtime.Request descriptor; the Requester with one method
// per request; per responder its interface and constructor.
func (e *emitter) genRequests(f *jen.File) {
	exchange := e.m.Exchanges.Requests
	for _, c := range docComment(fmt.Sprintf("%s is the durable direct exchange requests go through (warren.json exchanges.requests).", names.RequestsExchangeVar)) {
		f.Add(c)
	}
	f.Const().Id(names.RequestsExchangeVar).Op("=").Lit(exchange)
	for _, r := range e.m.Requests {
		f.Line()
		e.genRequestDescriptor(f, r)
	}
	f.Line()
	e.genRequester(f)
	for _, rs := range e.m.Responders {
		f.Line()
		e.genResponder(f, rs)
	}
}

func (e *emitter) genRequestDescriptor(f *jen.File, r *model.Request) {
	for _, c := range docComment(fmt.Sprintf("%s is the routing key of %s requests.", r.KeyConst(), r.Type.GoName)) {
		f.Add(c)
	}
	f.Const().Id(r.KeyConst()).Op("=").Lit(r.Key)
	f.Line()
	for _, c := range docComment(fmt.Sprintf("%s describes %s requests to the runtime: routing key, and validation of the request (%s) and of its reply (%s).", r.VarName(), r.Key, r.Location(), r.ReplyLocation()), deprecated(r.Deprecated)) {
		f.Add(c)
	}
	f.Var().Id(r.VarName()).Op("=").Qual(runtimePath, "Request").Values(jen.Dict{
		jen.Id("Key"):           jen.Id(r.KeyConst()),
		jen.Id("Validate"):      jen.Id(schemaSetVar).Dot("Validator").Call(jen.Lit(r.Location())),
		jen.Id("ValidateReply"): jen.Id(schemaSetVar).Dot("Validator").Call(jen.Lit(r.ReplyLocation())),
	})
}

// genRequester writes the Requester: one method per request.
func (e *emitter) genRequester(f *jen.File) {
	t := names.RequesterType
	for _, c := range docComment(
		fmt.Sprintf("%s asks the requests of this package of their responders, one method per request, named by the request key's verb (its last word) followed by the words before it: pricing.quote -> QuotePricing. Each call validates the request before sending it and the reply when it arrives, and waits for the reply up to ctx's deadline, which travels with the request as its expiration. A %s is safe for concurrent use: any number of calls share one channel, each getting its own reply.", t, t),
		"Errors: runtime.ErrNoResponder, at once, when no responder queue receives the request; a *runtime.ReplyError (errors.As) when the responder answered with an error, runtime.IsPermanent telling whether asking again can help; ctx's error when the deadline passes first. Requests are never retried: the caller decides.",
	) {
		f.Add(c)
	}
	f.Type().Id(t).Struct(jen.Id("r").Op("*").Qual(runtimePath, "Requester"))
	f.Line()
	for _, c := range docComment(fmt.Sprintf("%s returns a %s over conn. opts adjust it, for example runtime.WithRequestTimeout for calls whose ctx has no deadline.", names.RequesterConstructor, t)) {
		f.Add(c)
	}
	f.Func().Id(names.RequesterConstructor).Params(
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
		jen.Id("opts").Op("...").Qual(runtimePath, "RequesterOption"),
	).Params(jen.Op("*").Id(t), jen.Error()).Block(
		jen.List(jen.Id("r"), jen.Err()).Op(":=").Qual(runtimePath, "NewRequester").Call(jen.Id("conn"), jen.Id(names.RequestsExchangeVar), jen.Id("opts").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Op("&").Id(t).Values(jen.Dict{jen.Id("r"): jen.Id("r")}), jen.Nil()),
	)
	f.Line()
	for _, c := range docComment("Dropped returns how many replies arrived after their caller had given up (or twice for one request): dropped, never handed to another call.") {
		f.Add(c)
	}
	f.Func().Params(jen.Id("r").Op("*").Id(t)).Id("Dropped").Params().Uint64().Block(
		jen.Return(jen.Id("r").Dot("r").Dot("Dropped").Call()),
	)
	f.Line()
	for _, c := range docComment("Close releases the requester's channel. Calls still waiting fail.") {
		f.Add(c)
	}
	f.Func().Params(jen.Id("r").Op("*").Id(t)).Id("Close").Params().Error().Block(
		jen.Return(jen.Id("r").Dot("r").Dot("Close").Call()),
	)
	for _, r := range e.m.Requests {
		f.Line()
		for _, c := range docComment(
			fmt.Sprintf("%s asks %s of responder %s and returns its %s.", r.MethodName(), r.Key, strconv.Quote(r.Responder.Name), r.Reply.GoName),
			r.Description, deprecated(r.Deprecated),
		) {
			f.Add(c)
		}
		f.Func().Params(jen.Id("r").Op("*").Id(t)).Id(r.MethodName()).Params(
			jen.Id("ctx").Qual(contextPath, "Context"),
			jen.Id("req").Id(r.Type.GoName),
		).Params(jen.Id(r.Reply.GoName), jen.Error()).Block(
			jen.Return(jen.Qual(runtimePath, "Call").Index(jen.Id(r.Reply.GoName)).Call(jen.Id("ctx"), jen.Id("r").Dot("r"), jen.Id(r.VarName()), jen.Op("&").Id("req"))),
		)
	}
}

// genResponder writes a responder's interface and its constructor.
func (e *emitter) genResponder(f *jen.File, rs *model.Responder) {
	iface := rs.InterfaceName()
	keys := make([]string, len(rs.Requests))
	for i, r := range rs.Requests {
		keys[i] = r.Key
	}
	for _, c := range docComment(
		fmt.Sprintf("%s answers the requests of responder %s: one method per request. %s binds it to the runtime.", iface, strconv.Quote(rs.Name), rs.ConstructorName()),
		rs.Description,
		"A method's reply goes back to the caller; so does its error, as a *runtime.ReplyError, permanent when marked with runtime.Permanent. A panic becomes an error reply. Requests are not retried, and a request whose caller's deadline has passed is not handed to a method; ctx carries that deadline. A request may be redelivered to another instance when one dies before replying (the same d.MessageID): runtime.WithGuard makes its work idempotent.",
		"Requests: "+strings.Join(keys, ", "),
	) {
		f.Add(c)
	}
	f.Type().Id(iface).InterfaceFunc(func(g *jen.Group) {
		for i, r := range rs.Requests {
			if i > 0 {
				g.Line()
			}
			for _, c := range docComment(fmt.Sprintf("%s answers each %s request (%s) with a %s.", r.MethodName(), r.Type.GoName, r.Key, r.Reply.GoName)) {
				g.Add(c)
			}
			g.Id(r.MethodName()).Params(
				jen.Id("ctx").Qual(contextPath, "Context"),
				jen.Id("d").Qual(runtimePath, "Delivery"),
				jen.Id("req").Id(r.Type.GoName),
			).Params(jen.Id(r.Reply.GoName), jen.Error())
		}
	})
	f.Line()
	idx := -1
	for i, tr := range e.m.Topology.Responders {
		if tr.Name == rs.Name {
			idx = i
		}
	}
	for _, c := range docComment(fmt.Sprintf("%s returns responder %s: it reads the queue %s and calls h for each request, with the prefetch and concurrency of %s. Start it with Run. opts adjust it, for example runtime.WithGuard or runtime.WithConcurrency.", rs.ConstructorName(), strconv.Quote(rs.Name), rs.Topology.Queue, names.TopologyVar)) {
		f.Add(c)
	}
	f.Func().Id(rs.ConstructorName()).Params(
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
		jen.Id("h").Id(iface),
		jen.Id("opts").Op("...").Qual(runtimePath, "ConsumerOption"),
	).Params(jen.Op("*").Qual(runtimePath, "Responder"), jen.Error()).Block(
		jen.If(jen.Id("h").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual(errorsPath, "New").Call(jen.Lit(fmt.Sprintf("new responder %q: nil %s", rs.Name, iface)))),
		),
		jen.Return(jen.Qual(runtimePath, "NewResponder").Call(
			jen.Id("conn"),
			jen.Id(names.TopologyVar).Dot("Responders").Index(jen.Lit(idx)),
			jen.Index().Qual(runtimePath, "Answer").ValuesFunc(func(g *jen.Group) {
				for _, r := range rs.Requests {
					g.Line().Qual(runtimePath, "Respond").Call(jen.Id(r.VarName()), jen.Id("h").Dot(r.MethodName()))
				}
				g.Line()
			}),
			jen.Id("opts").Op("..."),
		)),
	)
}
