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

// Import paths and names of the generated outbox writer. The package-level
// names are claimed in the names package, so no schema's type takes them.
const (
	outboxPath = "github.com/warrenbus/warren/runtime/outbox"
	sqldbPath  = "github.com/warrenbus/warren/runtime/sqldb"

	outboxWriterType   = names.OutboxWriterType
	outboxWriterNew    = names.OutboxWriterNew
	outboxRelayNew     = names.OutboxRelayNew
	outboxWriterPrefix = "Write" // + the fact's Go name: one method per fact
)

// genOutbox writes the typed outbox writer, one method per fact, each a
// call of outbox.Outbox.Write, which validates the payload; and a relay
// constructor bound to the package's events exchange, so that neither an
// exchange name nor a Fact value is typed by hand.
func (e *emitter) genOutbox(f *jen.File) {
	e.genOutboxType(f)
	for _, fact := range e.m.OwnFacts() {
		f.Line()
		e.genOutboxWrite(f, fact)
	}
	f.Line()
	e.genOutboxRelay(f, e.m.Exchanges.Events)
}

// outboxDirect is genOutbox with the methods of the facts and the relay
// constructor, which lists them, written directly (gofile), unless a fact
// is published in several versions.
func (e *emitter) outboxDirect(g *gofile) {
	facts := e.m.OwnFacts()
	if slices.ContainsFunc(facts, (*model.Fact).PublishesOlder) {
		g.ok = false
		return
	}
	g.jen(e.genOutboxType)
	for _, fact := range facts {
		name := outboxWriterPrefix + fact.GoName
		g.decl()
		g.doc(0, docLines(fmt.Sprintf("%s writes v in tx and returns its message id.", name), deprecated(fact.Deprecated)))
		g.line(0, "func (w *"+outboxWriterType+") "+name+"(ctx "+g.q(contextPath, "Context")+", tx "+g.q(sqldbPath, "Execer")+", v "+fact.Type.GoName+") (messageID string, err error) {")
		g.line(1, "return w.o.Write(ctx, tx, "+fact.VarName()+", &v)")
		g.line(0, "}")
	}
	events := e.m.Exchanges.Events
	g.decl()
	g.doc(0, docLines(outboxRelayDoc(events)))
	runtimeName := g.q(runtimePath, "")
	g.line(0, "func "+outboxRelayNew+"(db "+g.q(sqldbPath, "DB")+", conn *"+runtimeName+"Conn, cfg "+g.q(outboxPath, "RelayConfig")+", opts ..."+runtimeName+"PublisherOption) (*"+g.q(outboxPath, "Relay")+", error) {")
	g.line(1, "p, err := "+runtimeName+"NewPublisher(conn, "+quote(events)+", opts...)")
	g.line(1, "if err != nil {")
	g.line(2, "return nil, err")
	g.line(1, "}")
	g.line(1, "if cfg.Facts == nil {")
	var list strings.Builder
	for _, fact := range facts {
		for _, v := range fact.Versions() {
			if list.Len() > 0 {
				list.WriteString(", ")
			}
			list.WriteString(v.VarName())
		}
	}
	g.line(2, "cfg.Facts = []"+runtimeName+"Fact{"+list.String()+"}")
	g.line(1, "}")
	g.line(1, "return "+g.q(outboxPath, "NewRelayDB")+"(db, p, cfg)")
	g.line(0, "}")
}

