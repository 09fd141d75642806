package gogen

import (
	"fmt"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// Facts with several versions side by side (model/versions.go): the
// generated casts between adjacent versions, the interfaces of the casts
// the user writes, and the chains that read an older version as the one
// a consumer's handler takes.

// downcastersType is the interface a Publisher needs when a fact's
// published older version is written by a hand-written downcast.
const downcastersType = "Downcasters"

// hasVersions reports whether a fact of the package, its own or an
// imported one, has older versions.
func hasVersions(m *model.Model) bool {
	for _, f := range m.Facts {
		if len(f.Older) > 0 {
			return true
		}
	}
	return false
}

// genVersions writes versions.go.
func (e *emitter) genVersions(f *jen.File) {
	for _, fact := range e.m.Facts {
		// An imported fact's upcasts are written here too: the
		// producer's, when its types are reused, are not exported.
		for _, v := range fact.Versions() {
			if c := v.Upcast; c != nil && c.Generated {
				genCast(f, c)
			}
		}
		for _, v := range fact.Versions() {
			if c := v.Downcast; c != nil && c.Generated && fact.Import == nil { // only a fact published here is cast down
				genCast(f, c)
			}
		}
	}
	done := map[string]bool{}
	for _, c := range e.m.Consumers {
		for _, fact := range c.Facts {
			if casts := fact.ManualUpcasts(); len(casts) > 0 && !done[fact.UpcasterName()] {
				done[fact.UpcasterName()] = true
				genCastInterface(f, fact.UpcasterName(), fmt.Sprintf("%s reads the older versions of %s (routing key %s) that warren cannot convert by itself as the newer ones: every handler of a consumer that reads %s implements it, so a missing upcaster does not compile. An error it returns sends the fact to the poison queue.", fact.UpcasterName(), fact.GoName, fact.RoutingKey, fact.GoName), casts)
			}
		}
	}
	if downs := e.manualDowncasts(); len(downs) > 0 {
		genCastInterface(f, downcastersType, fmt.Sprintf("%s writes the facts the %s publishes in an older version besides the newest (warren.json \"versions\") where warren cannot convert by itself; %s takes one, so a missing downcaster does not compile. An error it returns fails the publish before anything is sent.", downcastersType, names.PublisherType, names.PublisherConstructor), downs)
	}
}

// manualDowncasts returns the hand-written downcasts of every published fact.
func (e *emitter) manualDowncasts() []*model.Cast {
	var out []*model.Cast
	for _, fact := range e.m.OwnFacts() {
		out = append(out, fact.ManualDowncasts()...)
	}
	return out
}

func castFunc(c *model.Cast) string {
	if c.From.Version < c.To.Version {
		return "upcast" + c.From.GoName
	}
	return "downcast" + c.From.GoName
}

// genCast writes the function of a generated cast: field by field.
func genCast(f *jen.File, c *model.Cast) {
	verb := "reads"
	if c.From.Version > c.To.Version {
		verb = "writes"
	}
	for _, l := range docComment(fmt.Sprintf("%s %s version %d of %s as version %d, property by property.", castFunc(c), verb, c.From.Version, c.From.RoutingKey, c.To.Version)) {
		f.Add(l)
	}
	f.Func().Id(castFunc(c)).Params(jen.Id("v").Add(versionType(c.From))).Add(versionType(c.To)).BlockFunc(func(g *jen.Group) {
		g.Var().Id("n").Add(versionType(c.To))
		for _, s := range c.Steps {
			src := jen.Id("v").Dot(s.From.GoName)
			dst := jen.Id("n").Dot(s.To.GoName)
			switch {
			case s.Widen && s.From.IsPointer():
				g.If(src.Clone().Op("!=").Nil()).Block(
					jen.Id("x").Op(":=").Float64().Parens(jen.Op("*").Add(src)),
					dst.Op("=").Op("&").Id("x"),
				)
			case s.Pointer:
				val := jen.Code(src)
				if s.Widen {
					val = jen.Float64().Parens(src)
				}
				g.Block(jen.Id("x").Op(":=").Add(val), dst.Op("=").Op("&").Id("x"))
			case s.Widen:
				g.Add(dst.Op("=").Float64().Parens(src))
			default:
				g.Add(dst.Op("=").Add(src))
			}
		}
		if c.Extra {
			g.Id("n").Dot(model.ExtraField).Op("=").Id("v").Dot(model.ExtraField)
		}
		g.Return(jen.Id("n"))
	})
	f.Line()
}

// genCastInterface writes an interface of hand-written casts.
func genCastInterface(f *jen.File, name, doc string, casts []*model.Cast) {
	for _, l := range docComment(doc) {
		f.Add(l)
	}
	f.Type().Id(name).InterfaceFunc(func(g *jen.Group) {
		for i, c := range casts {
			if i > 0 {
				g.Line()
			}
			for _, l := range docComment(fmt.Sprintf("%s turns version %d of %s into version %d: %s.", c.Method(), c.From.Version, c.From.RoutingKey, c.To.Version, c.Why)) {
				g.Add(l)
			}
			g.Id(c.Method()).Params(jen.Id("v").Add(versionType(c.From))).Params(versionType(c.To), jen.Error())
		}
	})
	f.Line()
}

// castChain renders a func literal that turns a value of version from
// into one of version to, step by step through the versions between:
// generated casts are called, hand-written ones are methods of impl.
func castChain(vs []*model.Fact, from, to *model.Fact, impl jen.Code) jen.Code {
	step := 1
	if from.Version > to.Version {
		step = -1
	}
	byVersion := map[int]*model.Fact{}
	for _, v := range vs {
		byVersion[v.Version] = v
	}
	return jen.Func().Params(jen.Id("v").Add(versionType(from))).Params(versionType(to), jen.Error()).BlockFunc(func(g *jen.Group) {
		cur := "v"
		for n := from.Version + step; ; n += step {
			next := byVersion[n]
			c := next.Upcast
			if step < 0 {
				c = next.Downcast
			}
			out := "v" + strconv.Itoa(n)
			last := n == to.Version
			switch {
			case c.Generated && last:
				g.Return(jen.Id(castFunc(c)).Call(jen.Id(cur)), jen.Nil())
			case c.Generated:
				g.Id(out).Op(":=").Id(castFunc(c)).Call(jen.Id(cur))
			case last:
				g.Return(jen.Add(impl).Dot(c.Method()).Call(jen.Id(cur)))
			default:
				g.List(jen.Id(out), jen.Err()).Op(":=").Add(impl).Dot(c.Method()).Call(jen.Id(cur))
				g.If(jen.Err().Op("!=").Nil()).Block(
					jen.Var().Id("zero").Add(versionType(to)),
					jen.Return(jen.Id("zero"), jen.Err()),
				)
			}
			if last {
				return
			}
			cur = out
		}
	})
}

// versionedRoute is the route of a fact a consumer reads with its older
// versions: runtime.HandleVersions with an upcast chain per version.
func versionedRoute(fact *model.Fact) jen.Code {
	return jen.Qual(runtimePath, "HandleVersions").CallFunc(func(g *jen.Group) {
		g.Add(factQual(fact, fact.VarName()))
		g.Id("h").Dot(fact.MethodName())
		for _, o := range fact.Older {
			g.Line().Qual(runtimePath, "Upcast").Call(factQual(o, o.VarName()), castChain(fact.Versions(), o, fact, jen.Id("h")))
		}
	})
}

// versionType names the Go type of a version of a fact: declared here, or in
// the producer's package when an imported fact's types are reused.
func versionType(f *model.Fact) *jen.Statement { return factQual(f, f.Type.GoName) }
