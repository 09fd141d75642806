package gogen

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// Import paths the test kit uses besides the runtime's.
const (
	warrentestPath = "github.com/warrenbus/warren/runtime/warrentest"
	testingPath    = "testing"
)

// KitFile is the name of the test kit's file in its directory, KitDir.
const KitFile = "kit.go"

// KitDir returns the directory, below the generated package's, and the
// package name of the test kit of package pkg: pkg followed by "test", as
// net/http has net/http/httptest.
func KitDir(pkg string) string { return pkg + "test" }

// Kit renders the test kit of the package m generates, KitDir(m.Package)
// /KitFile: a package that wires the generated facts, consumers, responders
// and requester to an in-process bus (runtime/warrentest), one short method
// each, so that a service's tests drive its handlers through the real
// topology without a broker. The kit imports the generated package, so it
// needs its import path, importPath; it is a package of its own so that
// building the generated package for production never compiles it.
//
// The kit's identifiers are derived from the consumers' and responders'
// names; a directory whose names would collide in the kit (a consumer
// named "kit", say) is an error naming them, since the kit cannot be
// compiled.
func Kit(m *model.Model, importPath string) ([]byte, error) {
	if importPath == "" {
		return nil, fmt.Errorf("generate %s: the generated package's import path is needed", kitName(m))
	}
	k := &kitEmitter{m: m, pkg: importPath}
	if err := k.checkNames(); err != nil {
		return nil, fmt.Errorf("generate %s: %w", kitName(m), err)
	}
	newJen := func() *jen.File {
		f := jen.NewFile(KitDir(m.Package))
		f.NoFormat = true
		if path.Base(importPath) == m.Package {
			f.ImportName(importPath, m.Package)
		} else {
			f.ImportAlias(importPath, m.Package)
		}
		f.ImportName(runtimePath, "runtime")
		f.ImportName(warrentestPath, "warrentest")
		for _, imp := range m.Imports {
			if imp.Reused() && imp.GoPackageName != "" {
				f.ImportName(imp.GoPackage, imp.GoPackageName)
			}
		}
		return f
	}
	direct, ok := k.kitDirect(newJen)
	if ok && !VerifyLayout {
		return direct, nil
	}
	f := newJen()
	f.HeaderComment(GeneratedHeader)
	f.HeaderComment(commentLine("source: warren.json"))
	k.gen(f)
	out, err := formatFile(f, nil)
	if err != nil {
		return nil, fmt.Errorf("generate %s: %w", kitName(m), err)
	}
	if ok && !bytes.Equal(direct, out) {
		return nil, fmt.Errorf("generate %s: direct layout differs from jennifer's: %s", kitName(m), firstDifference(direct, out))
	}
	return out, nil
}

func kitName(m *model.Model) string { return path.Join(KitDir(m.Package), KitFile) }

// kitEmitter writes the kit of one model; pkg is the generated package's
// import path.
type kitEmitter struct {
	m   *model.Model
	pkg string
}

// dualPublish reports whether a fact of the package is published in
// several versions (warren.json "versions"): the kit then publishes
// through the package's Publisher, which casts down, and down reports
// whether that Publisher takes Downcasters.
func (k *kitEmitter) dualPublish() (dual, down bool) {
	for _, f := range k.m.OwnFacts() {
		dual = dual || f.PublishesOlder()
		down = down || len(f.ManualDowncasts()) > 0
	}
	return dual, down
}

// qual names a declaration of the generated package.
func (k *kitEmitter) qual(name string) *jen.Statement { return jen.Qual(k.pkg, name) }

// fact names a declaration of fact: in the generated package, or in the
// producer's when the fact's types are reused from it.
func (k *kitEmitter) fact(fact *model.Fact, name string) *jen.Statement {
	if pkg := fact.GoPackage(); pkg != "" {
		return jen.Qual(pkg, name)
	}
	return k.qual(name)
}

// The kit's own package-level names; the consumer-name constants must
// not take them.
const (
	kitType = "Kit"
	kitNew  = "New"
	kitRun  = "Run"
	kitWire = "wire"
	// kitPublished is the kit's generic Published: one function for every
	// fact, where a method per fact would be lines for each.
	kitPublished = "Published"
)