// genOutboxType writes the OutboxWriter type, its constructor and the
// methods that are not a fact's.
func (e *emitter) genOutboxType(f *jen.File) {
	f.ImportName(outboxPath, "outbox")
	f.ImportName(sqldbPath, "sqldb")
	for _, c := range docComment(fmt.Sprintf("%s writes the facts of this package into a transactional outbox table, in the caller's database transaction, one method per fact. A relay made by %s publishes each fact once that transaction has committed, with the message id the method returned; if it rolls back, the fact is never published. Each method takes tx, the transaction of the change the fact reports (a *sql.Tx, or a pgx.Tx wrapped by pgxdb.Tx). Each payload is validated against its fact's schema first; an invalid one is an error, nothing is written and tx may still commit. An %s holds no connection and is safe for concurrent use.", outboxWriterType, outboxRelayNew, outboxWriterType)) {
		f.Add(c)
	}
	down := len(e.manualDowncasts()) > 0
	f.Type().Id(outboxWriterType).StructFunc(func(g *jen.Group) {
		g.Id("o").Op("*").Qual(outboxPath, "Outbox")
		if down {
			g.Id("down").Id(downcastersType)
		}
	})
	f.Line()
	doc := fmt.Sprintf("%s returns an %s writing to the table cfg names (see outbox.New). Create the table with the Migrate method of %s.Outbox, or apply outbox.MigrationSQL with your own migration tool.", outboxWriterNew, outboxWriterType, outboxWriterType)
	if down {
		doc += fmt.Sprintf(" down writes the older versions the publisher publishes, and so the writer writes, that warren cannot convert by itself (see %s).", downcastersType)
	}
	for _, c := range docComment(doc) {
		f.Add(c)
	}
	f.Func().Id(outboxWriterNew).ParamsFunc(func(g *jen.Group) {
		g.Id("cfg").Qual(outboxPath, "Config")
		if down {
			g.Id("down").Id(downcastersType)
		}
	}).Params(jen.Op("*").Id(outboxWriterType), jen.Error()).BlockFunc(func(g *jen.Group) {
		if down {
			g.If(jen.Id("down").Op("==").Nil()).Block(jen.Return(jen.Nil(), jen.Qual(errorsPath, "New").Call(jen.Lit("new outbox writer: nil "+downcastersType))))
		}
		g.List(jen.Id("o"), jen.Err()).Op(":=").Qual(outboxPath, "New").Call(jen.Id("cfg"))
		g.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
		vals := jen.Dict{jen.Id("o"): jen.Id("o")}
		if down {
			vals[jen.Id("down")] = jen.Id("down")
		}
		g.Return(jen.Op("&").Id(outboxWriterType).Values(vals), jen.Nil())
	})
	f.Line()
	for _, c := range docComment("Outbox returns the untyped outbox the writer writes with, for Migrate and Table.") {
		f.Add(c)
	}
	f.Func().Params(jen.Id("w").Op("*").Id(outboxWriterType)).Id("Outbox").Params().Op("*").Qual(outboxPath, "Outbox").Block(
		jen.Return(jen.Id("w").Dot("o")),
	)
	e.genOutboxSchedule(f)
}

// genOutboxSchedule writes In and At: views of the writer whose facts the
// relay publishes later, two methods per package and none per fact.
func (e *emitter) genOutboxSchedule(f *jen.File) {
	w := outboxWriterType
	f.Line()
	for _, c := range docComment(fmt.Sprintf("In returns an %s whose writes are due after d: each fact is validated and written now, in the caller's transaction, and the relay publishes it once d has passed; until then Cancel deletes it, by the id the write returned. A negative d is an error matching outbox.ErrSchedule. See outbox.Outbox.In.", w)) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("w").Op("*").Id(w)).Id("In").Params(jen.Id("d").Qual("time", "Duration")).Op("*").Id(w).Block(
		jen.Return(jen.Op("&").Id(w).Values(e.withWriter(jen.Id("w").Dot("o").Dot("In").Call(jen.Id("d"))))),
	)
	f.Line()
	for _, c := range docComment(fmt.Sprintf("At returns an %s whose writes are due at t, as In; a t that has passed is due at once. See outbox.Outbox.At.", w)) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("w").Op("*").Id(w)).Id("At").Params(jen.Id("t").Qual("time", "Time")).Op("*").Id(w).Block(
		jen.Return(jen.Op("&").Id(w).Values(e.withWriter(jen.Id("w").Dot("o").Dot("At").Call(jen.Id("t"))))),
	)
	f.Line()
	for _, c := range docComment("Cancel deletes, in tx, the scheduled facts with the given ids (as written through In or At) that the relay has not published yet, and returns how many it deleted: 0 for a fact already published. See outbox.Outbox.Cancel.") {
		f.Add(c)
	}
	f.Func().Params(jen.Id("w").Op("*").Id(w)).Id("Cancel").Params(
		jen.Id("ctx").Qual(contextPath, "Context"),
		jen.Id("tx").Qual(sqldbPath, "Execer"),
		jen.Id("ids").Op("...").String(),
	).Params(jen.Id("cancelled").Int64(), jen.Err().Error()).Block(
		jen.Return(jen.Id("w").Dot("o").Dot("Cancel").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id("ids").Op("..."))),
	)
}

