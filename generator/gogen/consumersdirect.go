package gogen

import (
	"fmt"
	"strconv"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// consumersDirect is genConsumers written directly (gofile): each
// consumer's handler interface and constructor, one method and one route
// per fact. A consumer of another form (batched, a fact in several
// versions or upcast by hand, a fact whose types are reused from another
// package) leaves the file to genConsumers.
func (e *emitter) consumersDirect(g *gofile) {
	for _, c := range e.m.Consumers {
		if c.Batched || len(c.Facts) == 0 {
			g.ok = false
			return
		}
		for _, fact := range c.Facts {
			if len(fact.ManualUpcasts()) > 0 || len(fact.Older) > 0 || fact.GoPackage() != "" {
				g.ok = false
				return
			}
		}
	}
	rt := g.q(runtimePath, "")
	params := "(ctx " + g.q(contextPath, "Context") + ", d " + rt + "Delivery, fact "
	for _, c := range e.m.Consumers {
		g.decl()
		g.doc(0, docLines(handlerDoc(c)...))
		g.line(0, "type "+c.HandlerName()+" interface {")
		for i, fact := range c.Facts {
			if i > 0 {
				g.blank()
			}
			g.doc(1, docLines(fmt.Sprintf("%s handles each %s received.", fact.MethodName(), fact.GoName)))
			g.line(1, fact.MethodName()+params+fact.Type.GoName+") error")
		}
		g.line(0, "}")
		g.decl()
		g.doc(0, docLines(constructorDoc(c)))
		g.line(0, "func "+c.ConstructorName()+"(conn *"+rt+"Conn, h "+c.HandlerName()+", opts ..."+rt+"ConsumerOption) (*"+rt+"Consumer, error) {")
		g.line(1, "if h == nil {")
		g.line(2, "return nil, "+g.q(errorsPath, "New")+"("+quote(nilHandlerError(c))+")")
		g.line(1, "}")
		g.line(1, "return "+rt+"NewConsumer(conn, "+names.TopologyVar+".Consumers["+strconv.Itoa(e.topologyIndex(c))+"], []"+rt+"Route{")
		for _, fact := range c.Facts {
			eachRouteDirect(g, fact, params)
		}
		g.line(1, "}, opts...)")
		g.line(0, "}")
	}
}

// eachRouteDirect is eachRoute, an element of the routes' literal.
func eachRouteDirect(g *gofile, fact *model.Fact, params string) {
	t := fact.Type.GoName
	if len("func() any")+len("return new("+t+")") > 100 {
		g.ok = false // gofmt would break the literal's body: layout leaves it to go/format
		return
	}
	g.line(2, g.q(runtimePath, "HandleEach")+"("+fact.VarName()+", func() any { return new("+t+") }, func"+params+"any) error {")
	g.line(3, "return h."+fact.MethodName()+"(ctx, d, *fact.(*"+t+"))")
	g.line(2, "}),")
}