func consumerConst(c *model.Consumer) string   { return names.Exported(c.Name) }
func responderConst(r *model.Responder) string { return r.InterfaceName() }
func startConsumer(c *model.Consumer) string   { return "Start" + names.Exported(c.Name) }
func startResponder(r *model.Responder) string { return "Start" + r.InterfaceName() }

// requesterMethod is the Kit method that returns a requester.
const requesterMethod = "Requester"

// checkNames reports the kit identifiers that two declarations would take.
func (k *kitEmitter) checkNames() error {
	pkgLevel := map[string]string{kitType: "type " + kitType, kitNew: "func " + kitNew, kitRun: "func " + kitRun, kitPublished: "func " + kitPublished}
	methods := map[string]string{"Bus": "the embedded *warrentest.Bus"}
	var clashes []string
	claim := func(taken map[string]string, name, what string) {
		if prev, ok := taken[name]; ok {
			clashes = append(clashes, fmt.Sprintf("%s of %s is also %s", name, what, prev))
			return
		}
		taken[name] = what
	}
	for _, f := range k.m.Facts {
		claim(methods, f.PublishName(), "fact "+f.RoutingKey)
	}
	for _, c := range k.m.Consumers {
		what := "consumer " + strconv.Quote(c.Name)
		claim(pkgLevel, consumerConst(c), what)
		claim(methods, startConsumer(c), what)
	}
	for _, r := range k.m.Responders {
		what := "responder " + strconv.Quote(r.Name)
		claim(pkgLevel, responderConst(r), what)
		claim(methods, startResponder(r), what)
	}
	for _, s := range k.m.Sagas {
		what := "saga " + strconv.Quote(s.Name)
		claim(pkgLevel, s.InterfaceName(), what)
		claim(methods, "Start"+s.InterfaceName(), what)
	}
	if hasRequests(k.m) {
		claim(methods, requesterMethod, "the requester")
	}
	if len(clashes) == 0 {
		return nil
	}
	return fmt.Errorf("the test kit cannot name everything (rename in warren.json, or generate outside a Go module to go without the kit): %s", strings.Join(clashes, "; "))
}

func (k *kitEmitter) gen(f *jen.File) {
	k.genDoc(f)
	k.genHead(f)
	f.Line()
	k.genWire(f)
	k.genNames(f)
	for _, fact := range k.m.Facts {
		f.Line()
		k.genFact(f, fact)
	}
	k.genStarts(f)
}