// withWriter is the OutboxWriter literal of a derived outbox, keeping the
// downcasters.
func (e *emitter) withWriter(o jen.Code) jen.Dict {
	d := jen.Dict{jen.Id("o"): o}
	if len(e.manualDowncasts()) > 0 {
		d[jen.Id("down")] = jen.Id("w").Dot("down")
	}
	return d
}

func (e *emitter) genOutboxWrite(f *jen.File, fact *model.Fact) {
	name := outboxWriterPrefix + fact.GoName
	doc := fmt.Sprintf("%s writes v in tx and returns its message id.", name)
	if fact.PublishesOlder() {
		doc += fmt.Sprintf(" As the Publisher does, the relay publishes it in versions %s (warren.json \"versions\"), one message id for all (see outbox.Outbox.WriteVersions).", joinInts(fact.Publish))
	}
	for _, c := range docComment(
		doc,
		deprecated(fact.Deprecated),
	) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("w").Op("*").Id(outboxWriterType)).Id(name).Params(
		jen.Id("ctx").Qual(contextPath, "Context"),
		jen.Id("tx").Qual(sqldbPath, "Execer"),
		jen.Id("v").Id(fact.Type.GoName),
	).Params(jen.Id("messageID").String(), jen.Err().Error()).BlockFunc(func(g *jen.Group) {
		if fact.PublishesOlder() {
			down := func() *jen.Statement { return jen.Id("w").Dot("down") }
			copies := versionCopies(g, fact, down, "write", jen.Lit(""))
			g.Return(jen.Id("w").Dot("o").Dot("WriteVersions").Call(append([]jen.Code{jen.Id("ctx"), jen.Id("tx")}, copies...)...))
			return
		}
		g.Return(jen.Id("w").Dot("o").Dot("Write").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id(fact.VarName()), jen.Op("&").Id("v")))
	})
}

// joinInts renders versions for a sentence: "2 and 3".
func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, " and ")
}

func (e *emitter) genOutboxRelay(f *jen.File, events string) {
	for _, c := range docComment(outboxRelayDoc(events)) {
		f.Add(c)
	}
	var facts []jen.Code
	for _, fact := range e.m.OwnFacts() {
		for _, v := range fact.Versions() { // rows keep the version they were written in
			facts = append(facts, jen.Id(v.VarName()))
		}
	}
	f.Func().Id(outboxRelayNew).Params(
		jen.Id("db").Qual(sqldbPath, "DB"),
		jen.Id("conn").Op("*").Qual(runtimePath, "Conn"),
		jen.Id("cfg").Qual(outboxPath, "RelayConfig"),
		jen.Id("opts").Op("...").Qual(runtimePath, "PublisherOption"),
	).Params(jen.Op("*").Qual(outboxPath, "Relay"), jen.Error()).Block(
		jen.List(jen.Id("p"), jen.Err()).Op(":=").Qual(runtimePath, "NewPublisher").Call(jen.Id("conn"), jen.Lit(events), jen.Id("opts").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.If(jen.Id("cfg").Dot("Facts").Op("==").Nil()).Block(
			jen.Id("cfg").Dot("Facts").Op("=").Index().Qual(runtimePath, "Fact").Values(facts...),
		),
		jen.Return(jen.Qual(outboxPath, "NewRelayDB").Call(jen.Id("db"), jen.Id("p"), jen.Id("cfg"))),
	)
}

func outboxRelayDoc(events string) string {
	return fmt.Sprintf("%s returns a relay that publishes the outbox table of db to the events exchange %s over conn, validating every row against its fact's schema before it is sent (unless cfg.Facts is set). db is sqldb.FromSQL(db), or pgxdb.FromSQL(db) or pgxdb.FromPool(pool) on PostgreSQL, which wake the relay as soon as a row commits. opts configure its publisher as they do NewPublisher's.", outboxRelayNew, strconv.Quote(events))
}