// genHead writes the Kit type and its constructors New and Run.
func (k *kitEmitter) genHead(f *jen.File) {
	bus := jen.Op("*").Qual(warrentestPath, "Bus")
	opts := jen.Id("opts").Op("...").Qual(warrentestPath, "Option")
	for _, c := range docComment(fmt.Sprintf("%s is an in-process bus declared with %s.%s and knowing the facts of package %s: what its methods publish and start meets the same exchanges, queues, retry ladders and poison queues as in production. The methods of the embedded warrentest.Bus work on it as well: Idle to let everything settle (moving the virtual clock through retries and delays), Settle to run what is due now without moving the clock, Handled, Poisoned and Published to see what happened, Conn for what the kit does not wrap. Its Publish methods validate the fact and return its message id; an error fails the test (warrentest.TryPublish returns it).", kitType, k.m.Package, names.TopologyVar, k.m.Package)) {
		f.Add(c)
	}
	dual, down := k.dualPublish()
	f.Type().Id(kitType).StructFunc(func(g *jen.Group) {
		g.Add(bus.Clone())
		if dual {
			g.Id("pub").Op("*").Add(k.qual(names.PublisherType)) // publishes the facts of several versions, casting down
		}
	})
	downParam, downArg := k.downParam, k.downArg
	downDoc := ""
	if down {
		downDoc = fmt.Sprintf(" down casts the facts published in several versions down, as for %s.%s.", k.m.Package, names.PublisherConstructor)
	}
	f.Line()
	for _, c := range docComment(fmt.Sprintf("%s returns a %s for a test that runs in real time. It is torn down when the test ends.", kitNew, kitType) + downDoc) {
		f.Add(c)
	}
	f.Func().Id(kitNew).ParamsFunc(func(g *jen.Group) {
		g.Id("t").Qual(testingPath, "TB")
		downParam(g)
		g.Add(opts.Clone())
	}).Op("*").Id(kitType).Block(
		jen.Id("t").Dot("Helper").Call(),
		jen.Return(jen.Id(kitWire).CallFunc(func(g *jen.Group) {
			g.Qual(warrentestPath, "New").Call(jen.Id("t"), k.qual(names.TopologyVar), jen.Id("opts").Op("..."))
			downArg(g)
		})),
	)
	f.Line()
	for _, c := range docComment(fmt.Sprintf("%s runs f with a %s in virtual time (a testing/synctest bubble): retry delays and timeouts pass at once, and time.Sleep returns when everything else is idle.", kitRun, kitType) + downDoc) {
		f.Add(c)
	}
	f.Func().Id(kitRun).ParamsFunc(func(g *jen.Group) {
		g.Id("t").Op("*").Qual(testingPath, "T")
		downParam(g)
		g.Id("f").Func().Params(jen.Id("t").Op("*").Qual(testingPath, "T"), jen.Id("k").Op("*").Id(kitType))
		g.Add(opts.Clone())
	}).Block(
		jen.Id("t").Dot("Helper").Call(),
		jen.Qual(warrentestPath, "Run").Call(
			jen.Id("t"), k.qual(names.TopologyVar),
			jen.Func().Params(jen.Id("t").Op("*").Qual(testingPath, "T"), jen.Id("b").Add(bus.Clone())).Block(
				jen.Id("f").Call(jen.Id("t"), jen.Id(kitWire).CallFunc(func(g *jen.Group) {
					g.Id("b")
					downArg(g)
				})),
			),
			jen.Id("opts").Op("..."),
		),
	)
	f.Line()
	example := ""
	if len(k.m.Facts) > 0 {
		example = fmt.Sprintf(" (for example %s[%s](k))", kitPublished, k.factTypeText(k.m.Facts[0]))
	}
	for _, c := range docComment(fmt.Sprintf("%s returns the facts of Go type T published on k so far, in order, decoded%s. The embedded Bus's own %s method lists every fact published, undecoded.", kitPublished, example, kitPublished)) {
		f.Add(c)
	}
	f.Func().Id(kitPublished).Types(jen.Id("T").Any()).Params(jen.Id("k").Op("*").Id(kitType)).Index().Id("T").Block(
		jen.Return(jen.Qual(warrentestPath, "Published").Index(jen.Id("T")).Call(jen.Id("k").Dot("Bus"))),
	)
}

// downParam and downArg pass the Downcasters along when the package's
// Publisher takes them: a kit without them does not compile.
func (k *kitEmitter) downParam(g *jen.Group) {
	if _, down := k.dualPublish(); down {
		g.Id("down").Add(k.qual(downcastersType))
	}
}

func (k *kitEmitter) downArg(g *jen.Group) {
	if _, down := k.dualPublish(); down {
		g.Id("down")
	}
}

// genWire writes wire, which registers the Go type of every fact.
func (k *kitEmitter) genWire(f *jen.File) {
	bus := jen.Op("*").Qual(warrentestPath, "Bus")
	dual, _ := k.dualPublish()
	downParam, downArg := k.downParam, k.downArg
	wireDoc := "wire tells b the Go type of each fact, so that Published can decode them."
	if dual {
		wireDoc += fmt.Sprintf(" It makes the %s that publishes the facts of several versions.", names.PublisherType)
	}
	for _, c := range docComment(wireDoc) {
		f.Add(c)
	}
	f.Func().Id(kitWire).ParamsFunc(func(g *jen.Group) {
		g.Id("b").Add(bus.Clone())
		downParam(g)
	}).Op("*").Id(kitType).BlockFunc(func(g *jen.Group) {
		for _, fact := range k.m.Facts {
			g.Qual(warrentestPath, "Register").Index(k.fact(fact, fact.Type.GoName)).Call(jen.Id("b"), k.fact(fact, fact.VarName()))
		}
		if !dual {
			g.Return(jen.Op("&").Id(kitType).Values(jen.Id("b")))
			return
		}
		g.List(jen.Id("p"), jen.Err()).Op(":=").Add(k.qual(names.PublisherConstructor)).CallFunc(func(g *jen.Group) {
			g.Id("b").Dot("Conn").Call()
			downArg(g)
		})
		g.If(jen.Err().Op("!=").Nil()).Block(
			jen.Id("b").Dot("T").Call().Dot("Fatalf").Call(jen.Lit(KitDir(k.m.Package)+": publisher: %v"), jen.Err()),
		)
		g.Return(jen.Op("&").Id(kitType).Values(jen.Dict{jen.Id("Bus"): jen.Id("b"), jen.Id("pub"): jen.Id("p")}))
	})
}

// genNames writes the constants that name the consumers, responders and
// sagas' queues.
func (k *kitEmitter) genNames(f *jen.File) {
	if len(k.m.Consumers)+len(k.m.Responders)+len(k.m.Sagas) > 0 {
		f.Line()
		what := "consumers and responders"
		if len(k.m.Sagas) > 0 {
			what = "consumers, responders and sagas' queues"
		}
		for _, c := range docComment("The names of the " + what + ", for the methods of warrentest.Bus that take one (Calls, Handled, Poisoned, ...): a typo is a compile error rather than a failing test.") {
			f.Add(c)
		}
		f.Const().DefsFunc(func(g *jen.Group) {
			for _, c := range k.m.Consumers {
				g.Id(consumerConst(c)).Op("=").Lit(c.Name)
			}
			for _, r := range k.m.Responders {
				g.Id(responderConst(r)).Op("=").Lit(r.Name)
			}
			for _, s := range k.m.Sagas {
				g.Id(s.InterfaceName()).Op("=").Lit(s.QueueName())
			}
		})
	}
}

// genStarts writes the methods that start the consumers, responders and
// sagas, and the requester's.
func (k *kitEmitter) genStarts(f *jen.File) {
	for _, c := range k.m.Consumers {
		f.Line()
		k.genConsumer(f, c)
	}
	for _, r := range k.m.Responders {
		f.Line()
		k.genResponder(f, r)
	}
	for _, s := range k.m.Sagas {
		f.Line()
		k.genSaga(f, s)
	}
	if hasRequests(k.m) {
		f.Line()
		k.genRequester(f)
	}
}

// genDoc writes the package doc, with an example built from the first
// consumer and a fact it receives, or the first fact, so that it names
// what this package has.
func (k *kitEmitter) genDoc(f *jen.File) {
	for _, l := range docLines(k.docParagraphs()...) {
		f.PackageComment(commentLine(l))
	}
}

// factTypeText is how a test names fact's Go type: qualified by the
// generated package, or by the producer's whose types it reuses.
func (k *kitEmitter) factTypeText(fact *model.Fact) string {
	if fact.GoPackage() == "" {
		return k.m.Package + "." + fact.Type.GoName
	}
	if fact.Import.GoPackageName != "" {
		return fact.Import.GoPackageName + "." + fact.Type.GoName
	}
	return path.Base(fact.GoPackage()) + "." + fact.Type.GoName
}

// docParagraphs are the package doc's paragraphs, the example an indented
// block of lines.
func (k *kitEmitter) docParagraphs() []string {
	pkg, kit := k.m.Package, KitDir(k.m.Package)
	paras := []string{
		fmt.Sprintf("Package %s runs the facts, consumers and responders of package %s on an in-process bus (runtime/warrentest), for tests: no broker, and the same topology, so a failing handler walks its real retry ladder into its poison queue. Start the handlers under test, publish facts, let the bus settle, and check what happened. Run does it in virtual time, so that retry delays of minutes pass at once; New in real time, for tests that wait on something outside the process. Idle lets the bus settle: it runs until nothing is left to do, moving the virtual clock to each retry or delayed fact; Settle runs only what is due now and leaves the clock where it is, for a test that then advances it (Advance) to just short of a timeout.", kit, pkg),
		fmt.Sprintf("warren generate writes this package beside %s, from the same schema directory; it is a package of its own so that building %s for production never compiles it.", pkg, pkg),
	}
	downExample := ""
	if _, down := k.dualPublish(); down {
		downExample = "downcasters{}, " // the Downcasters of the facts published in several versions
	}
	var c *model.Consumer
	var fact *model.Fact
	if len(k.m.Consumers) > 0 && len(k.m.Consumers[0].Facts) > 0 {
		c = k.m.Consumers[0]
		fact = c.Facts[0]
	} else if len(k.m.Facts) > 0 {
		fact = k.m.Facts[0]
	}
	if fact != nil {
		typ := k.factTypeText(fact)
		example := []string{
			"For example:",
			"",
			"\tfunc TestHandler(t *testing.T) {",
			fmt.Sprintf("\t\t%s.Run(t, %sfunc(t *testing.T, k *%s.Kit) {", kit, downExample, kit),
		}
		if c != nil {
			example = append(example, fmt.Sprintf("\t\t\tk.%s(handler{}) // the %s under test", startConsumer(c), c.HandlerName()))
		}
		example = append(example,
			fmt.Sprintf("\t\t\tk.%s(%s{ /* ... */ })", fact.PublishName(), typ),
			"\t\t\tk.Idle() // handled, retried or poisoned: at once, in virtual time",
		)
		if c != nil {
			example = append(example,
				fmt.Sprintf("\t\t\tif p := k.Poisoned(%s.%s); len(p) > 0 {", kit, consumerConst(c)),
				"\t\t\t\tt.Errorf(\"poisoned: %v\", p)",
				"\t\t\t}",
			)
		} else {
			example = append(example, fmt.Sprintf("\t\t\tt.Log(%s.%s[%s](k))", kit, kitPublished, typ))
		}
		example = append(example, "\t\t})", "\t}")
		paras = append(paras, strings.Join(example, "\n"))
	}
	return paras
}

func (k *kitEmitter) genFact(f *jen.File, fact *model.Fact) {
	t := k.fact(fact, fact.Type.GoName)
	if fact.Import == nil && fact.PublishesOlder() {
		k.genDualPublish(f, fact)
	} else {
		for _, c := range docComment(fmt.Sprintf("%s publishes v; an error fails the test.", fact.PublishName())) {
			f.Add(c)
		}
		f.Func().Params(jen.Id("k").Op("*").Id(kitType)).Id(fact.PublishName()).Params(jen.Id("v").Add(t.Clone())).String().Block(
			jen.Id("k").Dot("T").Call().Dot("Helper").Call(),
			jen.Return(jen.Qual(warrentestPath, "Publish").Call(jen.Id("k").Dot("Bus"), k.fact(fact, fact.VarName()), jen.Op("&").Id("v"))),
		)
	}
}

// genDualPublish writes the publish method of a fact published in several
// versions: through the package's Publisher, as in production, so that
// every listed version goes out with one message id.
func (k *kitEmitter) genDualPublish(f *jen.File, fact *model.Fact) {
	for _, c := range docComment(fmt.Sprintf("%s validates v and publishes it with routing key %s in versions %s (warren.json \"versions\"), cast down and with one message id, as %s.%s does, and returns its message id. An error fails the test.", fact.PublishName(), fact.RoutingKey, joinInts(fact.Publish), names.PublisherType, fact.PublishName())) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("k").Op("*").Id(kitType)).Id(fact.PublishName()).Params(jen.Id("v").Add(k.fact(fact, fact.Type.GoName))).String().Block(
		jen.Id("k").Dot("T").Call().Dot("Helper").Call(),
		jen.List(jen.Id("id"), jen.Err()).Op(":=").Id("k").Dot("pub").Dot(fact.PublishName()).Call(jen.Id("k").Dot("Context").Call(), jen.Id("v")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Id("k").Dot("T").Call().Dot("Fatalf").Call(jen.Lit("warrentest: publish "+fact.RoutingKey+": %v"), jen.Err()),
		),
		jen.Return(jen.Id("id")),
	)
}

// genStart writes a Start method: build with the generated constructor
// on the kit's connection and hand the result to Bus.Start, which fails
// the test on a constructor error or an early end of Run.
func (k *kitEmitter) genStart(f *jen.File, method, handler, constructor, name string, doc string) {
	for _, c := range docComment(doc) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("k").Op("*").Id(kitType)).Id(method).Params(
		jen.Id("h").Add(k.qual(handler)),
		jen.Id("opts").Op("...").Qual(runtimePath, "ConsumerOption"),
	).Block(
		jen.Id("k").Dot("T").Call().Dot("Helper").Call(),
		jen.List(jen.Id("c"), jen.Err()).Op(":=").Add(k.qual(constructor)).Call(jen.Id("k").Dot("Conn").Call(), jen.Id("h"), jen.Id("opts").Op("...")),
		jen.Id("k").Dot("Start").Call(jen.Id(name), jen.Id("c"), jen.Err()),
	)
}

func (k *kitEmitter) genConsumer(f *jen.File, c *model.Consumer) {
	k.genStart(f, startConsumer(c), c.HandlerName(), c.ConstructorName(), consumerConst(c),
		fmt.Sprintf("%s runs consumer %q with h until the test ends, as %s.%s builds it; opts adjust it as they do there. It returns once the consumer %s, so that a fact published next reaches it. A consumer that fails to start, or stops early, fails the test.", startConsumer(c), c.Name, k.m.Package, c.ConstructorName(), consumerReads(c)))
}

// consumerReads says what a consumer reads once its Start returns
// (warrentest.Bus.Start waits for it).
func consumerReads(c *model.Consumer) string {
	t := c.Topology
	switch {
	case t != nil && t.Stream != "" && len(t.Partitions) > 0:
		return fmt.Sprintf("has joined the consumer group of super stream %q", t.Stream)
	case t != nil && t.Stream != "":
		return fmt.Sprintf("reads stream %q from its start (a start \"next\" or \"last\" is fixed then)", t.Stream)
	case c.Ordered:
		return "reads its shard queues"
	}
	return "reads its queue"
}

func (k *kitEmitter) genResponder(f *jen.File, r *model.Responder) {
	k.genStart(f, startResponder(r), r.InterfaceName(), r.ConstructorName(), responderConst(r),
		fmt.Sprintf("%s runs responder %q with h until the test ends, as %s.%s builds it. It returns once the responder reads its queue, so that a request made next reaches it. A responder that fails to start, or stops early, fails the test.", startResponder(r), r.Name, k.m.Package, r.ConstructorName()))
}

func (k *kitEmitter) genRequester(f *jen.File) {
	for _, c := range docComment(fmt.Sprintf("%s returns a %s.%s on the bus; an error fails the test.", requesterMethod, k.m.Package, names.RequesterType)) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("k").Op("*").Id(kitType)).Id(requesterMethod).Params(
		jen.Id("opts").Op("...").Qual(runtimePath, "RequesterOption"),
	).Op("*").Add(k.qual(names.RequesterType)).Block(
		jen.Id("k").Dot("T").Call().Dot("Helper").Call(),
		jen.List(jen.Id("r"), jen.Err()).Op(":=").Add(k.qual(names.RequesterConstructor)).Call(jen.Id("k").Dot("Conn").Call(), jen.Id("opts").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Id("k").Dot("T").Call().Dot("Fatalf").Call(jen.Lit("new requester: %v"), jen.Err()),
		),
		jen.Return(jen.Id("r")),
	)
}

// genSaga writes Start<Saga>: the saga's consumer on the bus, its
// instances kept by store (SQLite, say, for a test in virtual time).
func (k *kitEmitter) genSaga(f *jen.File, s *model.Saga) {
	for _, c := range docComment(fmt.Sprintf("Start%s runs saga %q with h until the test ends, as %s.%s builds it, its instances kept in store; opts adjust it as they do there. It returns once the saga reads its queue, so that a fact published next reaches it. Timeouts and published facts leave through the outbox: start a relay (%s.NewOutboxRelay) too.", s.InterfaceName(), s.Name, k.m.Package, s.ConstructorName(), k.m.Package)) {
		f.Add(c)
	}
	f.Func().Params(jen.Id("k").Op("*").Id(kitType)).Id("Start"+s.InterfaceName()).Params(
		jen.Id("store").Op("*").Qual(sagaPath, "Store"),
		jen.Id("h").Add(k.qual(s.InterfaceName())),
		jen.Id("opts").Op("...").Qual(runtimePath, "ConsumerOption"),
	).Block(
		jen.Id("k").Dot("T").Call().Dot("Helper").Call(),
		jen.List(jen.Id("c"), jen.Id("err")).Op(":=").Add(k.qual(s.ConstructorName())).Call(jen.Id("k").Dot("Conn").Call(), jen.Id("store"), jen.Id("h"), jen.Id("opts").Op("...")),
		jen.Id("k").Dot("Start").Call(jen.Id(s.InterfaceName()), jen.Id("c"), jen.Id("err")),
	)
}
